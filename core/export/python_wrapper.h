// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the wrappers of a Python model share, for Triton's Python backend,
// TorchServe and Ray Serve: the module's opening (imports, and constants
// naming the handler file, its class, the constructor's options, what a
// request sends and gets, and what predict takes and gives) and the Python
// that loads the class, turns one request into a row (a BYTES input into the
// bytes preprocess gets, from a string or a list or array of one; what
// preprocess returns converted to the declared dtypes and shapes), stacks
// rows padded to the longest, runs one predict, splits the answers back,
// cutting padding off, and checks what postprocess answers (a dict; for a
// JSON answer, values JSON can carry). Each wrapper is one file of its own,
// so the same text appears in all three.
// Internal to core/export. Thread-safety: free functions without shared state.

#include <initializer_list>
#include <string>
#include <string_view>

#include "export/export_text.h"

namespace batchscope::export_detail {

// A Python string literal, quotes included: backslashes, quotes and control
// characters escaped, other characters (UTF-8) as they are.
std::string py_literal(std::string_view s);

// The handler of `c` (a Python model with its file), refused where it is
// missing or its file name is not a plain NAME.py, or is one of `taken` (the
// wrapper's own files), naming the clash. `format` names the export.
Status check_python_input(const Checked& c, std::string_view format,
                          std::initializer_list<std::string_view> taken);

// "class Toy of toy.py, constructed with scale="2"": for comments.
std::string handler_words(const Checked& c);

// The wrapper's imports and the shared part: constants (REQUEST_INPUTS,
// INPUTS, OUTPUTS, RESPONSE_OUTPUTS), then the functions
// load_handler(folder), as_declared(value, dtype, shape, what),
// request_item(values), prepare(model, item), predict_rows(model, rows),
// answered_by(model), finish(model, answer), json_answer(model, answer),
// body_values(body), plain(value, what), message_of(error) and
// stack(arrays, fill, dtype).
// `imports` are the server's own import lines, placed after numpy's.
std::string python_module_head(const Checked& c, std::string_view imports);

}  // namespace batchscope::export_detail

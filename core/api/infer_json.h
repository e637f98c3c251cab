// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Inference payloads as JSON: the simple `{"data": [...]}` body of /infer
// and KServe v2 / Open Inference Protocol requests, decoded into tensors; and
// tensors written back as JSON. Decoding errors carry the HTTP status that
// fits them: 400 for a body that is not the expected JSON, 422 for values
// that do not fit (wrong datatype, shape, length or non-finite values).
// Writing builds the text directly with std::to_chars (shortest round-trip
// form), which is several times faster than a DOM at the 20,000+ requests/s
// the listener aims for.
// BYTES (one byte string per request, tensor.h) travels in v2 as one JSON
// string a row: {"datatype": "BYTES", "shape": [rows] or [rows, 1],
// "data": ["...", ...]}, each string's UTF-8 bytes the row's value; bytes
// that are not UTF-8 are written with U+FFFD for each malformed sequence.
// Thread-safety: free functions without shared state.

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/model_metadata.h"
#include "common/tensor.h"
#include "common/text_out.h"

namespace batchscope {

struct HttpError {
  HttpError() = default;
  HttpError(int s, std::string m, std::string p = "")
      : status(s), message(std::move(m)), param(std::move(p)) {}
  int status = 400;
  std::string message;
  std::string param;  // the request field at fault, where one is (OpenAI's error object)
};

template <class T>
using HttpExpected = std::variant<T, HttpError>;

// {"data": [numbers]} (nested arrays are flattened) for a model with one
// input; the values are shaped to that input's per-request shape. A BYTES
// input is refused (422): it takes a v2 body.
HttpExpected<Tensors> parse_simple_infer(std::string_view body, const ModelMetadata& model);

// One KServe v2 input, batch dimension included.
struct V2Input {
  std::string name;
  Shape shape;    // as sent, [rows, ...]
  Tensor tensor;  // the values, shaped `shape`; empty for BYTES
  // BYTES: row r's string as Tensor(kBytes, {length}); empty otherwise.
  std::vector<Tensor> strings;

  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
};

struct V2Request {
  std::string id;
  bool has_id = false;
  std::vector<V2Input> inputs;       // in the model's input order
  std::vector<std::string> outputs;  // requested output names; empty: all
};

// Decodes and checks a v2 request against the model: every declared input
// present once (by name), datatype as declared, shape [rows, ...item] with
// the same rows for all inputs, data length = product of shape. A BYTES
// input's shape is [rows] or [rows, 1] (both mean one string a row, whichever
// the model declares) and its data one JSON string a row (nested arrays are
// flattened).
HttpExpected<V2Request> parse_v2_request(std::string_view body, const ModelMetadata& model);

// Row r of every input, as one request's tensors.
Tensors v2_row(const V2Request& req, int64_t row);

// Appends a JSON array of the tensor's values, flat; a BYTES tensor is one
// value, its bytes as a JSON string: ["..."].
void append_json_values(std::string& out, const Tensor& t);

// The shape a v2 response gives output `spec` of `rows` rows: [rows] and
// the first row's own shape (a variable output cut to the request's
// length), or for BYTES the declared [rows] or [rows, 1].
Shape v2_output_shape(const TensorSpec& spec, size_t rows, const Tensor& first_row);

// Appends output `k` of a v2 response whose rows (one per request, each that
// request's outputs in the model's order) are `rows`, not empty:
// {"name":..,"datatype":..,"shape":[..],"data":[..]}, the rows' values one
// flat array (a BYTES output one string a row).
void append_v2_output(std::string& out, const TensorSpec& spec, const std::vector<Tensors>& rows,
                      size_t k);

}  // namespace batchscope

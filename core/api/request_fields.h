// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reading the fields of a JSON request body, shared by the completion and
// chat readers: each reader returns nullopt when the value fits, or the
// HttpError (422) that names the field, quotes the value and says what was
// wanted; the error's param is the field's name.
// Thread-safety: free functions without shared state.

#include <QJsonObject>
#include <QJsonValue>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/completion_json.h"

namespace batchscope::fields {

using Found = std::optional<HttpError>;  // what reading a field gave: nullopt when fine

// The value as an error message quotes it.
std::string shown(const QJsonValue& v);
HttpError unfit(const std::string& field, const QJsonValue& v, const std::string& want);
// A 422 about `field` that is not about one value's type or range.
HttpError refused(const std::string& field, std::string message);

Found read_number(const std::string& f, const QJsonValue& v, double lo, double hi, double& out);
Found read_whole(const std::string& f, const QJsonValue& v, double lo, double hi, double& out);
Found read_bool(const std::string& f, const QJsonValue& v, bool& out);
Found read_stop(const std::string& f, const QJsonValue& v, std::vector<std::string>& out);
// max_tokens (and its other names), temperature, top_p, seed, stop,
// stop_words, ignore_eos, stream; `known` is false for any other name.
Found read_common(const std::string& key, const QJsonValue& v, CompletionRequest& r, bool& known);
// stream_options: {"include_usage": bool}, or null.
Found read_stream_options(const std::string& key, const QJsonValue& v, CompletionRequest& r);
// OpenAI fields accepted only at the value that changes nothing.
Found read_neutral(const std::string& key, const QJsonValue& v, bool& known);

// The body as a JSON object, or 400.
HttpExpected<QJsonObject> object_of(std::string_view body);

// An OpenAI request body: model, stream_options and read_common's fields;
// the field named `main` (prompt, messages: refused when missing) through
// `read_main`; `neutral` for the fields accepted at their neutral values;
// any other field refused by name.
using MainReader = std::function<Found(const QJsonValue& v, CompletionRequest& r)>;
using NeutralReader = Found (*)(const std::string& key, const QJsonValue& v, bool& known);
HttpExpected<CompletionRequest> read_openai_body(std::string_view body, const std::string& main,
                                                 const MainReader& read_main,
                                                 NeutralReader neutral);

}  // namespace batchscope::fields

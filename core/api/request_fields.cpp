// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/request_fields.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <cmath>

#include "common/text_out.h"

namespace batchscope::fields {

namespace {

constexpr double kMaxTokens = 1'000'000;
constexpr size_t kMaxStops = 4;
constexpr size_t kMaxStopBytes = 256;

}  // namespace

std::string shown(const QJsonValue& v) {
  switch (v.type()) {
    case QJsonValue::Double: {
      std::string s;
      append_json_number(s, v.toDouble());
      return s;
    }
    case QJsonValue::String: return quoted_excerpt(v.toString().toStdString());
    case QJsonValue::Bool: return v.toBool() ? "true" : "false";
    case QJsonValue::Null: return "null";
    case QJsonValue::Array: return "an array";
    case QJsonValue::Object: return "an object";
    default: return "nothing";
  }
}

namespace {

// A field's name as an error's param gives it: a client's key, cut short.
std::string param_of(const std::string& field) {
  constexpr size_t kMax = 128;
  return field.size() <= kMax ? field : field.substr(0, kMax) + "...";
}

}  // namespace

HttpError unfit(const std::string& field, const QJsonValue& v, const std::string& want) {
  return {422, field + " must be " + want + ", got " + shown(v), param_of(field)};
}

HttpError refused(const std::string& field, std::string message) {
  return {422, std::move(message), param_of(field)};
}

Found read_number(const std::string& f, const QJsonValue& v, double lo, double hi, double& out) {
  if (!v.isDouble() || !(v.toDouble() >= lo && v.toDouble() <= hi)) {
    std::string range;
    append_json_number(range, lo);
    range += " to ";
    append_json_number(range, hi);
    return unfit(f, v, "a number from " + range);
  }
  out = v.toDouble();
  return std::nullopt;
}

Found read_whole(const std::string& f, const QJsonValue& v, double lo, double hi, double& out) {
  if (Found e = read_number(f, v, lo, hi, out)) {
    return unfit(f, v,
                 "a whole number from " + std::to_string(static_cast<int64_t>(lo)) + " to " +
                     std::to_string(static_cast<int64_t>(hi)));
  }
  if (out != std::floor(out)) return unfit(f, v, "a whole number");
  return std::nullopt;
}

Found read_bool(const std::string& f, const QJsonValue& v, bool& out) {
  if (!v.isBool()) return unfit(f, v, "true or false");
  out = v.toBool();
  return std::nullopt;
}

Found read_stop(const std::string& f, const QJsonValue& v, std::vector<std::string>& out) {
  out.clear();
  if (v.isNull()) return std::nullopt;
  QJsonArray list;
  if (v.isString())
    list.append(v);
  else if (v.isArray())
    list = v.toArray();
  else
    return unfit(f, v, "a string or an array of strings");
  if (static_cast<size_t>(list.size()) > kMaxStops) {
    return refused(f, f + " holds " + std::to_string(list.size()) + " strings; at most " +
                          std::to_string(kMaxStops));
  }
  for (const QJsonValue& s : list) {
    const std::string text = s.toString().toStdString();
    if (!s.isString() || text.empty() || text.size() > kMaxStopBytes) {
      return unfit(f, s, "a non-empty string of at most 256 bytes");
    }
    out.push_back(text);
  }
  return std::nullopt;
}

// The fields both routes share. nullopt in `known` when the name is not one.
Found read_common(const std::string& key, const QJsonValue& v, CompletionRequest& r, bool& known) {
  known = true;
  double d = 0;
  const bool is_common = key == "max_tokens" || key == "max_completion_tokens" ||
                         key == "temperature" || key == "top_p" || key == "seed" || key == "stop" ||
                         key == "stop_words" || key == "ignore_eos" || key == "stream";
  if (!is_common) {
    known = false;
    return std::nullopt;
  }
  if (v.isNull()) return std::nullopt;  // OpenAI's clients send null for "not given"
  if (key == "max_tokens" || key == "max_completion_tokens") {
    if (Found e = read_whole(key, v, 1, kMaxTokens, d)) return e;
    const bool completion = key == "max_completion_tokens";
    if (completion || !r.max_completion_set) r.max_tokens = static_cast<uint32_t>(d);
    r.max_tokens_set = true;
    r.max_completion_set = r.max_completion_set || completion;
    return std::nullopt;
  }
  if (key == "temperature") {
    if (Found e = read_number(key, v, 0, 2, d)) return e;
    r.sampling.temperature = d;
    return std::nullopt;
  }
  if (key == "top_p") {
    if (Found e = read_number(key, v, 0, 1, d)) return e;
    if (d <= 0) return unfit(key, v, "above 0 and at most 1");
    r.sampling.top_p = d;
    return std::nullopt;
  }
  if (key == "seed") {
    if (Found e = read_whole(key, v, 0, 9007199254740991.0, d)) return e;
    r.sampling.seed = static_cast<uint64_t>(d);
    return std::nullopt;
  }
  if (key == "stop" || key == "stop_words") return read_stop(key, v, r.stop);
  if (key == "ignore_eos") return read_bool(key, v, r.ignore_eos);
  return read_bool(key, v, r.stream);
}

// OpenAI fields this server accepts only at the value that changes nothing.
Found read_neutral(const std::string& key, const QJsonValue& v, bool& known) {
  known = true;
  const auto must = [&](bool neutral, const char* what) -> Found {
    if (neutral) return std::nullopt;
    return refused(key, key + " = " + shown(v) + " is not supported; " + what);
  };
  if (key == "n" || key == "best_of") {
    return must(v.isNull() || v.toDouble(0) == 1, "one completion per request (1)");
  }
  if (key == "echo") return must(v.isNull() || v.toBool(true) == false, "false only");
  if (key == "logprobs") return must(v.isNull() || v.toDouble(-1) == 0, "null only");
  if (key == "suffix") return must(v.isNull(), "null only");
  if (key == "presence_penalty" || key == "frequency_penalty") {
    return must(v.isNull() || v.toDouble(1) == 0, "0 only");
  }
  if (key == "logit_bias") return must(v.isNull() || v.toObject().isEmpty(), "{} only");
  if (key == "user") return std::nullopt;
  known = false;
  return std::nullopt;
}

Found read_stream_options(const std::string& key, const QJsonValue& v, CompletionRequest& r) {
  if (!v.isObject() && !v.isNull()) return unfit(key, v, "an object");
  const QJsonValue u = v.toObject().value("include_usage");
  if (u.isUndefined() || u.isNull()) return std::nullopt;
  return read_bool(key + ".include_usage", u, r.include_usage);
}

HttpExpected<QJsonObject> object_of(std::string_view body) {
  QJsonParseError pe{};
  const QJsonDocument doc =
      QJsonDocument::fromJson(QByteArray(body.data(), static_cast<qsizetype>(body.size())), &pe);
  if (pe.error != QJsonParseError::NoError) {
    return HttpError{400, "the body is not valid JSON: " + pe.errorString().toStdString() +
                              " at offset " + std::to_string(pe.offset)};
  }
  if (!doc.isObject()) return HttpError{400, "the body must be a JSON object"};
  return doc.object();
}

HttpExpected<CompletionRequest> read_openai_body(std::string_view body, const std::string& main,
                                                 const MainReader& read_main,
                                                 NeutralReader neutral) {
  auto obj = object_of(body);
  if (auto* e = std::get_if<HttpError>(&obj)) return *e;
  const QJsonObject& o = std::get<QJsonObject>(obj);
  CompletionRequest r;
  bool has_main = false;
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string key = it.key().toStdString();
    const QJsonValue v = it.value();
    bool known = false;
    Found e;
    if (key == "model") {
      if (!v.isString() && !v.isNull()) return unfit(key, v, "a string");
      r.model = v.toString().toStdString();
    } else if (key == main) {
      has_main = true;
      e = read_main(v, r);
    } else if (key == "stream_options") {
      e = read_stream_options(key, v, r);
    } else {
      e = read_common(key, v, r, known);
      if (!known) e = neutral(key, v, known);
      if (!known) return refused(key, "unknown field " + quoted_excerpt(key));
    }
    if (e) return *e;
  }
  if (!has_main) return refused(main, main + " is missing");
  return r;
}

}  // namespace batchscope::fields

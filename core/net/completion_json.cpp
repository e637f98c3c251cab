#include "net/completion_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <cmath>

#include "common/text_out.h"

namespace batchscope {

namespace {

constexpr double kMaxTokens = 1'000'000;
constexpr size_t kMaxStops = 4;
constexpr size_t kMaxStopBytes = 256;

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

HttpError unfit(const std::string& field, const QJsonValue& v, const std::string& want) {
  return {422, field + " must be " + want + ", got " + shown(v)};
}

using Found = std::optional<HttpError>;  // what reading a field gave: nullopt when fine

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
    return unfit(f, v, "a whole number from " + std::to_string(static_cast<int64_t>(lo)) + " to " +
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
  if (v.isString()) list.append(v);
  else if (v.isArray()) list = v.toArray();
  else return unfit(f, v, "a string or an array of strings");
  if (static_cast<size_t>(list.size()) > kMaxStops) {
    return HttpError{422, f + " holds " + std::to_string(list.size()) + " strings; at most " +
                              std::to_string(kMaxStops)};
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

Found read_prompt(const std::string& f, const QJsonValue& v, int vocab, std::vector<int32_t>& out) {
  out.clear();
  const auto text = [&](const QJsonValue& s) {
    const QByteArray b = s.toString().toUtf8();
    for (char c : b) out.push_back(static_cast<unsigned char>(c));
  };
  if (v.isString()) {
    text(v);
  } else if (v.isArray()) {
    const QJsonArray a = v.toArray();
    if (a.size() == 1 && a.at(0).isString()) {
      text(a.at(0));
    } else {
      for (qsizetype i = 0; i < a.size(); ++i) {
        const QJsonValue t = a.at(i);
        const double d = t.toDouble(-1);
        if (!t.isDouble() || d < 0 || d >= vocab || d != std::floor(d)) {
          return unfit(f + "[" + std::to_string(i) + "]", t,
                       "a string, one string in an array, or token ids from 0 to " +
                           std::to_string(vocab - 1));
        }
        out.push_back(static_cast<int32_t>(d));
      }
    }
  } else {
    return unfit(f, v, "a string, one string in an array, or an array of token ids");
  }
  if (out.empty()) return HttpError{422, f + " is empty; it needs at least one token"};
  return std::nullopt;
}

// The fields both routes share. nullopt in `known` when the name is not one.
Found read_common(const std::string& key, const QJsonValue& v, CompletionRequest& r, bool& known) {
  known = true;
  double d = 0;
  if (key == "max_tokens") {
    if (v.isNull()) return std::nullopt;
    Found e = read_whole(key, v, 1, kMaxTokens, d);
    r.max_tokens = static_cast<uint32_t>(d);
    return e;
  }
  if (key == "temperature") {
    Found e = read_number(key, v, 0, 2, d);
    r.sampling.temperature = d;
    return e;
  }
  if (key == "top_p") {
    Found e = read_number(key, v, 0, 1, d);
    if (!e && d <= 0) return unfit(key, v, "above 0 and at most 1");
    r.sampling.top_p = d;
    return e;
  }
  if (key == "seed") {
    if (v.isNull()) return std::nullopt;
    Found e = read_whole(key, v, 0, 9007199254740991.0, d);
    r.sampling.seed = static_cast<uint64_t>(d);
    return e;
  }
  if (key == "stop" || key == "stop_words") return read_stop(key, v, r.stop);
  if (key == "ignore_eos") return read_bool(key, v, r.ignore_eos);
  if (key == "stream") return read_bool(key, v, r.stream);
  known = false;
  return std::nullopt;
}

// OpenAI fields this server accepts only at the value that changes nothing.
Found read_neutral(const std::string& key, const QJsonValue& v, bool& known) {
  known = true;
  const auto must = [&](bool neutral, const char* what) -> Found {
    if (neutral) return std::nullopt;
    return HttpError{422, key + " = " + shown(v) + " is not supported; " + what};
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

}  // namespace

HttpExpected<CompletionRequest> parse_completion(std::string_view body, int vocab_size) {
  auto obj = object_of(body);
  if (auto* e = std::get_if<HttpError>(&obj)) return *e;
  const QJsonObject& o = std::get<QJsonObject>(obj);
  CompletionRequest r;
  bool has_prompt = false;
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string key = it.key().toStdString();
    const QJsonValue v = it.value();
    bool known = false;
    Found e;
    if (key == "model") {
      if (!v.isString()) return unfit(key, v, "a string");
      r.model = v.toString().toStdString();
      continue;
    }
    if (key == "prompt") {
      has_prompt = true;
      e = read_prompt(key, v, vocab_size, r.prompt);
    } else if (key == "stream_options") {
      if (!v.isObject() && !v.isNull()) return unfit(key, v, "an object");
      const QJsonValue u = v.toObject().value("include_usage");
      if (!u.isUndefined()) e = read_bool("stream_options.include_usage", u, r.include_usage);
    } else {
      e = read_common(key, v, r, known);
      if (!known) e = read_neutral(key, v, known);
      if (!known) return HttpError{422, "unknown field " + quoted_excerpt(key)};
    }
    if (e) return *e;
  }
  if (!has_prompt) return HttpError{422, "prompt is missing"};
  return r;
}

HttpExpected<CompletionRequest> parse_generate(std::string_view body, int vocab_size) {
  auto obj = object_of(body);
  if (auto* e = std::get_if<HttpError>(&obj)) return *e;
  const QJsonObject& o = std::get<QJsonObject>(obj);
  CompletionRequest r;
  bool has_input = false;
  const auto field = [&](const std::string& key, const QJsonValue& v) -> Found {
    bool known = false;
    Found e = read_common(key, v, r, known);
    if (!known) return HttpError{422, "unknown field " + quoted_excerpt(key)};
    return e;
  };
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string key = it.key().toStdString();
    const QJsonValue v = it.value();
    Found e;
    if (key == "text_input") {
      has_input = true;
      if (!v.isString()) return unfit(key, v, "a string");
      e = read_prompt(key, v, vocab_size, r.prompt);
    } else if (key == "id") {
      if (!v.isString()) return unfit(key, v, "a string");
      r.id = v.toString().toStdString();
    } else if (key == "parameters") {
      if (!v.isObject()) return unfit(key, v, "an object");
      const QJsonObject p = v.toObject();
      for (auto pt = p.begin(); pt != p.end() && !e; ++pt) e = field(pt.key().toStdString(), pt.value());
    } else {
      e = field(key, v);
    }
    if (e) return *e;
  }
  if (!has_input) return HttpError{422, "text_input is missing"};
  return r;
}

namespace {

void head(std::string& out, std::string_view id, int64_t created, std::string_view model) {
  out += "{\"id\":";
  append_json_string(out, id);
  out += ",\"object\":\"text_completion\",\"created\":";
  append_int(out, created);
  out += ",\"model\":";
  append_json_string(out, model);
}

void usage(std::string& out, const GenRecord& r) {
  out += "\"usage\":{\"prompt_tokens\":";
  append_uint(out, r.prompt_tokens);
  out += ",\"completion_tokens\":";
  append_uint(out, r.output_tokens);
  out += ",\"total_tokens\":";
  append_uint(out, uint64_t{r.prompt_tokens} + r.output_tokens);
  out += '}';
}

}  // namespace

std::string completion_body(std::string_view id, int64_t created, std::string_view model,
                            const GenRecord& r) {
  std::string out;
  head(out, id, created, model);
  out += ",\"choices\":[{\"text\":";
  append_json_string(out, r.text);
  out += ",\"index\":0,\"logprobs\":null,\"finish_reason\":";
  append_json_string(out, finish_reason_name(r.reason));
  out += "}],";
  usage(out, r);
  return out + '}';
}

std::string completion_chunk(std::string_view id, int64_t created, std::string_view model,
                             std::string_view text, const FinishReason* reason) {
  std::string out;
  head(out, id, created, model);
  out += ",\"choices\":[{\"text\":";
  append_json_string(out, text);
  out += ",\"index\":0,\"logprobs\":null,\"finish_reason\":";
  if (reason) append_json_string(out, finish_reason_name(*reason));
  else out += "null";
  return out + "}]}";
}

std::string completion_usage_chunk(std::string_view id, int64_t created, std::string_view model,
                                   const GenRecord& r) {
  std::string out;
  head(out, id, created, model);
  out += ",\"choices\":[],";
  usage(out, r);
  return out + '}';
}

std::string stream_error(int status, std::string_view message) {
  std::string out = "{\"error\":{\"message\":";
  append_json_string(out, message);
  out += ",\"type\":";
  append_json_string(out, status == 504 ? "timeout" : status >= 500 ? "server_error" : "invalid_request_error");
  out += ",\"code\":";
  append_int(out, status);
  return out + "}}";
}

std::string generate_body(std::string_view id, std::string_view model, std::string_view text,
                          const GenRecord* r) {
  std::string out = "{";
  if (!id.empty()) {
    out += "\"id\":";
    append_json_string(out, id);
    out += ',';
  }
  out += "\"model_name\":";
  append_json_string(out, model);
  out += ",\"model_version\":\"1\",\"text_output\":";
  append_json_string(out, text);
  if (r) {
    out += ",\"finish_reason\":";
    append_json_string(out, finish_reason_name(r->reason));
    out += ',';
    usage(out, *r);
  }
  return out + '}';
}

std::string sse_event(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 8);
  out += "data: ";
  out += json;
  out += "\n\n";
  return out;
}

}  // namespace batchscope

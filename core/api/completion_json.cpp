// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/completion_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <cmath>

#include "api/openai_error.h"
#include "api/request_fields.h"
#include "common/text_out.h"

namespace batchscope {

namespace {

using namespace fields;

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
  if (out.empty()) return refused(f, f + " is empty; it needs at least one token");
  return std::nullopt;
}

}  // namespace

HttpExpected<CompletionRequest> parse_completion(std::string_view body, int vocab_size) {
  return read_openai_body(
      body, "prompt",
      [vocab_size](const QJsonValue& v, CompletionRequest& r) {
        return read_prompt("prompt", v, vocab_size, r.prompt);
      },
      read_neutral);
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
    if (!known) return refused(key, "unknown field " + quoted_excerpt(key));
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
      for (auto pt = p.begin(); pt != p.end() && !e; ++pt)
        e = field(pt.key().toStdString(), pt.value());
    } else {
      e = field(key, v);
    }
    if (e) return *e;
  }
  if (!has_input) return refused("text_input", "text_input is missing");
  return r;
}

void append_openai_head(std::string& out, std::string_view id, std::string_view object,
                        int64_t created, std::string_view model) {
  out += "{\"id\":";
  append_json_string(out, id);
  out += ",\"object\":";
  append_json_string(out, object);
  out += ",\"created\":";
  append_int(out, created);
  out += ",\"model\":";
  append_json_string(out, model);
}

void append_usage(std::string& out, const GenRecord& r) {
  out += "\"usage\":{\"prompt_tokens\":";
  append_uint(out, r.prompt_tokens);
  out += ",\"completion_tokens\":";
  append_uint(out, r.output_tokens);
  out += ",\"total_tokens\":";
  append_uint(out, uint64_t{r.prompt_tokens} + r.output_tokens);
  out += '}';
}

std::string completion_body(std::string_view id, int64_t created, std::string_view model,
                            const GenRecord& r) {
  std::string out;
  append_openai_head(out, id, "text_completion", created, model);
  out += ",\"choices\":[{\"text\":";
  append_json_string(out, r.text);
  out += ",\"index\":0,\"logprobs\":null,\"finish_reason\":";
  append_json_string(out, finish_reason_name(r.reason));
  out += "}],";
  append_usage(out, r);
  return out + '}';
}

std::string completion_chunk(std::string_view id, int64_t created, std::string_view model,
                             std::string_view text, const FinishReason* reason) {
  std::string out;
  append_openai_head(out, id, "text_completion", created, model);
  out += ",\"choices\":[{\"text\":";
  append_json_string(out, text);
  out += ",\"index\":0,\"logprobs\":null,\"finish_reason\":";
  if (reason)
    append_json_string(out, finish_reason_name(*reason));
  else
    out += "null";
  return out + "}]}";
}

std::string completion_usage_chunk(std::string_view id, int64_t created, std::string_view model,
                                   const GenRecord& r) {
  std::string out;
  append_openai_head(out, id, "text_completion", created, model);
  out += ",\"choices\":[],";
  append_usage(out, r);
  return out + '}';
}

std::string stream_error(int status, std::string_view message) {
  return openai_error_body(status, message, "");
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
    append_usage(out, *r);
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

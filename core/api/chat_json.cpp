// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/chat_json.h"

#include <QJsonArray>
#include <QJsonObject>
#include <algorithm>

#include "api/request_fields.h"
#include "common/text_out.h"

namespace batchscope {

namespace {

using namespace fields;

constexpr qsizetype kMaxMessages = 4096;

std::string at(const std::string& f, qsizetype i) { return f + "[" + std::to_string(i) + "]"; }

Found read_content(const std::string& f, const QJsonValue& v, std::string& out) {
  if (v.isString()) {
    out = v.toString().toStdString();
    return std::nullopt;
  }
  if (!v.isArray()) return unfit(f, v, "a string or an array of text parts");
  const QJsonArray parts = v.toArray();
  for (qsizetype i = 0; i < parts.size(); ++i) {
    const std::string where = at(f, i);
    const QJsonObject part = parts.at(i).toObject();
    if (!parts.at(i).isObject()) return unfit(where, parts.at(i), "an object");
    const QJsonValue type = part.value("type");
    if (type.toString() != "text") {
      return unfit(where + ".type", type, "\"text\" (the only part this server reads)");
    }
    const QJsonValue text = part.value("text");
    if (!text.isString()) return unfit(where + ".text", text, "a string");
    out += text.toString().toStdString();
  }
  return std::nullopt;
}

Found read_message(const std::string& f, const QJsonValue& v, ChatMessage& m) {
  if (!v.isObject()) return unfit(f, v, "an object with role and content");
  const QJsonObject o = v.toObject();
  bool has_content = false;
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string key = it.key().toStdString();
    const QJsonValue x = it.value();
    if (key == "role") {
      const std::string role = x.toString().toStdString();
      if (role == "system" || role == "user" || role == "assistant")
        m.role = role;
      else if (role == "developer")
        m.role = "system";
      else
        return unfit(f + ".role", x, "\"system\", \"developer\", \"user\" or \"assistant\"");
    } else if (key == "content") {
      has_content = true;
      if (x.isNull()) continue;  // an assistant's turn without text; checked below
      if (Found e = read_content(f + ".content", x, m.content)) return e;
    } else if (key == "name") {
    } else if ((key == "refusal" || key == "audio" || key == "annotations") && x.isNull()) {
      // what a client's SDK puts back from an answer's message
    } else if (key == "tool_calls" || key == "function_call") {
      if (!x.isNull() && !(x.isArray() && x.toArray().isEmpty())) {
        return refused(f + "." + key,
                       f + "." + key + " is not supported; this server has no tools");
      }
    } else {
      return refused(f + "." + key, "unknown field " + quoted_excerpt(f + "." + key));
    }
  }
  if (m.role.empty()) return refused(f + ".role", f + ".role is missing");
  if (!has_content) return refused(f + ".content", f + ".content is missing");
  if (o.value("content").isNull() && m.role != "assistant") {
    return refused(f + ".content", f + ".content is null; only an assistant's may be");
  }
  return std::nullopt;
}

Found read_messages(const std::string& f, const QJsonValue& v, std::vector<ChatMessage>& out) {
  if (!v.isArray()) return unfit(f, v, "an array of messages");
  const QJsonArray list = v.toArray();
  if (list.isEmpty()) return refused(f, f + " is empty; it needs at least one message");
  if (list.size() > kMaxMessages) {
    return refused(f, f + " holds " + std::to_string(list.size()) + " messages; at most " +
                          std::to_string(kMaxMessages));
  }
  for (qsizetype i = 0; i < list.size(); ++i) {
    ChatMessage m;
    if (Found e = read_message(at(f, i), list.at(i), m)) return e;
    out.push_back(std::move(m));
  }
  return std::nullopt;
}

// Chat's own neutral values; nullopt in `known` when the name is not one.
Found read_chat_neutral(const std::string& key, const QJsonValue& v, bool& known) {
  known = true;
  const auto must = [&](bool neutral, const char* what) -> Found {
    if (neutral) return std::nullopt;
    return refused(key, key + " = " + shown(v) + " is not supported; " + what);
  };
  if (key == "logprobs") return must(v.isNull() || v == QJsonValue(false), "false only");
  if (key == "top_logprobs") return must(v.isNull() || v.toDouble(-1) == 0, "0 only");
  if (key == "tools" || key == "functions") {
    return must(v.isNull() || (v.isArray() && v.toArray().isEmpty()),
                "[] only (this server has no tools)");
  }
  if (key == "tool_choice" || key == "function_call") {
    return must(v.isNull() || v.toString() == "none", "\"none\" only (this server has no tools)");
  }
  if (key == "response_format") {
    return must(v.isNull() || v.toObject().value("type").toString() == "text",
                "{\"type\": \"text\"} only");
  }
  if (key == "store" || key == "metadata" || key == "parallel_tool_calls") return std::nullopt;
  if (key == "echo" || key == "best_of" || key == "suffix") {
    known = false;  // completions' fields, not chat's
    return std::nullopt;
  }
  return read_neutral(key, v, known);
}

}  // namespace

HttpExpected<CompletionRequest> parse_chat(std::string_view body, const LmInfo& model) {
  std::vector<ChatMessage> messages;
  auto parsed = read_openai_body(
      body, "messages",
      [&messages](const QJsonValue& v, CompletionRequest&) {
        return read_messages("messages", v, messages);
      },
      read_chat_neutral);
  if (std::holds_alternative<HttpError>(parsed)) return parsed;
  CompletionRequest& r = std::get<CompletionRequest>(parsed);
  // Measured before it is made: a long template times many messages must
  // not become a prompt far past what the model can read.
  const size_t size = rendered_size(model.chat, messages);
  if (size > static_cast<size_t>(model.context_length)) {
    return refused("messages", "messages give a prompt of " + std::to_string(size) +
                                   " tokens; the model's context is " +
                                   std::to_string(model.context_length) + " tokens");
  }
  const std::string prompt = render_chat(model.chat, messages);
  if (prompt.empty()) return refused("messages", "messages give an empty prompt");
  for (const std::string& s : model.chat.stop) {
    if (std::find(r.stop.begin(), r.stop.end(), s) == r.stop.end()) r.stop.push_back(s);
  }
  r.prompt.reserve(prompt.size());
  for (char c : prompt) r.prompt.push_back(static_cast<unsigned char>(c));
  return parsed;
}

std::string chat_body(std::string_view id, int64_t created, std::string_view model,
                      const GenRecord& r) {
  std::string out;
  append_openai_head(out, id, "chat.completion", created, model);
  out += ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":";
  append_json_string(out, r.text);
  out += "},\"logprobs\":null,\"finish_reason\":";
  append_json_string(out, finish_reason_name(r.reason));
  out += "}],";
  append_usage(out, r);
  return out + '}';
}

std::string chat_role_chunk(std::string_view id, int64_t created, std::string_view model) {
  std::string out;
  append_openai_head(out, id, "chat.completion.chunk", created, model);
  return out +
         ",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
         "\"logprobs\":null,\"finish_reason\":null}]}";
}

std::string chat_chunk(std::string_view id, int64_t created, std::string_view model,
                       std::string_view text, const FinishReason* reason) {
  std::string out;
  append_openai_head(out, id, "chat.completion.chunk", created, model);
  out += ",\"choices\":[{\"index\":0,\"delta\":{";
  if (!reason) {
    out += "\"content\":";
    append_json_string(out, text);
  }
  out += "},\"logprobs\":null,\"finish_reason\":";
  if (reason)
    append_json_string(out, finish_reason_name(*reason));
  else
    out += "null";
  return out + "}]}";
}

std::string chat_usage_chunk(std::string_view id, int64_t created, std::string_view model,
                             const GenRecord& r) {
  std::string out;
  append_openai_head(out, id, "chat.completion.chunk", created, model);
  out += ",\"choices\":[],";
  append_usage(out, r);
  return out + '}';
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/chat_template.h"

namespace batchscope {

namespace {

constexpr std::string_view kContent = "{content}";
constexpr size_t kMaxText = 4096;

Status check_role(const char* role, const std::string& text) {
  if (text.size() > kMaxText) {
    return invalid_argument(std::string("chat_template.") + role + " is " +
                            std::to_string(text.size()) + " bytes; at most 4096");
  }
  const size_t at = text.find(kContent);
  if (at == std::string::npos || text.find(kContent, at + 1) != std::string::npos) {
    return invalid_argument(std::string("chat_template.") + role +
                            " must hold \"{content}\" exactly once, got \"" + text + "\"");
  }
  return Status::Ok();
}

void append_turn(std::string& out, const std::string& text, const std::string& content) {
  const size_t at = text.find(kContent);
  out.append(text, 0, at);
  out += content;
  out.append(text, at + kContent.size());
}

}  // namespace

Expected<ChatTemplate> make_chat_template(std::string system, std::string user,
                                          std::string assistant, std::string generation,
                                          std::vector<std::string> stop) {
  for (const auto& [role, text] : {std::pair{"system", &system}, std::pair{"user", &user},
                                   std::pair{"assistant", &assistant}}) {
    if (Status s = check_role(role, *text); !s) return s.error();
  }
  if (generation.size() > kMaxText) {
    return invalid_argument("chat_template.generation is " + std::to_string(generation.size()) +
                            " bytes; at most 4096");
  }
  if (stop.size() > 4) {
    return invalid_argument("chat_template.stop holds " + std::to_string(stop.size()) +
                            " strings; at most 4");
  }
  for (const std::string& s : stop) {
    if (s.empty() || s.size() > 256) {
      return invalid_argument(
          "chat_template.stop must hold non-empty strings of at most 256 "
          "bytes, got \"" +
          s.substr(0, 64) + "\"");
    }
  }
  ChatTemplate t;
  t.stop = std::move(stop);
  t.system = std::move(system);
  t.user = std::move(user);
  t.assistant = std::move(assistant);
  t.generation = std::move(generation);
  t.from_sidecar = true;
  return t;
}

namespace {

const std::string& text_of(const ChatTemplate& t, const std::string& role) {
  return role == "system" ? t.system : role == "user" ? t.user : t.assistant;
}

}  // namespace

std::string render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages) {
  std::string out;
  out.reserve(rendered_size(t, messages));
  for (const ChatMessage& m : messages) append_turn(out, text_of(t, m.role), m.content);
  return out + t.generation;
}

size_t rendered_size(const ChatTemplate& t, const std::vector<ChatMessage>& messages) {
  size_t n = t.generation.size();
  for (const ChatMessage& m : messages)
    n += text_of(t, m.role).size() - kContent.size() + m.content.size();
  return n;
}

}  // namespace batchscope

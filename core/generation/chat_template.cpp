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
                                          std::string assistant, std::string generation) {
  for (const auto& [role, text] : {std::pair{"system", &system}, std::pair{"user", &user},
                                   std::pair{"assistant", &assistant}}) {
    if (Status s = check_role(role, *text); !s) return s.error();
  }
  if (generation.size() > kMaxText) {
    return invalid_argument("chat_template.generation is " + std::to_string(generation.size()) +
                            " bytes; at most 4096");
  }
  ChatTemplate t;
  t.system = std::move(system);
  t.user = std::move(user);
  t.assistant = std::move(assistant);
  t.generation = std::move(generation);
  t.from_sidecar = true;
  return t;
}

std::string render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const ChatMessage& m : messages) {
    const std::string& text = m.role == "system" ? t.system : m.role == "user" ? t.user : t.assistant;
    append_turn(out, text, m.content);
  }
  return out + t.generation;
}

}  // namespace batchscope

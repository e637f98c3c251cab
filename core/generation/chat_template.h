#pragma once
// How chat messages become one prompt for a model that reads text.
//
// A template gives, per role, the text around a message's content (one
// "{content}" marks where it goes), and the cue that asks the model for the
// assistant's next turn. A model's sidecar may carry one under
// "chat_template":
//   {"system": "...{content}...", "user": "...{content}...",
//    "assistant": "...{content}...", "generation": "..."}
// Without one, a base model gets the default: role-prefixed lines and an
// assistant cue,
//   System: {content}\n   User: {content}\n   Assistant: {content}\n
// then "Assistant:".
// Thread-safety: plain values and free functions.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace batchscope {

struct ChatTemplate {
  std::string system = "System: {content}\n";
  std::string user = "User: {content}\n";
  std::string assistant = "Assistant: {content}\n";
  std::string generation = "Assistant:";
  bool from_sidecar = false;  // false: the default above

  // "sidecar" or "default", as /v1/models reports it.
  const char* source() const { return from_sidecar ? "sidecar" : "default"; }
};

struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
};

// A template from its four texts: each role's text holds "{content}"
// exactly once; each text is at most 4096 bytes. The error names the role.
Expected<ChatTemplate> make_chat_template(std::string system, std::string user,
                                          std::string assistant, std::string generation);

// The prompt for `messages` (roles already checked), ending in the cue.
std::string render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages);

}  // namespace batchscope

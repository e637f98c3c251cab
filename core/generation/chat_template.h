// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How chat messages become one prompt for a model that reads text.
//
// A template gives, per role, the text around a message's content (one
// "{content}" marks where it goes), and the cue that asks the model for the
// assistant's next turn. A model's sidecar may carry one under
// "chat_template":
//   {"system": "...{content}...", "user": "...{content}...",
//    "assistant": "...{content}...", "generation": "...", "stop": [...]}
// ("stop", optional: up to 4 strings that end the assistant's turn).
// Without one, a base model gets the default: role-prefixed lines and an
// assistant cue,
//   System: {content}\n   User: {content}\n   Assistant: {content}\n
// then "Assistant: ", stopping at "\nUser:" (a base model would otherwise
// go on to write the user's next turn). The cue is the assistant's text
// up to its content, so a reply put back in the conversation renders as
// it was generated.
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
  std::string generation = "Assistant: ";
  std::vector<std::string> stop = {"\nUser:"};
  bool from_sidecar = false;  // false: the default above

  // "sidecar" or "default", as /v1/models reports it.
  const char* source() const { return from_sidecar ? "sidecar" : "default"; }
};

struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
};

// A template from its texts: each role's text holds "{content}" exactly
// once; each text is at most 4096 bytes; at most 4 non-empty stops of at
// most 256 bytes. The error names the field.
Expected<ChatTemplate> make_chat_template(std::string system, std::string user,
                                          std::string assistant, std::string generation,
                                          std::vector<std::string> stop = {});

// The prompt for `messages` (roles already checked), ending in the cue.
std::string render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages);
// Its length in bytes, without rendering it.
size_t rendered_size(const ChatTemplate& t, const std::vector<ChatMessage>& messages);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What one Server-Sent Event of an OpenAI-compatible stream says, for the
// load client that measures a server (ours, vLLM, TGI, llama.cpp's):
// completions chunks (choices[0].text), chat chunks
// (choices[0].delta.content), the usage chunk, an error event and the
// closing [DONE]. Every byte is outside input: a malformed event is one
// that says nothing, never an exception.
// Thread-safety: free functions without shared state.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace batchscope {

struct StreamEvent {
  bool done = false;                          // "[DONE]"
  std::string text;                           // the text it adds (may be empty)
  bool finished = false;                      // it carries a finish_reason
  std::optional<uint64_t> completion_tokens;  // from a usage object
  std::optional<uint64_t> prompt_tokens;      // from a usage object
  std::string error;                          // an error event's message; empty when none
};

StreamEvent read_stream_event(std::string_view data);

}  // namespace batchscope

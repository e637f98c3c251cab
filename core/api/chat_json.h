// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// OpenAI's POST /v1/chat/completions as JSON.
//
// The request: model, messages (each {"role", "content"}: role system,
// developer (read as system), user or assistant; content a string, or an
// array of {"type": "text", "text": ...} parts, joined; null for an
// assistant's; "name", and "refusal", "audio" and "annotations" when null,
// are ignored), max_tokens or max_completion_tokens (not given: the route
// fills what the context leaves), temperature, top_p, stop, seed, stream,
// stream_options.include_usage and vLLM's ignore_eos; null reads as not
// given. The messages become one prompt through the model's chat template
// (chat_template.h), refused (param "messages") when it would be longer
// than the model's context; the template's stops join the request's. Fields OpenAI defines that
// this server does not implement are accepted at their neutral values (n 1, logprobs false,
// top_logprobs 0, tools [], tool_choice "none", response_format
// {"type": "text"}, penalties 0, logit_bias {}) and refused by name
// otherwise; user, store, metadata and parallel_tool_calls are ignored;
// any other field is refused by name. Errors as completion_json.h says,
// with HttpError::param naming the field (messages[i].content, ...).
//
// The answer: "chat.completion" with choices[0].message {role, content},
// finish_reason and usage. Streamed: "chat.completion.chunk" events, the
// first with delta {"role": "assistant", "content": ""}, then content
// deltas, then an empty delta with the finish reason, then (when asked)
// a chunk with no choices and the usage.
// Thread-safety: free functions without shared state.

#include <cstdint>
#include <string>
#include <string_view>

#include "api/completion_json.h"
#include "generation/lm_runner.h"

namespace batchscope {

// `model` gives the chat template and the context length.
HttpExpected<CompletionRequest> parse_chat(std::string_view body, const LmInfo& model);

std::string chat_body(std::string_view id, int64_t created, std::string_view model,
                      const GenRecord& r);
// The first streamed chunk: the assistant's role.
std::string chat_role_chunk(std::string_view id, int64_t created, std::string_view model);
// A content delta, or (with `reason`) the empty delta that ends the choice.
std::string chat_chunk(std::string_view id, int64_t created, std::string_view model,
                       std::string_view text, const FinishReason* reason);
std::string chat_usage_chunk(std::string_view id, int64_t created, std::string_view model,
                             const GenRecord& r);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Text generation requests and answers as JSON:
//  - OpenAI's POST /v1/completions: model, prompt (a string, one string in
//    an array, or token ids), max_tokens (default 16; max_completion_tokens
//    is the same limit and wins when both are given), temperature, top_p, stop (a string
//    or up to 4), seed, stream, stream_options.include_usage, and vLLM's
//    ignore_eos; fields OpenAI defines but this server does not implement
//    (n, best_of, echo, logprobs, suffix, penalties, logit_bias) are
//    accepted at their neutral values and refused by name otherwise; user is
//    ignored; any other field is refused by name. null reads as not given.
//  - Triton's generate extension (POST /v2/models/{m}/generate and
//    /generate_stream): text_input, with max_tokens, temperature, top_p,
//    seed, stop (or stop_words), ignore_eos and stream at the top level or
//    in "parameters"; an "id" is echoed.
// Errors carry their status: 400 for a body that is not a JSON object, 422
// for a field of the wrong type or out of range, naming the field and
// quoting the value (HttpError::param names the field).
// Thread-safety: free functions without shared state.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/infer_json.h"
#include "generation/gen_types.h"

namespace batchscope {

struct CompletionRequest {
  std::string model;                // empty: not given
  std::vector<int32_t> prompt;      // token ids (bytes of the text for a byte-level model)
  uint32_t max_tokens = 16;         // completions' default; see max_tokens_set
  bool max_tokens_set = false;      // false: not given (chat then fills the context)
  bool max_completion_set = false;  // max_completion_tokens was given: it wins over max_tokens
  Sampling sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;  // stream: a last chunk with the token counts
  std::string id;              // Triton: echoed
};

// `vocab_size` bounds token-id prompts.
HttpExpected<CompletionRequest> parse_completion(std::string_view body, int vocab_size);
HttpExpected<CompletionRequest> parse_generate(std::string_view body, int vocab_size);

// Non-streamed /v1/completions answer.
std::string completion_body(std::string_view id, int64_t created, std::string_view model,
                            const GenRecord& r);
// One streamed /v1/completions chunk: `text`, and finish_reason when `reason` is set.
std::string completion_chunk(std::string_view id, int64_t created, std::string_view model,
                             std::string_view text, const FinishReason* reason);
// The last streamed chunk with token counts (stream_options.include_usage).
std::string completion_usage_chunk(std::string_view id, int64_t created, std::string_view model,
                                   const GenRecord& r);
// {"id", "object", "created", "model" (left open for the rest of the answer).
void append_openai_head(std::string& out, std::string_view id, std::string_view object,
                        int64_t created, std::string_view model);
// "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}.
void append_usage(std::string& out, const GenRecord& r);
// OpenAI's error object (openai_error.h), for a stream that ends in an error.
std::string stream_error(int status, std::string_view message);

// Triton's answer: {"id"?, "model_name", "model_version", "text_output"} and,
// when finished, "finish_reason" and the token counts.
std::string generate_body(std::string_view id, std::string_view model, std::string_view text,
                          const GenRecord* r);

// An SSE event: "data: " + json + "\n\n".
std::string sse_event(std::string_view json);

}  // namespace batchscope

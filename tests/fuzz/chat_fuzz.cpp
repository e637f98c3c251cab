// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_chat, the reader of POST /v1/chat/completions bodies,
// and read_stream_event, which reads a streamed event from any
// OpenAI-compatible server for bench. A refusal carries a status, a message
// and (for 422) the field at fault; an accepted request's prompt is the
// template's rendering of byte tokens, with values in range.

#include <cstdint>
#include <string_view>

#include "api/chat_json.h"
#include "http/stream_event.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  const std::string_view body(reinterpret_cast<const char*>(bytes), size);
  const LmInfo model;
  const auto parsed = parse_chat(body, model);
  if (const auto* e = std::get_if<HttpError>(&parsed)) {
    FUZZ_CHECK(e->status == 400 || e->status == 422);
    FUZZ_CHECK(!e->message.empty());
    // A 422 names its field; only a field named "" has an empty name.
    FUZZ_CHECK(e->status == 400 || !e->param.empty() ||
               e->message.find("unknown field ''") != std::string::npos);
  } else {
    const CompletionRequest& r = std::get<CompletionRequest>(parsed);
    FUZZ_CHECK(r.prompt.size() >= model.chat.generation.size());
    for (int32_t t : r.prompt) FUZZ_CHECK(t >= 0 && t < 256);
    FUZZ_CHECK(r.max_tokens >= 1 && r.max_tokens <= 1'000'000);
    FUZZ_CHECK(r.sampling.temperature >= 0 && r.sampling.temperature <= 2);
    FUZZ_CHECK(r.sampling.top_p > 0 && r.sampling.top_p <= 1);
    FUZZ_CHECK(r.stop.size() <= 4 + model.chat.stop.size());
    FUZZ_CHECK(r.prompt.size() <= static_cast<size_t>(model.context_length));
  }
  const StreamEvent ev = read_stream_event(body);
  FUZZ_CHECK(!ev.done || (ev.text.empty() && ev.error.empty()));
  FUZZ_CHECK(ev.text.size() <= size);
  return 0;
}

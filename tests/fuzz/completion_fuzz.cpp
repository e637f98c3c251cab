// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_completion and parse_generate, the readers of POST
// /v1/completions and Triton's generate bodies. A refusal carries a status
// and a message; an accepted request has a prompt of valid token ids, at
// most four non-empty stop strings, and values in range.

#include <cstdint>
#include <string_view>

#include "api/completion_json.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void check(const batchscope::HttpExpected<batchscope::CompletionRequest>& parsed, int vocab) {
  using namespace batchscope;
  if (const auto* e = std::get_if<HttpError>(&parsed)) {
    FUZZ_CHECK(e->status == 400 || e->status == 422);
    FUZZ_CHECK(!e->message.empty());
    return;
  }
  const CompletionRequest& r = std::get<CompletionRequest>(parsed);
  FUZZ_CHECK(!r.prompt.empty());
  for (int32_t t : r.prompt) FUZZ_CHECK(t >= 0 && t < vocab);
  FUZZ_CHECK(r.max_tokens >= 1 && r.max_tokens <= 1'000'000);
  FUZZ_CHECK(r.sampling.temperature >= 0 && r.sampling.temperature <= 2);
  FUZZ_CHECK(r.sampling.top_p > 0 && r.sampling.top_p <= 1);
  FUZZ_CHECK(r.stop.size() <= 4);
  for (const auto& s : r.stop) FUZZ_CHECK(!s.empty() && s.size() <= 256);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(bytes), size);
  check(batchscope::parse_completion(body, 257), 257);
  check(batchscope::parse_generate(body, 257), 257);
  return 0;
}

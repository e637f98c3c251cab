// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_llm_trace, the reader of `bench --trace` files (Azure,
// BurstGPT, Mooncake and timestamp CSVs). An accepted trace has one length
// pair an arrival (or none), offsets from 0 that never go back, and lengths
// within the documented range; fitting it to a context leaves every request
// inside that context.

#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "traffic/llm_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  const std::string_view text(reinterpret_cast<const char*>(bytes), size);
  auto r = parse_llm_trace(text);
  if (!r) {
    FUZZ_CHECK(!r.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(!r->at.empty());
  FUZZ_CHECK(r->lengths.empty() || r->lengths.size() == r->at.size());
  FUZZ_CHECK(r->lengths.empty() == (r->format == "timestamps"));
  int64_t previous = 0;
  for (size_t i = 0; i < r->at.size(); ++i) {
    const int64_t ns = r->at[i].count();
    FUZZ_CHECK(ns >= previous);
    FUZZ_CHECK(i > 0 || r->format == "timestamps" || ns == 0);
    previous = ns;
  }
  for (const GenLengths& l : r->lengths) {
    FUZZ_CHECK(l.prompt <= 100'000'000 && l.max_tokens <= 100'000'000);
  }
  std::vector<GenLengths> fitted = r->lengths;
  fit_to_context(fitted, 64);
  for (const GenLengths& l : fitted) {
    FUZZ_CHECK(l.prompt >= 1 && l.max_tokens >= 1 && l.prompt + l.max_tokens <= 64);
  }
  return 0;
}

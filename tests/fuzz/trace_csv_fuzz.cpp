// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_trace_csv, the reader of `bench --pattern trace` files.
// Offsets it accepts must be a non-empty, non-decreasing list within the
// range it documents (0 to 1e15 us).

#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "traffic/trace_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  const std::string_view text(reinterpret_cast<const char*>(bytes), size);
  auto r = parse_trace_csv(text);
  if (!r) {
    FUZZ_CHECK(!r.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(!r->empty());
  constexpr int64_t kMaxNs = int64_t{1'000'000'000'000'000'000};  // 1e15 us
  int64_t previous = 0;
  for (const Duration& d : *r) {
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    FUZZ_CHECK(ns >= previous && ns <= kMaxNs);
    previous = ns;
  }
  return 0;
}

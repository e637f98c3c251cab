// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: CostModel::from_profile_json, the reader of `--cost FILE`
// (what `batchscope profile --json` and `bench --cost-out` write). A model it
// accepts gives finite, non-negative run times, and comes back unchanged
// through to_json and from_profile_json again.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "tuning/cost_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  const std::string_view json(reinterpret_cast<const char*>(bytes), size);
  auto m = CostModel::from_profile_json(json);
  if (!m) {
    FUZZ_CHECK(!m.error().message.empty());
    return 0;
  }
  for (size_t b : {size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{4096}}) {
    const double us = m->cost_us(b);
    FUZZ_CHECK(std::isfinite(us) && us >= 0);
    FUZZ_CHECK(m->spread(b) >= 0 && m->spread(b) < 1);
    for (double u : {0.0, 0.5, 1.0}) {
      const double f = m->jitter_factor(b, u);
      FUZZ_CHECK(std::isfinite(f) && f >= 0);
    }
  }
  for (double u : {0.0, 0.3, 1.0}) {
    FUZZ_CHECK(std::isfinite(m->overhead_us(u)) && m->overhead_us(u) >= 0);
  }
  FUZZ_CHECK(!m->describe().empty());
  const std::string written = m->to_json();
  auto back = CostModel::from_profile_json(written);
  if (!back) std::fprintf(stderr, "%s\n%s\n", written.c_str(), back.error().message.c_str());
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->to_json() == written);
  FUZZ_CHECK(back->overheads_us() == m->overheads_us());
  return 0;
}

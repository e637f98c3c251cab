// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: CostModel::from_profile_json, the reader of `--cost FILE` and
// of the kept costs (what `batchscope profile --json`, `bench --cost-out` and
// the cost cache write), and check_made_for, which reads a kept cost's key.
// A model it accepts gives finite, non-negative run times, sends that its
// send lag never puts before their time or out of order, and comes back
// unchanged through to_json and from_profile_json again.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "tuning/cost_cache.h"
#include "tuning/cost_model.h"
#include "tuning/send_lag.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  const std::string_view json(reinterpret_cast<const char*>(bytes), size);
  const CostKey key{"mlp", "sha256:ab", "cpu", R"({"machine": {"cores": 2}})"};
  const Status made = check_made_for(std::string(json), key, "kept.json");
  FUZZ_CHECK(made.ok() || made.message().rfind("kept.json ", 0) == 0);
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
  for (size_t b : {size_t{1}, size_t{3}, size_t{64}}) {
    for (uint32_t length : {0u, 1u, 16u, 100u, 4096u, UINT32_MAX}) {
      FUZZ_CHECK(std::isfinite(m->length_extra_us(b, length)));
    }
  }
  FUZZ_CHECK(!m->describe().empty());
  for (size_t lanes : {size_t{1}, size_t{2}, size_t{5}}) {
    const SendLagModel& lag = m->send_lag(lanes);
    if (lag.empty()) continue;
    SendLagDraw draw(lag, 7);
    TimePoint last(std::chrono::seconds(1));
    for (int i = 0; i < 64; ++i) {
      const TimePoint intended =
          TimePoint(std::chrono::seconds(1)) + std::chrono::microseconds(97 * i);
      const TimePoint sent = draw.send(intended, static_cast<size_t>(i % 4), i % 3 == 0, last);
      FUZZ_CHECK(sent >= intended && sent >= last);
      last = sent;
    }
  }
  const std::string written = m->to_json();
  auto back = CostModel::from_profile_json(written);
  if (!back) std::fprintf(stderr, "%s\n%s\n", written.c_str(), back.error().message.c_str());
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->to_json() == written);
  FUZZ_CHECK(back->overheads_us() == m->overheads_us());
  return 0;
}

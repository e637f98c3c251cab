// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope demo`'s run: Poisson traffic from a thread of its own into the
// batching engine over a synthetic model, a window of figures each second,
// and (half way, unless told not to) max_wait retuned live to a quarter.
// At the end, the totals and whether every admitted request was answered
// exactly once.
// Thread-safety: run_demo_traffic() blocks its caller; `each_second` is
// called on it.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>

#include "batching/engine.h"
#include "batching/synthetic_runner.h"
#include "common/status.h"
#include "runs/metrics.h"

namespace batchscope {

struct DemoRequest {
  double seconds = 20;  // 0: until `stop`
  double rate = 1500;   // requests per second
  SyntheticCost cost{.fixed_us = 500, .per_item_us = 20};
  Options options;
  bool retune = true;
  uint64_t seed = 1;
};

struct DemoSecond {
  int second = 0;                           // since the start, from 1
  MetricsWindow window;                     // what completed in it
  uint64_t sent = 0;                        // requests sent in it
  EngineStatus status;                      // the engine at its end
  std::optional<uint32_t> retuned_wait_us;  // max_wait set live at its end
};

struct DemoTotals {
  uint64_t sent = 0, admitted = 0, answered = 0;
  EngineCounters counters;
  MetricsWindow window;  // the whole run
  // Every admitted request completed, and every request was answered
  // once: admitted or rejected at once.
  bool exactly_once = false;
};

// The engine's error when it does not start.
Expected<DemoTotals> run_demo_traffic(const DemoRequest& r, const std::atomic<bool>* stop,
                                      const std::function<void(const DemoSecond&)>& each_second);

}  // namespace batchscope

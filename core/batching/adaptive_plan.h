// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The adaptive strategy's plans: for an arrival rate, the fifo limits (batch
// cap and wait) to apply. A plan holds two choices, efficient (fuller
// batches within a latency budget) and fast (the lowest p99); the strategy
// (adaptive.h) picks one of them by its guard.
//
// Who makes plans. This room owns the interface, AdaptivePlanner; the
// planner itself replays traffic through the predictor, which simulates this
// room's strategies, so it lives above, in core/tuning
// (tuning/adaptive_planner.h: make_adaptive_plan). An engine is handed one
// (BasicEngine::set_adaptive_planner) and refuses the adaptive strategy
// without it.
//
// Rates are grouped in geometric buckets (kAdaptiveRateStep apart), so a
// strategy plans each bucket once and looks plans up in O(1).
//
// Thread-safety: plain values and pure functions; a planner must be a pure
// function too (it runs on the engine's planner thread).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "common/options.h"

namespace batchscope {

struct AdaptiveCostModel;

inline constexpr size_t kAdaptiveRateBuckets = 96;  // 1 req/s .. 1.25^96 (about 2e9) req/s
inline constexpr double kAdaptiveRateStep = 1.25;   // ratio between neighbouring buckets
inline constexpr uint64_t kAdaptivePlanRequests = 1000;
inline constexpr double kAdaptiveBudgetShare = 0.5;  // of the target, for the efficient choice

struct AdaptiveLimits {
  uint32_t cap = 1;
  int64_t wait_ns = 0;
};

struct AdaptivePlan {
  bool valid = false;
  AdaptiveLimits efficient;
  AdaptiveLimits fast;
  double efficient_p99_ms = 0;  // predicted, for tests and read-outs
  double fast_p99_ms = 0;
};

// Nearest-rank p99 of `v` (the ceil(0.99 n)-th smallest; 0 when empty).
// Reorders `v`.
inline double nearest_rank_p99(std::span<double> v) {
  if (v.empty()) return 0;
  const size_t rank = (99 * v.size() + 99) / 100;  // ceil(0.99 n), >= 1
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank - 1), v.end());
  return v[rank - 1];
}

// The bucket a rate falls in (rates below 1 req/s in bucket 0).
size_t adaptive_rate_bucket(double rate_per_s);
// The rate a bucket is planned at: the geometric middle of its range.
double adaptive_bucket_rate(size_t bucket);

// Makes the plan for arrivals at `rate_per_s` on t(b) = model, under the
// options' lanes, max_batch_size, max_wait_us, queue_capacity,
// request_timeout_ms and target_p99_ms. Pure (it may hold constant data,
// such as a measured cost, but no state that calls change), called off the
// engine's lock; an invalid plan means "no evidence to plan on".
using AdaptivePlanner = std::function<AdaptivePlan(
    double rate_per_s, const AdaptiveCostModel& model, const Options& o)>;

}  // namespace batchscope

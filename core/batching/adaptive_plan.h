#pragma once
// The adaptive strategy's plans: for an arrival rate, the fifo limits (batch
// cap and wait) that serve Poisson traffic at that rate best on the model as
// fitted so far, found by replaying the traffic through the predictor, the
// same way `batchscope tune` searches, on a small grid.
//
// A plan holds two choices:
//  - efficient: among the candidates that lose at most kLossTolerance of
//    the requests and whose p99 is within kAdaptiveBudgetShare of the target,
//    the one that runs the fewest batches (fuller batches: less model time
//    per request), then the lowest p99;
//  - fast: the lowest p99 that loses at most kLossTolerance (the least lossy
//    when none does), then the fewest batches.
// The efficient choice falls back to the fast one when no candidate is within
// the budget.
//
// The grid: waits 0, t(1)/4, t(1)/2, t(1), 2 t(1) and a quarter of the
// target, each at most max_wait_us; for each, max_batch_size, then the caps
// 1 (with no wait only), 2, 4, ... below the largest batch max_batch_size
// cut (a cap above every batch changes nothing), leaving out caps whose lanes
// cannot serve the rate at all. Every candidate replays the same
// kAdaptivePlanRequests Poisson arrivals (common random numbers, so
// candidates differ only by their limits).
//
// Rates are grouped in geometric buckets (kAdaptiveRateStep apart), so a
// strategy plans each bucket once and looks plans up in O(1).
//
// Cost: kAdaptivePlanRequests simulated requests per candidate; at light load
// a handful of candidates (the batches stay small), under heavy load a few
// dozen. bench_engine's BM_AdaptivePlan measures it. Thread-safety: pure
// functions.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "options.h"

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

// The plan for Poisson arrivals at `rate_per_s` on t(b) = model, under the
// options' lanes, max_batch_size, max_wait_us, queue_capacity,
// request_timeout_ms and target_p99_ms.
AdaptivePlan make_adaptive_plan(double rate_per_s, const AdaptiveCostModel& model,
                                const Options& o);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Drives an AdaptiveStrategy with synthetic batch and request records with
// explicit timestamps, for the adaptive strategy's tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "batching/adaptive.h"
#include "tuning/adaptive_planner.h"

namespace batchscope::adaptive_test {

inline constexpr TimePoint kStart = TimePoint(std::chrono::seconds(1000));

// What a run of synthetic batches looks like. Each request arrives `gap` after
// the one before it, across batches too, so the true arrival rate is 1 / gap
// from the first request of a run on, even when the previous run was different.
struct Traffic {
  uint32_t size = 8;  // requests per batch, at most max_batch_size
  Duration gap = microseconds(1000);
  Duration run_fixed = microseconds(0);  // run time = run_fixed + run_per_item * size
  Duration run_per_item = microseconds(125);
  std::vector<Duration> latencies = {milliseconds(60)};  // end-to-end, cycled over requests
  // Requests of varying length, cycled over requests (empty: none): a batch
  // padded to its longest L runs run_per_token * size * L longer.
  std::vector<uint32_t> lengths;
  Duration run_per_token = microseconds(0);
};

inline Options adaptive_options(uint32_t max_batch = 32, int64_t max_wait_us = 2000,
                                double target_ms = 50) {
  Options o;
  o.strategy = StrategyKind::kAdaptive;
  o.max_batch_size = max_batch;
  o.max_wait_us = max_wait_us;
  o.target_p99_ms = target_ms;
  return o;
}

// Drives one AdaptiveStrategy with synthetic records and explicit timestamps.
class Feeder {
 public:
  // Plans with `planner` (the predictor's by default).
  explicit Feeder(Options o, AdaptivePlanner planner = make_adaptive_plan) : o_(o), s_(planner) {}

  Options& options() { return o_; }
  const AdaptiveStrategy& strategy() const { return s_; }
  const AdaptiveState& state() const { return s_.state(); }
  Limits limits(double live_rate = 0, size_t queued = 0, uint32_t idle_lanes = 1) const {
    QueueView q;
    q.size = queued;
    q.oldest_arrival = kStart;
    q.arrival_rate_per_s = live_rate;
    q.idle_lanes = idle_lanes;
    return s_.limits(q, o_);
  }

  void batch(const Traffic& t) {
    const uint32_t size = std::clamp<uint32_t>(t.size, 1, o_.max_batch_size);
    std::vector<RequestRecord> reqs;
    std::vector<uint32_t> lens;
    for (uint32_t i = 0; i < size; ++i) {
      if (!t.lengths.empty()) lens.push_back(t.lengths[length_index_++ % t.lengths.size()]);
      RequestRecord r;
      r.batch_id = next_batch_;
      r.batch_size = size;
      last_arrival_ = next_request_ == 1 ? kStart : last_arrival_ + t.gap;
      r.id = next_request_++;
      r.times.arrival = last_arrival_;
      r.times.completed = last_arrival_ + t.latencies[latency_index_++ % t.latencies.size()];
      reqs.push_back(r);
    }
    BatchRecord b;
    b.id = next_batch_++;
    b.size = size;
    b.reason = BatchReason::kTimeout;
    b.oldest_arrival = reqs.front().times.arrival;
    b.batched = reqs.back().times.arrival;
    b.run_start = b.batched;
    b.run_end = b.run_start + t.run_fixed + t.run_per_item * size;
    for (uint32_t l : lens) {
      b.longest = std::max(b.longest, l);
      b.length_sum += l;
    }
    b.run_end += t.run_per_token * size * b.longest;
    for (auto& r : reqs) {
      r.times.batched = b.batched;
      r.times.run_start = b.run_start;
      r.times.run_end = b.run_end;
    }
    s_.observe(b, reqs, lens, o_);
    if (StrategyTask task = s_.take_task()) task()(s_);
  }

 private:
  Options o_;
  AdaptiveStrategy s_;
  TimePoint last_arrival_ = kStart;
  RequestId next_request_ = 1;
  uint64_t next_batch_ = 1;
  size_t latency_index_ = 0;
  size_t length_index_ = 0;
};

}  // namespace batchscope::adaptive_test

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// GenMetrics: folds the generation engine's request and step records into
// fixed time windows (for live plots) and all-time totals (for /metrics and
// run reports), like MetricsAggregator does for request-level batching. Pure:
// every figure comes from the records' own timestamps. A request is filed
// under the window it finished in, a step under the window it ended in.
// Latency histograms count requests that finished with text (stop or
// length); the others are counted by reason only.
// Thread-safety: not thread-safe; one owner folds, others read copies.

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "generation/gen_types.h"
#include "runs/histogram.h"

namespace batchscope {

inline constexpr size_t kFinishReasonCount = 5;

struct GenWindow {
  TimePoint start{};
  Duration length{0};

  std::array<uint64_t, kFinishReasonCount> reasons{};  // by FinishReason
  uint64_t finished = 0;
  LogHistogram queue_wait_ns;  // arrival to first scheduled
  LogHistogram ttft_ns;        // arrival to first token
  LogHistogram itl_ns;         // every gap between consecutive tokens
  LogHistogram e2e_ns;         // arrival to the end

  uint64_t steps = 0;
  uint64_t decodes = 0;         // sequence-steps that decoded
  uint64_t prefill_tokens = 0;  // prompt tokens processed (recomputes included)
  uint64_t output_tokens = 0;
  uint64_t preemptions = 0;
  LogHistogram step_ns;
  uint64_t running_sum = 0;  // over steps, for the mean
  uint64_t waiting_sum = 0;
  uint32_t running_max = 0;
  uint32_t waiting_max = 0;
  uint32_t blocks_used_max = 0;
  uint32_t blocks_total = 0;

  void merge(const GenWindow& o);
  double seconds() const { return std::chrono::duration<double>(length).count(); }
};

class GenMetrics {
 public:
  explicit GenMetrics(Duration window = std::chrono::seconds(1), size_t history = 600);

  void fold(std::span<const GenRecord> requests, std::span<const StepRecord> steps);
  void clear();

  const GenWindow& totals() const { return totals_; }
  const std::deque<GenWindow>& windows() const { return windows_; }
  Duration window() const { return window_; }

 private:
  GenWindow* window_at(TimePoint t);

  // Each lane's state after its last step (running, waiting, blocks used
  // and in its pool): with lanes, a step's own counts are its lane's, and
  // the engine's are their sums.
  struct LaneState {
    uint32_t running = 0, waiting = 0, blocks_used = 0, blocks_total = 0;
  };
  std::vector<LaneState> lanes_;
  Duration window_;
  size_t history_;
  std::deque<GenWindow> windows_;
  GenWindow totals_;
};

}  // namespace batchscope

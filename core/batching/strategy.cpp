// SPDX-License-Identifier: GPL-3.0-or-later
#include "batching/strategy.h"

#include <algorithm>

#include "batching/adaptive.h"

namespace batchscope {

Decision decide_fifo(const QueueView& q, TimePoint now, const Limits& limits) {
  const size_t cap = std::max<size_t>(limits.max_batch, 1);
  if (q.size == 0) return Decision::idle();
  if (q.size >= cap) return Decision::dispatch(cap, BatchReason::kFull);
  const TimePoint deadline = q.oldest_arrival + limits.max_wait;
  if (now >= deadline) return Decision::dispatch(q.size, BatchReason::kTimeout);
  return Decision::wait(deadline, cap);
}

Limits FifoStrategy::limits(const QueueView&, const Options& o) const {
  return {o.max_batch_size, microseconds(o.max_wait_us)};
}

Decision FifoStrategy::decide(const QueueView& q, TimePoint now, const Options& o) const {
  return decide_fifo(q, now, limits(q, o));
}

std::unique_ptr<Strategy> make_strategy(StrategyKind kind, const AdaptivePlanner& planner) {
  if (kind == StrategyKind::kAdaptive) return std::make_unique<AdaptiveStrategy>(planner);
  return std::make_unique<FifoStrategy>();
}

}  // namespace batchscope

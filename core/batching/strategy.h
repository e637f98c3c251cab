// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Batch formation strategies. A decision is a function of what is queued, the
// time, and the options: dispatch n requests now, wait until t, or idle. The
// scheduler asks whenever something that could change the answer happens.
//
// Priority classes would slot in as another decide(). Iteration-level
// (continuous) batching of language models is not a Strategy: it lives in
// core/generation, whose planner picks each step's sequences.
//
// Thread-safety: decide() and observe() are called by the engine under its
// lock, one call at a time; implementations need no locking of their own.

#include <cstddef>
#include <functional>
#include <memory>
#include <span>

#include "batching/adaptive_plan.h"
#include "common/clock.h"
#include "common/options.h"
#include "runs/records.h"

namespace batchscope {

// What a strategy may look at. Built by the engine under its lock.
struct QueueView {
  size_t size = 0;                // requests waiting
  TimePoint oldest_arrival{};     // arrival of the head request (valid when size > 0)
  double arrival_rate_per_s = 0;  // smoothed recent admission rate (time constant 500 ms)
  double fast_rate_per_s = 0;     // the same over 100 ms: a burst shows within a few arrivals
  // Lanes free to take a batch now, the deciding leader included (>= 1 when
  // a leader decides; 0 in a snapshot taken while every lane runs).
  uint32_t idle_lanes = 1;
};

struct Decision {
  enum class Kind { kDispatch, kWait, kIdle };
  Kind kind = Kind::kIdle;
  size_t count = 0;                         // kDispatch: how many to cut from the head
  BatchReason reason = BatchReason::kFull;  // kDispatch: why
  TimePoint until = kNever;                 // kWait: dispatch at this time at the latest
  // kWait/kIdle: the queue size at which the answer would become kDispatch
  // before `until`, so the scheduler is woken by arrivals only when it matters.
  size_t wake_at_size = 1;

  static Decision dispatch(size_t n, BatchReason r) {
    return {.kind = Kind::kDispatch, .count = n, .reason = r, .wake_at_size = 0};
  }
  static Decision wait(TimePoint t, size_t wake_at) {
    return {.kind = Kind::kWait, .until = t, .wake_at_size = wake_at};
  }
  static Decision idle() { return {}; }
};

// The effective batch cap and wait a strategy is applying now.
struct Limits {
  size_t max_batch = 1;
  Duration max_wait{0};
};

// The fifo rule with explicit limits, the base of every strategy:
//   empty queue                      -> idle (any arrival wakes)
//   size >= max_batch                -> dispatch max_batch now (reason full)
//   now >= oldest + max_wait         -> dispatch all queued now (reason timeout)
//   otherwise                        -> wait until oldest + max_wait, or until
//                                       max_batch are queued
Decision decide_fifo(const QueueView& q, TimePoint now, const Limits& limits);

class Strategy;
// Slow work a strategy wants done without the engine's lock (the adaptive
// strategy's planning): the task runs unlocked, on the engine's planner
// thread (so no lane waits for it), and returns what to apply,
// which is applied under the lock again, and only to the strategy that asked
// if it is still the one in force.
using StrategyApply = std::function<void(Strategy&)>;
using StrategyTask = std::function<StrategyApply()>;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual StrategyKind kind() const = 0;
  virtual Decision decide(const QueueView& q, TimePoint now, const Options& o) const = 0;
  // The limits decide() applies for this queue state (shown in snapshots).
  virtual Limits limits(const QueueView& q, const Options& o) const = 0;
  // Called after every batch completes, with its request records and, for
  // requests of varying length, each one's length in the same order (empty
  // where lengths do not vary).
  virtual void observe(const BatchRecord& batch, std::span<const RequestRecord> requests,
                       std::span<const uint32_t> lengths, const Options& o) {
    (void)batch, (void)requests, (void)lengths, (void)o;
  }
  // Called under the lock after observe(); empty when there is nothing to do.
  virtual StrategyTask take_task() { return {}; }
};

class FifoStrategy final : public Strategy {
 public:
  StrategyKind kind() const override { return StrategyKind::kFifo; }
  Decision decide(const QueueView& q, TimePoint now, const Options& o) const override;
  Limits limits(const QueueView& q, const Options& o) const override;
};

// The strategy for `kind`; the adaptive one makes its plans with `planner`.
std::unique_ptr<Strategy> make_strategy(StrategyKind kind, const AdaptivePlanner& planner);

}  // namespace batchscope

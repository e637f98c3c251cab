// SPDX-License-Identifier: GPL-3.0-or-later
// BasicEngine, a lane's batch: cutting it from the queue under the lock
// (taking the requests a padding policy picks), then running it on the
// lane's runner and answering each request, with the lock let go. Included
// through basic_engine_impl.h.

#pragma once

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "batching/basic_engine.h"

namespace batchscope {

template <class In, class Out>
void BasicEngine<In, Out>::cut_locked(size_t n, BatchReason reason, TimePoint now, int lane,
                                      LaneScratch& s, BatchRecord& b) {
  n = std::min(n, queue_.size());
  const uint32_t depth_before = saturate_u32(queue_.size());
  b = BatchRecord{};
  // A padding policy may take requests from the middle of the queue; where
  // lengths do not vary, each takes the head's n as longest does.
  // A prepare stage gives its requests' lengths as it hands them back.
  const bool picks = options_.padding != Padding::kLongest && (length_of_ || stage_);
  if (picks) {
    pick_locked(n, s.picked);
    n = s.picked.size();
  }
  const bool from_head = !picks || s.picked.back() + 1 == n;  // rising: positions 0..n-1
  if (!from_head) {
    take_picked_locked(s.picked, s.batch);
  } else if (n == queue_.size() && s.batch.empty()) {
    queue_.swap(s.batch);  // the whole queue, without moving a request
  } else {
    for (size_t i = 0; i < n; ++i) {
      s.batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  if (queue_.empty()) {
    clear_expiries_locked();
  } else if (expiries_.size() > 2 * queue_.size() + 64) {
    prune_expiries_locked();
  }
  b.oldest_arrival = s.batch.front().times.arrival;
  for (size_t i = 0; i < s.batch.size(); ++i) {
    b.longest = std::max(b.longest, s.batch[i].length);
    b.length_sum += s.batch[i].length;
  }
  b.id = next_batch_id_++;
  b.size = saturate_u32(n);
  b.reason = reason;
  b.lane = static_cast<uint16_t>(lane);
  b.batched = now;
  b.queue_depth_after = saturate_u32(queue_.size());
  ++counters_.batches;
  ++counters_.batches_by_reason[static_cast<int>(reason)];
  if (records_.depth.size() < record_capacity_) {
    records_.depth.push_back({now, depth_before, std::max(peak_depth_, depth_before), staged_});
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::run_batch_locked(Runner& runner, MutexLock& lk, LaneScratch& s,
                                            BatchRecord& batch) {
  release_mu(lk);
  const size_t n = s.batch.size();
  s.inputs.clear();
  for (size_t i = 0; i < n; ++i) s.inputs.push_back(std::move(s.batch[i].input));
  batch.run_start = clock_->now();
  Expected<std::vector<Out>> result = Error{ErrorCode::kInternal, "the runner did not run"};
  try {
    result = runner.run(std::span<In>(s.inputs));
  } catch (const std::exception& e) {
    result = Error{ErrorCode::kModelError, std::string("the model failed: ") + e.what()};
  } catch (...) {
    result = Error{ErrorCode::kModelError, "the model failed with an unknown exception"};
  }
  batch.run_end = clock_->now();
  if (result.ok() && result->size() != n) {
    result = Error{ErrorCode::kModelError, "the runner returned " + std::to_string(result->size()) +
                                               " outputs for a batch of " + std::to_string(n)};
  }
  batch.failed = !result.ok();
  // Requests the runner failed one by one (runner.h's request_faults).
  std::span<const Status> faults;
  if (!batch.failed) faults = runner.request_faults();
  if (faults.size() != n) faults = {};
  size_t faulted = 0;
  const TimePoint completed = clock_->now();
  // The runner's work after the model (postprocess), at the end of the run.
  const Duration post = batch.failed ? Duration::zero() : runner.last_postprocess();
  const TimePoint post_start = post > Duration::zero() && post <= batch.run_end - batch.run_start
                                   ? batch.run_end - post
                                   : TimePoint{};
  // The runner's work before the model (a lane's preparing), at its start.
  const Duration pre = batch.failed ? Duration::zero() : runner.last_preprocess();
  const TimePoint model_start =
      pre > Duration::zero() && pre + post <= batch.run_end - batch.run_start
          ? batch.run_start + pre
          : TimePoint{};
  batch.model_start = model_start;
  // Lengths the runner found as it prepared the requests (those a pool
  // prepared were known as they were queued, the others were not): the
  // padding it ran.
  const std::span<const uint32_t> prepared_lengths =
      batch.failed ? std::span<const uint32_t>() : runner.last_lengths();
  if (prepared_lengths.size() == n) {
    batch.longest = 0;
    batch.length_sum = 0;
    for (size_t i = 0; i < n; ++i) {
      s.batch[i].length = prepared_lengths[i];
      batch.longest = std::max(batch.longest, prepared_lengths[i]);
      batch.length_sum += prepared_lengths[i];
    }
  }
  s.records.clear();
  s.lengths.clear();
  for (size_t i = 0; i < n; ++i) {
    Pending& m = s.batch[i];
    StageTimes& t = m.times;
    t.batched = batch.batched;
    t.run_start = batch.run_start;
    t.run_end = batch.run_end;
    t.post_start = post_start;
    t.model_start = model_start;
    t.completed = completed;
    const bool fault = batch.failed || (!faults.empty() && !faults[i].ok());
    faulted += fault && !batch.failed;
    s.records.push_back(
        {m.id, batch.id, t, batch.size, fault ? Outcome::kModelError : Outcome::kOk});
    if (batch.longest > 0) s.lengths.push_back(m.length);
  }
  reacquire_mu(lk);
  // Counted before the callbacks run, so a caller that saw its response also
  // sees it in the counters.
  counters_.model_errors += batch.failed ? n : faulted;
  counters_.ok += batch.failed ? 0 : n - faulted;
  if (batch.failed) ++counters_.failed_batches;
  record_requests_locked(s.records);
  if (records_.batches.size() < record_capacity_) {
    records_.batches.push_back(batch);
  } else if (record_capacity_ > 0) {
    ++records_.dropped;
    ++counters_.records_dropped;
  }
  strategy_->observe(batch, s.records, s.lengths, options_);
  StrategyTask task = strategy_->take_task();
  if (task && !plan_inline_) {
    hand_to_planner_locked(std::move(task));
    task = nullptr;
  }
  const uint64_t generation = strategy_generation_;
  release_mu(lk);
  uint64_t callback_failures = 0;
  for (size_t i = 0; i < n; ++i) {
    Pending& m = s.batch[i];
    Response<Out> r{m.id,
                    batch.failed ? Expected<Out>(result.error())
                    : (!faults.empty() && !faults[i].ok())
                        ? Expected<Out>(faults[i].error())
                        : Expected<Out>(std::move(result.value()[i])),
                    m.times, batch.id, batch.size};
    try {
      m.done(std::move(r));
    } catch (...) {
      ++callback_failures;
    }
    m.done = nullptr;  // release captured state on this thread, now
  }
  s.batch.clear();
  // On an injected clock the strategy's work is done here, before the lane
  // leads again: it takes no time on that clock, as in the predictor.
  StrategyApply apply;
  if (task) {
    try {
      apply = task();
    } catch (...) {  // out of memory while planning: the strategy goes without
    }
  }
  reacquire_mu(lk);
  counters_.callback_exceptions += callback_failures;
  if (task) ++counters_.plans;
  if (apply && generation == strategy_generation_) apply(*strategy_);
}

}  // namespace batchscope

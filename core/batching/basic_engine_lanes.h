// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BasicEngine, the lane side: spawning lanes, leading (asking the strategy and
// sleeping until its deadline), cutting batches and running them. Included
// through basic_engine_impl.h.

#include <algorithm>
#include <cassert>
#include <exception>
#include <string>
#include <utility>

#include "batching/basic_engine.h"

namespace batchscope {

template <class In, class Out>
void BasicEngine<In, Out>::spawn_lanes(uint32_t count,
                                       std::vector<std::unique_ptr<Runner>> runners) {
  MutexLock lg(lanes_mu_);
  if (threads_.size() < count) threads_.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    {
      MutexLock g(mu_);
      if (stopping_ || i >= target_lanes_) return;
      if (lane_running_.size() <= i) lane_running_.resize(i + 1, false);
      if (lane_running_[i]) continue;
      lane_running_[i] = true;
    }
    if (threads_[i].joinable()) threads_[i].join();  // a retired lane on its way out
    std::unique_ptr<Runner> r = i < runners.size() ? std::move(runners[i]) : nullptr;
    threads_[i] = std::thread(
        [this, i, r = std::move(r)]() mutable { lane_thread(static_cast<int>(i), std::move(r)); });
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::lane_thread(int lane, std::unique_ptr<Runner> runner) {
  const TightTimerSlack slack;  // the leader's deadline is the batching window
  if (!runner) {
    std::string why;
    try {
      runner = factory_(lane);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!runner) {
      {
        MutexLock g(mu_);
        lane_error_ = "could not make the runner for lane " + std::to_string(lane) +
                      (why.empty() ? "" : ": " + why);
        lane_running_[lane] = false;
        ++lanes_prepared_;  // as far as it will get: start() must not wait for it
      }
      prepared_cv_.notify_all();
      return;
    }
  }
  std::string why;
  try {
    if (Status s = runner->prepare(); !s) why = s.error().message;
  } catch (const std::exception& e) {
    why = e.what();
  }
  {
    MutexLock g(mu_);
    ++lanes_prepared_;
    if (!why.empty()) {
      lane_error_ = "lane " + std::to_string(lane) + " could not prepare its runner: " + why;
      lane_running_[lane] = false;
    } else {
      ++lanes_ready_;
      ++live_lanes_;  // counted from here, so a lane on its way into the loop is not at rest
    }
  }
  prepared_cv_.notify_all();
  if (why.empty()) lane_loop(lane, *runner);
  runner.reset();  // a model instance is released on the thread that used it
}

template <class In, class Out>
bool BasicEngine<In, Out>::lane_should_exit_locked(int lane) const {
  if (static_cast<uint32_t>(lane) >= target_lanes_) return true;
  return stopping_ && (stop_mode_ == StopMode::kFail || queue_.empty());
}

template <class In, class Out>
void BasicEngine<In, Out>::lane_loop(int lane, Runner& runner) {
  LaneScratch s;
  BatchRecord batch;
  MutexLock lk(mu_);
  while (!lane_should_exit_locked(lane)) {
    if (leader_present_) {
      ++followers_waiting_;
      follower_cv_.wait(lk.unique());
      --followers_waiting_;
      continue;
    }
    leader_present_ = true;
    promote_pending_ = false;
    const bool got_batch = lead_locked(lane, lk, s, batch);
    leader_present_ = false;
    // Hand the lead on only when there is work for it; otherwise the next
    // arrival promotes a follower, so an idle engine sleeps without churn.
    if (followers_waiting_ > 0 && !promote_pending_ && (!queue_.empty() || !got_batch)) {
      promote_pending_ = true;
      ++counters_.wakeups;
      follower_cv_.notify_one();
    }
    if (!promote_pending_ && !queue_.empty()) arm_reaper_locked(earliest_expiry_locked());
    if (!got_batch) break;
    ++busy_lanes_;
    run_batch_locked(runner, lk, s, batch);
    --busy_lanes_;
  }
  // A follower woken to lead may be this exiting lane; pass the turn on.
  if (!leader_present_ && followers_waiting_ > 0) {
    promote_pending_ = true;
    ++counters_.wakeups;
    follower_cv_.notify_one();
  }
  --live_lanes_;
  lane_running_[lane] = false;
}

template <class In, class Out>
void BasicEngine<In, Out>::release_mu(MutexLock& lk) {
  assert(lk.unique().mutex() == &mu_.native());
  lk.unlock();
}

template <class In, class Out>
void BasicEngine<In, Out>::reacquire_mu(MutexLock& lk) {
  assert(lk.unique().mutex() == &mu_.native());
  lk.lock();
}

template <class In, class Out>
bool BasicEngine<In, Out>::lead_locked(int lane, MutexLock& lk, LaneScratch& s,
                                       BatchRecord& batch) {
  for (;;) {
    if (lane_should_exit_locked(lane)) return false;
    TimePoint now = clock_->now();
    take_expired_locked(now, s.unrun);
    if (!s.unrun.empty()) {
      release_mu(lk);
      fail_all(s.unrun, ErrorCode::kTimedOut, "", now);
      reacquire_mu(lk);
      continue;
    }
    const QueueView q = view_locked(now);
    Decision d;
    if (stopping_) {
      d = Decision::dispatch(std::min<size_t>(q.size, options_.max_batch_size),
                             BatchReason::kDrain);
      cut_bucket_ = -1;  // buckets: the head's
    } else if (options_.padding == Padding::kBuckets) {
      d = decide_buckets_locked(q, now);
    } else {
      bucket_wake_at_ = 0;
      d = strategy_->decide(q, now, options_);
    }
    if (d.kind == Decision::Kind::kDispatch && d.count > 0) {
      cut_locked(d.count, d.reason, now, lane, s, batch);
      return true;
    }
    TimePoint until = d.kind == Decision::Kind::kWait ? d.until : kNever;
    until = std::min(until, earliest_expiry_locked());
    wake_at_size_ = d.kind == Decision::Kind::kWait ? d.wake_at_size : 1;
    leader_until_ = until;
    leader_parked_ = true;
    wake_pending_ = false;
    clock_->wait_until(lk.unique(), leader_bell_, until);
    leader_parked_ = false;
    wake_pending_ = false;
  }
}

template <class In, class Out>
QueueView BasicEngine<In, Out>::view_locked(TimePoint now) const {
  QueueView q;
  q.size = queue_.size();
  if (!queue_.empty()) q.oldest_arrival = queue_.front().times.arrival;
  q.arrival_rate_per_s = arrivals_.rate(now);
  q.fast_rate_per_s = arrivals_.fast_rate(now);
  q.idle_lanes = live_lanes_ > busy_lanes_ ? live_lanes_ - busy_lanes_ : 0;
  return q;
}

template <class In, class Out>
void BasicEngine<In, Out>::cut_locked(size_t n, BatchReason reason, TimePoint now, int lane,
                                      LaneScratch& s, BatchRecord& b) {
  n = std::min(n, queue_.size());
  const uint32_t depth_before = saturate_u32(queue_.size());
  b = BatchRecord{};
  // A padding policy may take requests from the middle of the queue; where
  // lengths do not vary, each takes the head's n as longest does.
  const bool picks = options_.padding != Padding::kLongest && length_of_;
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
    records_.depth.push_back({now, depth_before, std::max(peak_depth_, depth_before)});
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
  const TimePoint completed = clock_->now();
  s.records.clear();
  s.lengths.clear();
  for (size_t i = 0; i < n; ++i) {
    Pending& m = s.batch[i];
    StageTimes& t = m.times;
    t.batched = batch.batched;
    t.run_start = batch.run_start;
    t.run_end = batch.run_end;
    t.completed = completed;
    s.records.push_back(
        {m.id, batch.id, t, batch.size, batch.failed ? Outcome::kModelError : Outcome::kOk});
    if (batch.longest > 0) s.lengths.push_back(m.length);
  }
  reacquire_mu(lk);
  // Counted before the callbacks run, so a caller that saw its response also
  // sees it in the counters.
  (batch.failed ? counters_.model_errors : counters_.ok) += n;
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
    Response<Out> r{
        m.id,
        batch.failed ? Expected<Out>(result.error()) : Expected<Out>(std::move(result.value()[i])),
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

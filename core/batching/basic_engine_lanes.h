// SPDX-License-Identifier: GPL-3.0-or-later
// BasicEngine, the lane side: spawning lanes, their loop, and leading (asking
// the strategy and sleeping until its deadline); cutting and running the
// batch it decides on is basic_engine_batch.h's. Included through
// basic_engine_impl.h.

#pragma once

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
    if (runner.needs_recovery()) {
      // A stopping engine restarts nothing: what no lane runs fails in stop().
      if (stopping_) break;
      release_mu(lk);
      try {
        runner.recover();
      } catch (...) {  // out of memory: the next round tries again
      }
      reacquire_mu(lk);
      continue;
    }
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

}  // namespace batchscope

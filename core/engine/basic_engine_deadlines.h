#pragma once
// BasicEngine, request deadlines: taking expired requests, the earliest
// deadline, the heap used when deadlines arrive out of queue order, and the
// reaper that arms deadlines while no lane leads. Included through
// basic_engine_impl.h.

#include <algorithm>
#include <functional>
#include <vector>

#include "basic_engine.h"

namespace batchscope {

template <class In, class Out>
void BasicEngine<In, Out>::take_expired(TimePoint now, std::vector<Pending>& out) {
  if (expiry_sorted_) {
    while (!queue_.empty() && queue_.front().expires <= now) {
      out.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  } else {
    while (!expiries_.empty() && expiries_.front().expires <= now) {
      std::pop_heap(expiries_.begin(), expiries_.end(), std::greater<>());
      const RequestId id = expiries_.back().id;
      expiries_.pop_back();
      const size_t at = find_queued(id);
      if (at == queue_.size()) continue;
      out.push_back(std::move(queue_[at]));
      queue_.erase(at);
    }
    if (queue_.empty()) clear_expiries_locked();
  }
  for (const Pending& p : out) record_unrun(p, Outcome::kTimedOut, now);
  counters_.timed_out += out.size();
}

template <class In, class Out>
TimePoint BasicEngine<In, Out>::earliest_expiry() {
  if (expiry_sorted_) return queue_.empty() ? kNever : queue_.front().expires;
  while (!expiries_.empty() && find_queued(expiries_.front().id) == queue_.size()) {
    std::pop_heap(expiries_.begin(), expiries_.end(), std::greater<>());
    expiries_.pop_back();
  }
  return expiries_.empty() ? kNever : expiries_.front().expires;
}

// Called before the request is appended to queue_.
template <class In, class Out>
void BasicEngine<In, Out>::add_expiry_locked(TimePoint expires, RequestId id) {
  if (expiry_sorted_) {
    if (queue_.empty() || queue_.back().expires <= expires) return;
    expiry_sorted_ = false;  // out of order: every queued request goes on the heap
    rebuild_expiries_locked();
  }
  expiries_.push_back({expires, id});
  std::push_heap(expiries_.begin(), expiries_.end(), std::greater<>());
}

template <class In, class Out>
void BasicEngine<In, Out>::rebuild_expiries_locked() {
  expiries_.clear();
  for (size_t i = 0; i < queue_.size(); ++i) expiries_.push_back({queue_[i].expires, queue_[i].id});
  std::make_heap(expiries_.begin(), expiries_.end(), std::greater<>());
}

template <class In, class Out>
void BasicEngine<In, Out>::clear_expiries_locked() {
  expiries_.clear();
  expiry_sorted_ = true;
}

template <class In, class Out>
void BasicEngine<In, Out>::arm_reaper_locked(TimePoint expires) {
  if (reaper_parked_ && !reaper_wake_pending_ && expires < reaper_until_) {
    reaper_wake_pending_ = true;
    ++counters_.wakeups;
    reaper_cv_.notify_one();
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::reaper_loop() {
  std::vector<Pending> expired;
  std::unique_lock lk(mu_);
  while (!reaper_exit_) {
    const TimePoint now = clock_->now();
    take_expired(now, expired);
    if (!expired.empty()) {
      lk.unlock();
      fail_all(expired, ErrorCode::kTimedOut, "", now);
      lk.lock();
      continue;
    }
    // A present leader arms deadlines itself.
    reaper_until_ = (leader_present_ || promote_pending_) ? kNever : earliest_expiry();
    reaper_parked_ = true;
    reaper_wake_pending_ = false;
    clock_->wait_until(lk, reaper_cv_, reaper_until_);
    reaper_parked_ = false;
    reaper_wake_pending_ = false;
  }
}

}  // namespace batchscope

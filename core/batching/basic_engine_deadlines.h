// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BasicEngine, request deadlines: taking expired requests, the earliest
// deadline, the heap used when deadlines arrive out of queue order, and the
// reaper that arms deadlines while no lane leads. Included through
// basic_engine_impl.h.

#include <algorithm>
#include <functional>
#include <vector>

#include "batching/basic_engine.h"

namespace batchscope {

// How deadlines are kept. A request that expires no earlier than every
// request admitted before it (since the queue last emptied) is "in order";
// the rest go on a min-heap. In-order requests expire in queue order and no
// earlier than anything ahead of them, so the earliest deadline queued is
// the smaller of the front's and the heap's top. With one timeout for all,
// only requests whose arrival was read just before another producer's are
// out of order, so the heap stays small.

template <class In, class Out>
void BasicEngine<In, Out>::drop_departed_expiries_locked() {
  while (!expiries_.empty()) {
    const RequestId id = expiries_.front().id;
    // Most leave from the front (cut or expired), which needs no search.
    const bool gone =
        queue_.empty() || id < queue_.front().id || find_queued_locked(id) == queue_.size();
    if (!gone) return;
    std::pop_heap(expiries_.begin(), expiries_.end(), std::greater<>());
    expiries_.pop_back();
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::take_expired_locked(TimePoint now, std::vector<Pending>& out) {
  const size_t first = out.size();
  for (;;) {
    drop_departed_expiries_locked();
    if (!queue_.empty() && queue_.front().expires <= now) {
      out.push_back(std::move(queue_.front()));
      queue_.pop_front();
    } else if (!expiries_.empty() && expiries_.front().expires <= now) {
      const size_t at = find_queued_locked(expiries_.front().id);
      out.push_back(std::move(queue_[at]));
      queue_.erase(at);
    } else {
      break;
    }
  }
  if (queue_.empty()) clear_expiries_locked();
  for (size_t i = first; i < out.size(); ++i) record_unrun_locked(out[i], Outcome::kTimedOut, now);
  counters_.timed_out += out.size() - first;
}

template <class In, class Out>
TimePoint BasicEngine<In, Out>::earliest_expiry_locked() {
  if (queue_.empty()) return kNever;
  drop_departed_expiries_locked();
  const TimePoint front = queue_.front().expires;
  return expiries_.empty() ? front : std::min(front, expiries_.front().expires);
}

// Called before the request is appended to queue_.
template <class In, class Out>
void BasicEngine<In, Out>::add_expiry_locked(TimePoint expires, RequestId id) {
  if (queue_.empty() || expires >= latest_expiry_) {
    latest_expiry_ = expires;
    return;
  }
  expiries_.push_back({expires, id});
  std::push_heap(expiries_.begin(), expiries_.end(), std::greater<>());
}

template <class In, class Out>
void BasicEngine<In, Out>::prune_expiries_locked() {
  std::erase_if(expiries_, [&](const Expiry& e) {
    mu_.assert_held();  // run by erase_if, under this function's lock
    return find_queued_locked(e.id) == queue_.size();
  });
  std::make_heap(expiries_.begin(), expiries_.end(), std::greater<>());
}

template <class In, class Out>
void BasicEngine<In, Out>::clear_expiries_locked() {
  expiries_.clear();
}

template <class In, class Out>
bool BasicEngine<In, Out>::reaper_wake_due_locked(TimePoint expires) {
  if (!reaper_parked_ || reaper_wake_pending_ || expires >= reaper_until_) return false;
  reaper_wake_pending_ = true;
  ++counters_.wakeups;
  return true;
}

template <class In, class Out>
void BasicEngine<In, Out>::arm_reaper_locked(TimePoint expires) {
  if (reaper_wake_due_locked(expires)) reaper_cv_.notify_one();
}

template <class In, class Out>
void BasicEngine<In, Out>::reaper_loop() {
  std::vector<Pending> expired;
  MutexLock lk(mu_);
  while (!reaper_exit_) {
    const TimePoint now = clock_->now();
    take_expired_locked(now, expired);
    if (!expired.empty()) {
      lk.unlock();
      fail_all(expired, ErrorCode::kTimedOut, "", now);
      lk.lock();
      continue;
    }
    // A present leader arms deadlines itself.
    reaper_until_ = (leader_present_ || promote_pending_) ? kNever : earliest_expiry_locked();
    reaper_parked_ = true;
    reaper_wake_pending_ = false;
    clock_->wait_until(lk.unique(), reaper_cv_, reaper_until_);
    reaper_parked_ = false;
    reaper_wake_pending_ = false;
  }
}

}  // namespace batchscope

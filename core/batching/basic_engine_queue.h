// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BasicEngine, the admission side: submit, submit_many, cancel, the queue's
// records and wake-ups. Deadlines and the reaper are in
// basic_engine_deadlines.h. Included through basic_engine_impl.h.

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "batching/basic_engine.h"

namespace batchscope {

template <class In, class Out>
void BasicEngine<In, Out>::record_request_locked(const RequestRecord& r) {
  record_requests_locked(std::span(&r, 1));
}

template <class In, class Out>
void BasicEngine<In, Out>::record_requests_locked(std::span<const RequestRecord> rs) {
  auto& to = records_.requests;
  const size_t room = record_capacity_ > to.size() ? record_capacity_ - to.size() : 0;
  const size_t kept = std::min(room, rs.size());
  to.insert(to.end(), rs.begin(), rs.begin() + static_cast<std::ptrdiff_t>(kept));
  if (record_capacity_ > 0 && kept < rs.size()) {
    records_.dropped += rs.size() - kept;
    counters_.records_dropped += rs.size() - kept;
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::record_unrun_locked(const Pending& p, Outcome outcome, TimePoint now) {
  RequestRecord r{p.id, 0, p.times, 0, outcome};
  r.times.completed = now;
  record_request_locked(r);
}

template <class In, class Out>
size_t BasicEngine<In, Out>::find_queued_locked(RequestId id) const {
  size_t lo = 0, hi = queue_.size();  // ids rise from front to back
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (queue_[mid].id < id) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return (lo < queue_.size() && queue_[lo].id == id) ? lo : queue_.size();
}

template <class In, class Out>
void BasicEngine<In, Out>::take_all_locked(std::vector<Pending>& out) {
  while (!queue_.empty()) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  clear_expiries_locked();
}

template <class In, class Out>
void BasicEngine<In, Out>::fail_all(std::vector<Pending>& pending, ErrorCode code,
                                    const std::string& message, TimePoint now) {
  for (Pending& p : pending) {
    std::string why = message;
    if (code == ErrorCode::kTimedOut) {
      why = "timed out after " + std::to_string(to_ms(now - p.times.arrival)) +
            " ms in the queue before reaching the model";
    }
    StageTimes t = p.times;
    t.completed = now;
    try {
      p.done(Response<Out>{p.id, Error{code, std::move(why)}, t, 0, 0});
    } catch (...) {
      MutexLock g(mu_);
      ++counters_.callback_exceptions;
    }
  }
  pending.clear();
}

template <class In, class Out>
bool BasicEngine<In, Out>::leader_wake_due_locked() {
  if (!leader_parked_ || wake_pending_) return false;
  wake_pending_ = true;
  ++counters_.wakeups;
  return true;
}

template <class In, class Out>
void BasicEngine<In, Out>::wake_leader_locked() {
  if (leader_wake_due_locked()) leader_bell_.ring();
}

template <class In, class Out>
Expected<RequestId> BasicEngine<In, Out>::admit_locked(In&& input, Done&& done, TimePoint arrival,
                                                       TimePoint admitted, const SubmitOptions& so,
                                                       uint32_t length) {
  ++counters_.submitted;
  Error reject;
  if (!started_ || stopping_) {
    reject = {ErrorCode::kShuttingDown,
              started_ ? "the engine is shutting down" : "the engine is not running"};
  } else if (queue_.size() >= options_.queue_capacity) {
    reject = {ErrorCode::kQueueFull, "the queue is full (" + std::to_string(queue_.size()) +
                                         " waiting, queue_capacity " +
                                         std::to_string(options_.queue_capacity) + ")"};
  } else {
    const RequestId id = next_id_++;
    StageTimes times;
    times.arrival = arrival;
    times.admitted = admitted;
    TimePoint expires = arrival + milliseconds(options_.request_timeout_ms);
    if (so.deadline) expires = std::min(expires, *so.deadline);
    add_expiry_locked(expires, id);
    queue_.emplace_back(id, std::move(input), std::move(done), times, expires, length);
    if (bucket_wake_at_ > 0 && options_.padding == Padding::kBuckets &&
        ++bucket_count_[length_bucket(options_, length)] >= bucket_wake_at_) {
      bucket_filled_ = true;  // a full batch in one bucket: the leader decides again
    }
    arrivals_.observe(arrival);
    peak_depth_ = std::max(peak_depth_, saturate_u32(queue_.size()));
    ++counters_.admitted;
    return id;
  }
  ++counters_.rejected;
  RequestRecord r;
  r.times = engine_detail::refused_at(arrival);
  r.outcome = Outcome::kRejected;
  record_request_locked(r);
  return reject;
}

template <class In, class Out>
typename BasicEngine<In, Out>::Wakes BasicEngine<In, Out>::after_admit_locked(TimePoint earliest) {
  Wakes w;
  if (queue_.size() >= wake_at_size_ || earliest < leader_until_ || bucket_filled_)
    w.leader = leader_wake_due_locked();
  bucket_filled_ = false;
  if (!leader_present_ && followers_waiting_ > 0 && !promote_pending_) {
    promote_pending_ = true;
    ++counters_.wakeups;
    w.follower = true;
  }
  if (!leader_present_ && !promote_pending_) w.reaper = reaper_wake_due_locked(earliest);
  return w;
}

template <class In, class Out>
void BasicEngine<In, Out>::notify(Wakes w) {
  if (w.leader) leader_bell_.ring();
  if (w.follower) follower_cv_.notify_one();
  if (w.reaper) reaper_cv_.notify_one();
}

template <class In, class Out>
Status BasicEngine<In, Out>::check_input(const In& input, TimePoint arrival, Done& done) {
  if (!validator_) return Status::Ok();
  Status v = validator_(input);
  if (v) return v;
  RequestRecord r;
  r.times = engine_detail::refused_at(arrival);
  r.outcome = Outcome::kInvalid;
  {
    MutexLock g(mu_);
    ++counters_.submitted;
    ++counters_.invalid;
    record_request_locked(r);
  }
  done(Response<Out>{0, v.error(), r.times, 0, 0});
  return v;
}

template <class In, class Out>
Expected<RequestId> BasicEngine<In, Out>::submit(In input, Done done, SubmitOptions so) {
  const TimePoint arrival = clock_->now();
  if (Status v = check_input(input, arrival, done); !v) return v.error();
  if (stage_) return submit_staged(std::move(input), std::move(done), so, arrival);
  const uint32_t length = length_of_ ? length_of_(input) : 0;
  MutexLock lk(mu_, MutexLock::TryFirst{});
  // Admitted as it arrived when the lock was free at once, else when it was got.
  const TimePoint admitted = lk.waited() ? clock_->now() : arrival;
  Expected<RequestId> id =
      admit_locked(std::move(input), std::move(done), arrival, admitted, so, length);
  if (id) {
    const Wakes w = after_admit_locked(queue_.back().expires);
    lk.unlock();
    notify(w);
    return id;
  }
  lk.unlock();
  done(Response<Out>{0, id.error(), engine_detail::refused_at(arrival), 0, 0});
  return id;
}

template <class In, class Out>
std::vector<RequestId> BasicEngine<In, Out>::submit_many(std::span<In> inputs,
                                                         std::span<Done> dones, SubmitOptions so) {
  const TimePoint arrival = clock_->now();
  if (inputs.size() != dones.size()) {
    const Error e{ErrorCode::kInvalidArgument, "submit_many got " + std::to_string(inputs.size()) +
                                                   " inputs and " + std::to_string(dones.size()) +
                                                   " callbacks"};
    for (Done& d : dones) d(Response<Out>{0, e, engine_detail::refused_at(arrival), 0, 0});
    return {};
  }
  if (stage_) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (check_input(inputs[i], arrival, dones[i]).ok())
        (void)submit_staged(std::move(inputs[i]), std::move(dones[i]), so, arrival);
    }
    return {};
  }
  std::vector<bool> valid(inputs.size(), true);
  std::vector<uint32_t> lengths(inputs.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    valid[i] = check_input(inputs[i], arrival, dones[i]).ok();
    if (valid[i] && length_of_) lengths[i] = length_of_(inputs[i]);
  }
  std::vector<std::pair<size_t, Error>> rejected;
  std::vector<RequestId> admitted;
  admitted.reserve(inputs.size());
  Wakes wakes;
  {
    MutexLock lk(mu_, MutexLock::TryFirst{});
    const TimePoint admitted_at = lk.waited() ? clock_->now() : arrival;
    TimePoint earliest = kNever;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!valid[i]) continue;
      Expected<RequestId> id = admit_locked(std::move(inputs[i]), std::move(dones[i]), arrival,
                                            admitted_at, so, lengths[i]);
      if (id) {
        admitted.push_back(*id);
        earliest = std::min(earliest, queue_.back().expires);
      } else {
        rejected.emplace_back(i, id.error());
      }
    }
    if (!admitted.empty()) wakes = after_admit_locked(earliest);
  }
  notify(wakes);
  const StageTimes t = engine_detail::refused_at(arrival);
  for (auto& [i, e] : rejected) dones[i](Response<Out>{0, std::move(e), t, 0, 0});
  return admitted;
}

template <class In, class Out>
bool BasicEngine<In, Out>::cancel(RequestId id) {
  std::vector<Pending> gone;
  TimePoint now = clock_->now();
  {
    MutexLock g(mu_);
    const size_t at = find_queued_locked(id);
    if (at == queue_.size()) return false;
    gone.push_back(std::move(queue_[at]));
    queue_.erase(at);
    if (queue_.empty()) clear_expiries_locked();
    ++counters_.cancelled;
    record_unrun_locked(gone.back(), Outcome::kCancelled, now);
  }
  fail_all(gone, ErrorCode::kCancelled, "cancelled before it reached the model", now);
  return true;
}

}  // namespace batchscope

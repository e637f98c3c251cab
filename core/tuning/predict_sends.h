// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The predictor's load driver (predictor.cpp): when run_load would send, and
// how many requests a run sends. Internal to core/tuning.
// Thread-safety: plain values, used by one simulation on one thread.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "traffic/arrivals.h"

namespace batchscope::predict_detail {

// Reservations beyond this are left to the vectors' own growth.
inline constexpr double kMaxReserve = double(1 << 24);

// Roughly how many requests a run sends, to reserve for.
inline size_t expected_sends(const ArrivalSpec& a) {
  double per_s = 0;
  switch (a.pattern) {
    case Pattern::kConstant:
    case Pattern::kPoisson: per_s = a.rate; break;
    case Pattern::kBurst:
      per_s = (a.rate * a.on_s + a.rate_low * a.off_s) / (a.on_s + a.off_s);
      break;
    case Pattern::kRamp: per_s = (a.rate_from + a.rate_to) / 2; break;
    case Pattern::kSine: per_s = (a.rate_min + a.rate_max) / 2; break;
    case Pattern::kStep: {
      double n = 0, s = 0;
      for (const auto& [rate, seconds] : a.steps) n += rate * seconds, s += seconds;
      per_s = s > 0 ? n / s : 0;
      break;
    }
    case Pattern::kTrace: per_s = static_cast<double>(a.trace.size()) / a.duration_s; break;
    case Pattern::kClosed: break;  // depends on the model: left to growth
  }
  double n = per_s * a.duration_s * 1.05 + 64;
  if (a.max_requests > 0) n = std::min(n, static_cast<double>(a.max_requests));
  return static_cast<size_t>(std::clamp(n, 0.0, kMaxReserve));
}

// When the load driver sends (run_load): the schedule's offsets (open loop),
// or a slot freed by an answer (closed loop). A send may be put off once,
// when it was meant to go, to when the driver gets to it (delay_to).
class Sends {
 public:
  Sends(const ArrivalSpec& spec, TimePoint start)
      : closed_(spec.pattern == Pattern::kClosed),
        schedule_(spec),
        start_(start),
        end_(start +
             std::chrono::duration_cast<Duration>(std::chrono::duration<double>(spec.duration_s))),
        cap_(spec.max_requests > 0 ? spec.max_requests : UINT64_MAX),
        last_(start) {
    if (closed_) {
      free_.assign(std::max<uint32_t>(spec.concurrency, 1), start);
    } else {
      fetch();
    }
  }

  // When the next send was meant to go (its latency counts from then).
  TimePoint intended() const { return closed_ ? next() : intended_; }
  TimePoint last_sent() const { return last_; }

  // Open loop, at next() = `now`: the send goes at `when` instead (not
  // before now). True when that is now; else next() moves there, and the
  // send goes when it comes up again.
  bool delay_to(TimePoint when, TimePoint now) {
    if (closed_ || delayed_ || when <= now) return true;
    delayed_ = true;
    next_ = when;
    return false;
  }

  // The next send, kNever when none is due (closed: until a slot frees).
  TimePoint next() const {
    if (!closed_) return next_;
    if (sent_ >= cap_ || free_.empty() || free_.front() >= end_) return kNever;
    return free_.front();
  }

  // The send at next() went.
  void sent(TimePoint t) {
    ++sent_;
    last_ = t;
    if (!closed_) {
      fetch();
      return;
    }
    std::pop_heap(free_.begin(), free_.end(), std::greater<>());
    free_.pop_back();
  }

  // Closed loop: an answer at `t` frees a slot; a rejected send waits until
  // the queue shrinks (`unblock`).
  void answered(TimePoint t) {
    if (!closed_) return;
    free_.push_back(t);
    std::push_heap(free_.begin(), free_.end(), std::greater<>());
  }
  void rejected() { blocked_ += closed_ ? 1 : 0; }
  void unblock(TimePoint t) {
    for (; blocked_ > 0; --blocked_) answered(t);
  }

  // When the driver stopped sending and began waiting for answers; kNever
  // while it may still send.
  TimePoint drain_start() const {
    if (sent_ >= cap_) return last_;
    if (closed_) return end_;
    return next_ == kNever ? last_ : kNever;
  }

 private:
  void fetch() {
    next_ = intended_ = kNever;
    delayed_ = false;
    if (sent_ >= cap_) return;
    const std::optional<Duration> offset = schedule_.next();
    if (!offset || start_ + *offset >= end_) return;
    intended_ = start_ + *offset;
    // Due while a delayed send was waiting: it goes right after that one.
    next_ = std::max(intended_, last_);
  }

  bool closed_;
  bool delayed_ = false;
  ArrivalSchedule schedule_;
  TimePoint start_, end_;
  uint64_t cap_;
  uint64_t sent_ = 0;
  TimePoint last_;
  TimePoint next_ = kNever;
  TimePoint intended_ = kNever;
  std::vector<TimePoint> free_;  // closed: min-heap of slot times
  uint64_t blocked_ = 0;
};

}  // namespace batchscope::predict_detail

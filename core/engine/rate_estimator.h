#pragma once
// Smoothed arrival rate: an exponentially decaying count of events, so the
// estimate falls by itself when arrivals stop.
// Thread-safety: owner only (the engine keeps it under its lock).

#include <cmath>

#include "clock.h"

namespace batchscope {

class RateEstimator {
 public:
  explicit RateEstimator(Duration time_constant = std::chrono::milliseconds(500))
      : tau_s_(std::chrono::duration<double>(time_constant).count()) {}

  void observe(TimePoint t) {
    mass_ = decayed(t) + 1.0;
    last_ = t;
  }

  // Events per second around time t.
  double rate(TimePoint t) const { return decayed(t) / tau_s_; }

 private:
  double decayed(TimePoint t) const {
    if (mass_ == 0.0) return 0.0;
    const double dt = std::chrono::duration<double>(t - last_).count();
    return dt <= 0 ? mass_ : mass_ * std::exp(-dt / tau_s_);
  }

  double tau_s_;
  double mass_ = 0.0;
  TimePoint last_{};
};

}  // namespace batchscope

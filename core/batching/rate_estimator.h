// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Smoothed arrival rate: exponentially decaying counts of events, so the
// estimate falls by itself when arrivals stop. Two time constants: the
// smooth rate (shown, and the one strategies plan with) and a fast one that
// sees a burst begin within a few of its arrivals.
// Thread-safety: owner only (the engine keeps it under its lock).

#include <cmath>

#include "common/clock.h"

namespace batchscope {

class RateEstimator {
 public:
  explicit RateEstimator(Duration time_constant = std::chrono::milliseconds(500),
                         Duration fast_time_constant = std::chrono::milliseconds(100))
      : slow_(time_constant), fast_(fast_time_constant) {}

  void observe(TimePoint t) {
    slow_.observe(t);
    fast_.observe(t);
  }

  // Events per second around time t.
  double rate(TimePoint t) const { return slow_.rate(t); }
  // The same with the fast time constant.
  double fast_rate(TimePoint t) const { return fast_.rate(t); }

 private:
  class Decaying {
   public:
    explicit Decaying(Duration tau) : tau_s_(std::chrono::duration<double>(tau).count()) {}
    void observe(TimePoint t) {
      mass_ = decayed(t) + 1.0;
      last_ = t;
    }
    double rate(TimePoint t) const { return decayed(t) / tau_s_; }

   private:
    double decayed(TimePoint t) const {
      if (mass_ == 0.0) return 0.0;
      const double dt = std::chrono::duration<double>(t - last_).count();
      return dt <= 0 ? mass_ : mass_ * decay(dt / tau_s_);
    }
    // exp(-x). Arrivals come microseconds apart, where x is tiny and four
    // terms of its series agree with exp to 1e-13, at a fraction of the cost.
    static double decay(double x) {
      return x < 1e-3 ? 1.0 - x * (1.0 - x * (0.5 - x / 6.0)) : std::exp(-x);
    }
    double tau_s_;
    double mass_ = 0.0;
    TimePoint last_{};
  };

  Decaying slow_, fast_;
};

}  // namespace batchscope

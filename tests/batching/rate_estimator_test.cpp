// SPDX-License-Identifier: GPL-3.0-or-later
// RateEstimator, the engine's smoothed arrival rate: its update matches the
// exact exponential decay, steady arrivals give their rate, and silence
// decays it.

#include "batching/rate_estimator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace batchscope {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// The rate at t of arrivals at `times`: sum of exp(-(t - ti)/tau) / tau.
double exact_rate(const std::vector<TimePoint>& times, TimePoint t, double tau_s) {
  double sum = 0;
  for (TimePoint ti : times)
    sum += std::exp(-std::chrono::duration<double>(t - ti).count() / tau_s);
  return sum / tau_s;
}

TEST(RateEstimator, MatchesTheExactDecayForCloseAndDistantArrivals) {
  RateEstimator r(milliseconds(500), milliseconds(100));
  std::vector<TimePoint> times;
  TimePoint t{};
  // Microseconds apart (the series path), then milliseconds apart (exp).
  for (int i = 0; i < 20000; ++i) {
    t += microseconds(i < 10000 ? 3 : 1000 + i % 7);
    times.push_back(t);
    r.observe(t);
  }
  for (Duration later : {Duration{0}, Duration(microseconds(50)), Duration(milliseconds(300))}) {
    const double slow = exact_rate(times, t + later, 0.5);
    const double fast = exact_rate(times, t + later, 0.1);
    EXPECT_NEAR(r.rate(t + later), slow, 1e-9 * slow);
    EXPECT_NEAR(r.fast_rate(t + later), fast, 1e-9 * fast);
  }
}

TEST(RateEstimator, SteadyArrivalsGiveTheirRateAndSilenceDecaysIt) {
  RateEstimator r;
  TimePoint t{};
  for (int i = 0; i < 100000; ++i) {
    t += microseconds(100);  // 10,000 per second
    r.observe(t);
  }
  EXPECT_NEAR(r.rate(t), 10000.0, 10000.0 * 0.01);
  EXPECT_NEAR(r.fast_rate(t), 10000.0, 10000.0 * 0.01);
  EXPECT_NEAR(r.rate(t + milliseconds(500)) / r.rate(t), std::exp(-1.0), 1e-12);
  EXPECT_EQ(RateEstimator().rate(t), 0.0);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// Bands and headroom: bisection finds known limits, the band holds the
// nominal prediction, and the tune's choice is the best that holds, else
// the closest, marked fragile.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include <map>

#include "tests/tuning/cost_points.h"
#include "tuning/tune_headroom.h"
#include "tuning/tune_run.h"

namespace batchscope {
namespace {

using test::points;

Options with_batch(uint32_t b) {
  Options o;
  o.max_batch_size = b;
  return o;
}

TEST(TuneHeadroomTest, BisectionFindsTheKnownLimitsOnTheRealPredictor) {
  // One lane, batches of one at 1 ms each, requests every 2 ms: the lane
  // keeps up until t(1) doubles or the rate does, and no further.
  ArrivalSpec traffic;
  traffic.pattern = Pattern::kConstant;
  traffic.rate = 500;
  traffic.duration_s = 4;
  Options o = with_batch(1);
  o.max_wait_us = 0;
  const ScaledEvaluator predict =
      scaled_prediction_evaluator(traffic, points({{1, 1000}, {2, 2000}}));
  const Evaluated nominal = predict(o, 1, 1);
  EXPECT_NEAR(nominal.p99_ms, 1.0, 0.01);
  const Headroom h = headroom_of(o, predict, 50, kLossTolerance, true);
  // (A little past 2x the queue grows, but by too little in 4 s to miss 50 ms.)
  EXPECT_NEAR(h.slowdown, 2.0, 0.05);
  EXPECT_NEAR(h.rate, 2.0, 0.05);
  EXPECT_FALSE(h.slowdown_beyond || h.rate_beyond);
  // A p99 objective of 1.5 ms binds first: t(1) may grow by 1.5x.
  const Headroom tight = headroom_of(o, predict, 1.5, kLossTolerance, true);
  EXPECT_NEAR(tight.slowdown, 1.5, 1.5 * 2 * kHeadroomStep);
  EXPECT_NEAR(tight.rate, 2.0, 0.05);  // the rate moves nothing until the lane is full
  // Not met even at the kept cost: no headroom at all.
  EXPECT_EQ(headroom_of(o, predict, 0.5, kLossTolerance, true).slowdown, 0);
  // A closed loop has no rate headroom.
  EXPECT_FALSE(headroom_of(o, predict, 50, kLossTolerance, false).rate_applies);
  ArrivalSpec closed;
  closed.pattern = Pattern::kClosed;
  EXPECT_FALSE(rate_scales(closed));
  EXPECT_TRUE(rate_scales(traffic));
}

TEST(TuneHeadroomTest, TheBandHoldsTheNominalPrediction) {
  ArrivalSpec traffic;
  traffic.pattern = Pattern::kPoisson;
  traffic.rate = 800;
  traffic.duration_s = 3;
  const ScaledEvaluator predict =
      scaled_prediction_evaluator(traffic, points({{1, 500}, {8, 1500}}));
  Options o = with_batch(8);
  o.max_wait_us = 1000;
  const Evaluated nominal = predict(o, 1, 1);
  const PredictionBand b = band_of(nominal, predict, BandFactors{0.85, 1.15, "test"});
  EXPECT_EQ(b.fast, 0.85);
  EXPECT_EQ(b.slow, 1.15);
  EXPECT_LE(b.p99_ms.low, nominal.p99_ms);
  EXPECT_GE(b.p99_ms.high, nominal.p99_ms);
  EXPECT_LT(b.p99_ms.low, b.p99_ms.high);  // the cost moved it
  EXPECT_LE(b.p50_ms.low, nominal.p50_ms);
  EXPECT_GE(b.p50_ms.high, nominal.p50_ms);
  EXPECT_LE(b.throughput_rps.low, nominal.throughput_rps);
  EXPECT_GE(b.throughput_rps.high, nominal.throughput_rps);
  // The JSON carries both ends.
  const std::string j = band_json(b);
  EXPECT_NE(j.find("\"p99_ms\":["), std::string::npos) << j;
  EXPECT_NE(j.find("\"slow\":1.15"), std::string::npos) << j;
}

// A closed form per max_batch_size: throughput, and p99 proportional to
// the slowdown (so configuration b holds to slo / p99).
struct Shape {
  double rps, p99;
};
ScaledEvaluator closed_form(std::map<uint32_t, Shape> shapes) {
  return [shapes](const Options& o, double slow, double rate) {
    const Shape& s = shapes.at(o.max_batch_size);
    Evaluated e;
    e.options = o;
    e.throughput_rps = s.rps * rate;
    e.p99_ms = s.p99 * slow * rate;
    e.p50_ms = e.p99_ms / 2;
    e.sent = e.ok = 1000;
    return e;
  };
}

TuneResult result_of(const ScaledEvaluator& f, std::initializer_list<uint32_t> sizes, double slo) {
  TuneResult r;
  r.slo_p99_ms = slo;
  r.objective = TuneObjective::kThroughput;
  for (uint32_t b : sizes) r.evaluated.push_back(f(with_batch(b), 1, 1));
  return r;
}

TEST(TuneHeadroomTest, TheChoiceIsTheBestThatHoldsElseTheClosestMarkedFragile) {
  // By throughput: 1 first (p99 9, holds to 1.11x), then 2 (6: 1.67x), then
  // 4 (4: 2.5x); 8 misses the objective outright.
  const ScaledEvaluator f =
      closed_form({{1, {1000, 9}}, {2, {900, 6}}, {4, {800, 4}}, {8, {2000, 12}}});
  const TuneResult r = result_of(f, {1, 2, 4, 8}, 10);
  HeadroomSettings s;
  s.needed = 1.15;
  s.band = BandFactors{0.9, 1.15, "test"};
  HeadroomResult h = rank_by_headroom(r, f, s);
  ASSERT_EQ(h.checked.size(), 3u);  // 8 does not meet the objective
  EXPECT_EQ(h.checked[0].options.max_batch_size, 1u);
  ASSERT_TRUE(h.holds.has_value());
  EXPECT_EQ(h.chosen()->options.max_batch_size, 2u);
  EXPECT_FALSE(h.fragile());
  EXPECT_NEAR(h.checked[0].headroom->slowdown, 10.0 / 9, 0.02);
  EXPECT_NEAR(h.checked[1].headroom->slowdown, 10.0 / 6, 0.03);
  EXPECT_NEAR(h.checked[2].headroom->rate, std::min(kMaxHeadroom, 2.5), 0.05);
  ASSERT_TRUE(h.checked[1].band.has_value());
  EXPECT_DOUBLE_EQ(h.checked[1].band->p99_ms.high, 6 * 1.15);
  // Needing 3x: none holds; the closest is 4, fragile.
  s.needed = 3;
  h = rank_by_headroom(r, f, s);
  EXPECT_FALSE(h.holds.has_value());
  ASSERT_NE(h.chosen(), nullptr);
  EXPECT_EQ(h.chosen()->options.max_batch_size, 4u);
  EXPECT_TRUE(h.fragile());
  const std::string j = headroom_json(h);
  EXPECT_NE(j.find("\"fragile\":true"), std::string::npos) << j;
  EXPECT_NE(j.find("\"needed_slowdown\":3"), std::string::npos) << j;
  // Nothing meets the objective: nothing checked, nothing chosen.
  h = rank_by_headroom(result_of(f, {8}, 10), f, s);
  EXPECT_TRUE(h.checked.empty());
  EXPECT_EQ(h.chosen(), nullptr);
}

TEST(TuneHeadroomTest, TheOneThatHoldsIsCheckedEvenBeyondThoseShown) {
  std::map<uint32_t, Shape> shapes;
  for (uint32_t b = 1; b <= 64; b *= 2) shapes[b] = {1000.0 - b, 9.5};  // all fragile ..
  shapes[64] = {1000.0 - 64, 2};                                        // .. but the last
  const ScaledEvaluator f = closed_form(shapes);
  const TuneResult r = result_of(f, {1, 2, 4, 8, 16, 32, 64}, 10);
  HeadroomSettings s;
  s.shown = 2;
  HeadroomResult h = rank_by_headroom(r, f, s);
  ASSERT_EQ(h.checked.size(), 3u);
  ASSERT_TRUE(h.holds.has_value());
  EXPECT_EQ(h.chosen()->options.max_batch_size, 64u);
  EXPECT_EQ(headroom_text(*h.chosen()->headroom).rfind("holds to 4.00x t(b) or more", 0), 0u)
      << headroom_text(*h.chosen()->headroom);
}

// As closed_form, with each configuration's p99 rising as slow^steep: a
// steep one is near its knee.
ScaledEvaluator knees(std::map<uint32_t, std::array<double, 3>> shapes) {
  return [shapes](const Options& o, double slow, double rate) {
    const auto& [rps, p99, steep] = shapes.at(o.max_batch_size);
    Evaluated e;
    e.options = o;
    e.throughput_rps = rps;
    e.p99_ms = p99 * std::pow(slow * rate, steep);
    e.p50_ms = e.p99_ms / 2;
    e.sent = e.ok = 1000;
    return e;
  };
}

TEST(TuneHeadroomTest, AmongThroughputsThatTieTheOneWithTheMostRoomIsChosen) {
  // 1, 2 and 4 serve the offered rate within 1% of each other. By p99, 1
  // leads (5 ms), but it is near its knee (p99 as slow^4: it holds to
  // 1.19x); 2 is steep too (1.18x), 4 (6 ms, linear) holds to 1.67x. 8 is roomier
  // still but serves 5% less: it does not tie.
  const ScaledEvaluator f =
      knees({{1, {1000, 5, 4}}, {2, {998, 5.2, 4}}, {4, {995, 6, 1}}, {8, {950, 1, 1}}});
  const TuneResult r = result_of(f, {1, 2, 4, 8}, 10);
  HeadroomSettings s;
  s.needed = 1.15;
  HeadroomResult h = rank_by_headroom(r, f, s);
  ASSERT_TRUE(h.holds.has_value());
  ASSERT_GE(h.checked.size(), 3u);
  EXPECT_EQ(h.checked.front().options.max_batch_size, 1u) << "the objective's order";
  EXPECT_NEAR(h.checked.front().headroom->slowdown, std::pow(2.0, 1.0 / 4), 0.02);
  EXPECT_EQ(h.chosen()->options.max_batch_size, 4u);
  EXPECT_FALSE(h.fragile());
  // A room under 5% more keeps the earlier one.
  const ScaledEvaluator g = knees({{1, {1000, 5, 4}}, {2, {998, 5.2, 3.8}}});
  h = rank_by_headroom(result_of(g, {1, 2}, 10), g, s);
  EXPECT_EQ(h.chosen()->options.max_batch_size, 1u);
  // Under the latency objective, the lowest p99 that holds decides alone.
  TuneResult latency = result_of(f, {1, 2, 4}, 10);
  latency.objective = TuneObjective::kLatency;
  h = rank_by_headroom(latency, f, s);
  EXPECT_EQ(h.chosen()->options.max_batch_size, 1u);
}

}  // namespace
}  // namespace batchscope

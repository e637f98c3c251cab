// The adaptive strategy planning on a measured cost (plan_on_cost): the
// scale a live fit puts on the cost, the plan it makes, and the predictor
// planning the same way as a live engine handed that planner.

#include <gtest/gtest.h>

#include <cmath>

#include "tests/tuning/cost_points.h"
#include "tuning/adaptive_planner.h"
#include "tuning/predictor.h"

namespace batchscope {
namespace {

using test::linear;
using test::points;

AdaptiveCostModel fit(double a_us, double c_us, double mean_size) {
  AdaptiveCostModel m;
  m.intercept_us = a_us;
  m.per_item_us = c_us;
  m.mean_size = mean_size;
  return m;
}

Options adaptive(uint32_t lanes, double target_ms) {
  Options o;
  o.strategy = StrategyKind::kAdaptive;
  o.max_batch_size = 64;
  o.max_wait_us = 5000;
  o.num_lanes = lanes;
  o.target_p99_ms = target_ms;
  return o;
}

TEST(PlanOnCostTest, AFitWithinTheDriftBandLeavesTheCostAsMeasured) {
  // t(b) = 500 + 20 b; at the fit's mean size 4 the cost says 580 us.
  const CostModel cost = linear(500, 20);
  EXPECT_DOUBLE_EQ(cost_scale_for_fit(cost, fit(500, 20, 4)), 1.0);
  // 690 / 580 = 1.19: within 1.2.
  EXPECT_DOUBLE_EQ(cost_scale_for_fit(cost, fit(610, 20, 4)), 1.0);
  EXPECT_DOUBLE_EQ(cost_scale_for_fit(cost, fit(420, 20, 4)), 1.0);  // 500 / 580 = 0.86 > 1/1.2
}

TEST(PlanOnCostTest, AFitBeyondTheBandScalesTheCostByWhatLiesOutsideIt) {
  const CostModel cost = linear(500, 20);
  // 870 / 580 = 1.5, so 1.5 / 1.2 = 1.25.
  EXPECT_NEAR(cost_scale_for_fit(cost, fit(790, 20, 4)), 1.25, 1e-12);
  // 290 / 580 = 0.5, so 0.5 * 1.2 = 0.6.
  EXPECT_NEAR(cost_scale_for_fit(cost, fit(210, 20, 4)), 0.6, 1e-12);
  // Far beyond: held at kMaxCostScale.
  EXPECT_DOUBLE_EQ(cost_scale_for_fit(cost, fit(580e3, 0, 4)), kMaxCostScale);
  // The mean size is rounded to a batch size: 4.4 reads t(4).
  EXPECT_NEAR(cost_scale_for_fit(cost, fit(870 - 4.4 * 20, 20, 4.4)), 1.25, 1e-12);
}

TEST(PlanOnCostTest, TheFitIsComparedWithTheCostsMeanRunTimeNotItsMedian) {
  // Run times at 0.5, 1 and 2.5 times the median (quantiles p0, p50, p100):
  // interpolated, the factor's mean over u is (0.75 + 1.75) / 2 = 1.25.
  const CostModel skewed = points({{1, 400, 0, {0.5, 1.0, 2.5}}, {2, 800, 0, {0.5, 1.0, 2.5}}});
  // A fit at b = 2 of 1.25 * 800 = 1000 us agrees with it exactly.
  EXPECT_DOUBLE_EQ(cost_scale_for_fit(skewed, fit(0, 500, 2)), 1.0);
  // 1000 * 1.2 * 1.5 = 1800: scaled by 1.5.
  EXPECT_NEAR(cost_scale_for_fit(skewed, fit(0, 900, 2)), 1.5, 1e-9);
  // A slow state of sigma 0.5 adds exp(0.125) to the mean.
  const CostModel state = linear(0, 400).with_streak({.weight = 1, .rho = 0.9, .sigma = 0.5});
  const double mean = 800 * std::exp(0.125);
  EXPECT_NEAR(cost_scale_for_fit(state, fit(0, mean / 2, 2)), 1.0, 1e-9);
  // 3.6 times its mean: scaled by 3.6 / 1.2 = 3.
  EXPECT_NEAR(cost_scale_for_fit(state, fit(0, mean * 3.6 / 2, 2)), 3.0, 1e-9);
}

TEST(PlanOnCostTest, AFitWithNoRunTimeLeavesTheCostAlone) {
  EXPECT_DOUBLE_EQ(cost_scale_for_fit(linear(500, 20), fit(0, 0, 4)), 1.0);
  EXPECT_DOUBLE_EQ(cost_scale_for_fit(CostModel(), fit(500, 20, 4)), 1.0);
}

TEST(PlanOnCostTest, OnTheFitsOwnLineItPlansAsTheFitsPlannerDoes) {
  for (uint32_t lanes : {1u, 2u}) {
    const Options o = adaptive(lanes, 8);
    const AdaptivePlanner on_cost = plan_on_cost(linear(500, 20));
    for (double rate : {300.0, 2000.0, 6000.0}) {
      const AdaptivePlan want = make_adaptive_plan(rate, fit(500, 20, 4), o);
      const AdaptivePlan got = on_cost(rate, fit(500, 20, 4), o);
      ASSERT_TRUE(want.valid);
      ASSERT_TRUE(got.valid);
      EXPECT_EQ(got.fast.cap, want.fast.cap) << rate;
      EXPECT_EQ(got.fast.wait_ns, want.fast.wait_ns) << rate;
      EXPECT_EQ(got.efficient.cap, want.efficient.cap) << rate;
      EXPECT_EQ(got.efficient.wait_ns, want.efficient.wait_ns) << rate;
      EXPECT_DOUBLE_EQ(got.fast_p99_ms, want.fast_p99_ms) << rate;
    }
  }
}

TEST(PlanOnCostTest, BeyondTheBandItPlansOnTheScaledCost) {
  const Options o = adaptive(1, 8);
  const CostModel cost = linear(500, 20);
  // The fit runs 1.5 times the cost: planned on the cost times 1.25.
  const AdaptivePlan got = plan_on_cost(cost)(2000, fit(790, 20, 4), o);
  const AdaptivePlan want = plan_on_cost(cost.scaled(1.25))(2000, fit(725, 25, 4), o);
  ASSERT_TRUE(got.valid);
  EXPECT_EQ(got.fast.cap, want.fast.cap);
  EXPECT_EQ(got.efficient.cap, want.efficient.cap);
  EXPECT_EQ(got.efficient.wait_ns, want.efficient.wait_ns);
  EXPECT_DOUBLE_EQ(got.fast_p99_ms, want.fast_p99_ms);
  EXPECT_DOUBLE_EQ(got.efficient_p99_ms, want.efficient_p99_ms);
}

TEST(PlanOnCostTest, ItSeesTheTimeOutsideABatchThatTheFitCannot) {
  // Every request spends 1 ms outside its batch: the plan's p99 holds it,
  // the fit's planner's does not. The lanes run the same, so the fastest
  // choice is the same and 1 ms later.
  const Options o = adaptive(1, 20);
  Expected<CostModel> late = linear(500, 20).with_overhead({1000, 1000});
  ASSERT_TRUE(late.ok());
  const AdaptivePlan on_fit = make_adaptive_plan(2000, fit(500, 20, 4), o);
  const AdaptivePlan on_cost = plan_on_cost(*late)(2000, fit(500, 20, 4), o);
  ASSERT_TRUE(on_cost.valid);
  EXPECT_EQ(on_cost.fast.cap, on_fit.fast.cap);
  EXPECT_EQ(on_cost.fast.wait_ns, on_fit.fast.wait_ns);
  EXPECT_NEAR(on_cost.fast_p99_ms, on_fit.fast_p99_ms + 1.0, 1e-9);
}

TEST(PlanOnCostTest, ScaledMultipliesEveryMedianAndNothingElse) {
  Expected<CostModel> m = points({{1, 100, 0.1, {0.9, 1, 1.2}}, {4, 400, 0.1, {0.9, 1, 1.2}}})
                              .with_overhead({10, 20});
  ASSERT_TRUE(m.ok());
  Expected<CostModel> lanes = m->with_lanes({{2, {{1, 150}, {4, 600}}}});
  ASSERT_TRUE(lanes.ok());
  const CostModel s = lanes->with_turnaround({5, 1}).scaled(2);
  EXPECT_DOUBLE_EQ(s.cost_us(1), 200);
  EXPECT_DOUBLE_EQ(s.cost_us(4), 800);
  EXPECT_DOUBLE_EQ(s.cost_us(4, 2), 1200);
  EXPECT_DOUBLE_EQ(s.jitter_factor(4, 1.0), 1.2);
  EXPECT_EQ(s.overheads_us(), lanes->overheads_us());
  EXPECT_EQ(s.turnaround(), (Turnaround{5, 1}));
  EXPECT_DOUBLE_EQ(linear(1e9, 0).scaled(1e3).cost_us(1), kMaxCostUs);
}

// The predictor's adaptive strategy, planning on the cost or on its fit of
// the batches it ran: on a cost without jitter the fit is the cost's own
// line, so both make the same plans and the same run.
TEST(PlanOnCostTest, OnACostItsFitRecoversThePredictorRunsTheSameEitherWay) {
  PredictSpec spec;
  spec.cost = linear(500, 20);
  spec.options = adaptive(1, 8);
  spec.arrivals.pattern = Pattern::kPoisson;
  spec.arrivals.rate = 3000;
  spec.arrivals.duration_s = 2;
  spec.arrivals.seed = 5;
  const RunSummary on_fit = predict(spec);
  spec.plan_on_cost = true;
  const RunSummary on_cost = predict(spec);
  EXPECT_GT(on_fit.ok, 5000u);
  EXPECT_EQ(on_cost.ok, on_fit.ok);
  EXPECT_DOUBLE_EQ(on_cost.latency.p99_ms, on_fit.latency.p99_ms);
  EXPECT_DOUBLE_EQ(on_cost.batch_mean, on_fit.batch_mean);
}

// ...and where the cost holds what a line cannot (3 ms of every request
// spent outside its batch, against an 8 ms target whose efficient budget is
// 4 ms), planning on it leaves the efficient choice 1 ms to batch in, not 4:
// smaller batches, sooner.
TEST(PlanOnCostTest, ThePredictorPlansOnWhatTheCostHoldsWhenAskedTo) {
  PredictSpec spec;
  spec.cost = *linear(500, 20).with_overhead({3000, 3000});
  spec.options = adaptive(1, 8);
  spec.arrivals.pattern = Pattern::kPoisson;
  spec.arrivals.rate = 3000;
  spec.arrivals.duration_s = 2;
  spec.arrivals.seed = 5;
  const RunSummary on_fit = predict(spec);
  spec.plan_on_cost = true;
  const RunSummary on_cost = predict(spec);
  EXPECT_GT(on_cost.ok, 5000u);
  EXPECT_LT(on_cost.batch_mean, on_fit.batch_mean);
  EXPECT_LT(on_cost.latency.p50_ms, on_fit.latency.p50_ms);
}

}  // namespace
}  // namespace batchscope

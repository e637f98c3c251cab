// SPDX-License-Identifier: GPL-3.0-or-later
// The adaptive strategy planning on a measured cost (plan_on_cost): the
// plan it makes, and the predictor planning the same way as a live engine
// handed that planner.

#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "tests/tuning/cost_points.h"
#include "tuning/adaptive_planner.h"
#include "tuning/predictor.h"

namespace batchscope {
namespace {

using test::linear;

AdaptiveCostModel fit(double a_us, double c_us) {
  AdaptiveCostModel m;
  m.intercept_us = a_us;
  m.per_item_us = c_us;
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

TEST(PlanOnCostTest, OnTheFitsOwnLineItPlansAsTheFitsPlannerDoes) {
  for (uint32_t lanes : {1u, 2u}) {
    const Options o = adaptive(lanes, 8);
    const AdaptivePlanner on_cost = plan_on_cost(linear(500, 20));
    for (double rate : {300.0, 2000.0, 6000.0}) {
      const AdaptivePlan want = make_adaptive_plan(rate, fit(500, 20), o);
      const AdaptivePlan got = on_cost(rate, fit(500, 20), o);
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

TEST(PlanOnCostTest, TheFitDoesNotMoveAPlanOnTheCost) {
  const Options o = adaptive(1, 8);
  const AdaptivePlanner on_cost = plan_on_cost(linear(500, 20));
  const AdaptivePlan a = on_cost(2000, fit(500, 20), o);
  const AdaptivePlan b = on_cost(2000, fit(1500, 60), o);
  ASSERT_TRUE(a.valid);
  EXPECT_EQ(a.fast.cap, b.fast.cap);
  EXPECT_EQ(a.efficient.cap, b.efficient.cap);
  EXPECT_EQ(a.efficient.wait_ns, b.efficient.wait_ns);
  EXPECT_DOUBLE_EQ(a.efficient_p99_ms, b.efficient_p99_ms);
}

TEST(PlanOnCostTest, ItSeesTheTimeOutsideABatchThatTheFitCannot) {
  // Every request spends 1 ms outside its batch: the plan's p99 holds it,
  // the fit's planner's does not. The lanes run the same, so the fastest
  // choice is the same and 1 ms later.
  const Options o = adaptive(1, 20);
  Expected<CostModel> late = linear(500, 20).with_overhead({1000, 1000});
  ASSERT_TRUE(late.ok());
  const AdaptivePlan on_fit = make_adaptive_plan(2000, fit(500, 20), o);
  const AdaptivePlan on_cost = plan_on_cost(*late)(2000, fit(500, 20), o);
  ASSERT_TRUE(on_cost.valid);
  EXPECT_EQ(on_cost.fast.cap, on_fit.fast.cap);
  EXPECT_EQ(on_cost.fast.wait_ns, on_fit.fast.wait_ns);
  EXPECT_NEAR(on_cost.fast_p99_ms, on_fit.fast_p99_ms + 1.0, 1e-9);
}

// Poisson at 3,000 req/s for 2 s on `cost`, adaptive with an 8 ms target,
// predicted planning on the fit, then on the cost.
std::pair<RunSummary, RunSummary> predicted_both_ways(const CostModel& cost) {
  PredictSpec spec;
  spec.cost = cost;
  spec.options = adaptive(1, 8);
  spec.arrivals.pattern = Pattern::kPoisson;
  spec.arrivals.rate = 3000;
  spec.arrivals.duration_s = 2;
  spec.arrivals.seed = 5;
  const RunSummary on_fit = predict(spec);
  spec.plan_on_cost = true;
  return {on_fit, predict(spec)};
}

// The predictor's adaptive strategy, planning on the cost or on its fit of
// the batches it ran: on a cost without jitter the fit is the cost's own
// line, so both make the same plans and the same run.
TEST(PlanOnCostTest, OnACostItsFitRecoversThePredictorRunsTheSameEitherWay) {
  const auto [on_fit, on_cost] = predicted_both_ways(linear(500, 20));
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
  const auto [on_fit, on_cost] = predicted_both_ways(*linear(500, 20).with_overhead({3000, 3000}));
  EXPECT_GT(on_cost.ok, 5000u);
  EXPECT_LT(on_cost.batch_mean, on_fit.batch_mean);
  EXPECT_LT(on_cost.latency.p50_ms, on_fit.latency.p50_ms);
}

}  // namespace
}  // namespace batchscope

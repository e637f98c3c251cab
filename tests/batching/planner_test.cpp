// SPDX-License-Identifier: GPL-3.0-or-later
// The adaptive strategy's planner is handed in (batching owns the interface,
// core/tuning implements it): a strategy plans with the planner it was
// given, never without one, and an engine refuses the adaptive strategy until
// it has one.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "batching/batched_fn.h"
#include "batching/engine.h"
#include "batching/synthetic_runner.h"
#include "tests/batching/adaptive_feeder.h"

namespace batchscope {
namespace {

using adaptive_test::adaptive_options;
using adaptive_test::Feeder;
using adaptive_test::Traffic;

// A planner that answers every rate with batches of 3 and no wait, and
// counts the rates it was asked about.
std::atomic<int> planner_calls{0};
std::atomic<double> last_rate{0};
AdaptivePlan plan_batches_of_three(double rate_per_s, const AdaptiveCostModel&, const Options&) {
  ++planner_calls;
  last_rate = rate_per_s;
  AdaptivePlan p;
  p.valid = true;
  p.efficient = {3, 0};
  p.fast = {3, 0};
  return p;
}

// 1000 req/s of batches of 1, 3, 2 and 5 with t(b) = 400 + 30 b us: enough
// for the fit to have an intercept, so the strategy wants plans.
void feed(Feeder& f, int periods) {
  Traffic t;
  t.run_fixed = microseconds(400);
  t.run_per_item = microseconds(30);
  t.gap = microseconds(1000);
  t.latencies = {milliseconds(1)};
  const uint32_t sizes[] = {1, 3, 2, 5};
  size_t k = 0;
  const uint64_t until = f.state().evaluations + static_cast<uint64_t>(periods);
  while (f.state().evaluations < until) {
    t.size = sizes[k++ % std::size(sizes)];
    f.batch(t);
  }
}

TEST(AdaptivePlanner, TheStrategyPlansWithThePlannerItWasGiven) {
  planner_calls = 0;
  const Options o = adaptive_options(64, 5000, 20);
  Feeder f(o, plan_batches_of_three);
  feed(f, 2);
  ASSERT_GE(f.state().plans_made, 1u);
  EXPECT_EQ(planner_calls.load(), static_cast<int>(f.state().plans_made));
  const size_t bucket = adaptive_rate_bucket(1000);
  EXPECT_GT(last_rate.load(), 0);
  ASSERT_TRUE(f.state().plans[bucket].valid);
  EXPECT_EQ(f.state().plans[bucket].efficient.cap, 3u);
  // limits() applies that plan: batches of 3, no wait.
  const Limits l = f.limits(1000, 0);
  EXPECT_EQ(l.max_batch, 3u);
  EXPECT_EQ(l.max_wait, Duration(0));
}

TEST(AdaptivePlanner, WithoutAPlannerTheStrategyNeverPlans) {
  Feeder f(adaptive_options(64, 5000, 20), nullptr);
  feed(f, 4);
  EXPECT_EQ(f.state().plans_made, 0u);
  EXPECT_FALSE(f.state().plan_in_flight);
}

TEST(AdaptivePlanner, AnEngineRefusesTheAdaptiveStrategyUntilItHasAPlanner) {
  const auto factory = SyntheticRunner::factory({.fixed_us = 10, .per_item_us = 1});
  Options adaptive{.max_batch_size = 8};
  adaptive.strategy = StrategyKind::kAdaptive;

  // At start: refused, naming the strategy and what is missing.
  Engine without(factory, adaptive);
  const Status s = without.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("strategy = adaptive needs a planner"), std::string::npos)
      << s.message();

  // Retuned to adaptive: refused, and the options in force stay fifo.
  Engine fifo(factory, Options{.max_batch_size = 8});
  ASSERT_TRUE(fifo.start().ok());
  const Status r = fifo.set_options(adaptive);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("needs a planner"), std::string::npos) << r.message();
  EXPECT_EQ(fifo.status().options.strategy, StrategyKind::kFifo);
  // A planner is set before start, not after.
  EXPECT_FALSE(fifo.set_adaptive_planner(plan_batches_of_three).ok());
  fifo.stop();

  // With one: accepted at start and by a retune.
  Engine with(factory, adaptive);
  ASSERT_TRUE(with.set_adaptive_planner(plan_batches_of_three).ok());
  ASSERT_TRUE(with.start().ok());
  EXPECT_EQ(with.status().options.strategy, StrategyKind::kAdaptive);
  ASSERT_TRUE(with.set_options(Options{.max_batch_size = 8}).ok());
  ASSERT_TRUE(with.set_options(adaptive).ok());
  with.stop();
}

TEST(AdaptivePlanner, BatchedFnTakesOneForTheAdaptiveStrategy) {
  Options adaptive{.max_batch_size = 8, .max_wait_us = 100};
  adaptive.strategy = StrategyKind::kAdaptive;
  auto twice = [](std::span<int> in) {
    std::vector<int> out;
    for (int x : in) out.push_back(2 * x);
    return out;
  };
  EXPECT_THROW((BatchedFn<int, int>(twice, adaptive)), std::invalid_argument);
  BatchedFn<int, int> fn(twice, adaptive, nullptr, plan_batches_of_three);
  EXPECT_EQ(fn.call(21).get().value(), 42);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The adaptive strategy on explicit timestamps, fed batch and request records
// by hand (adaptive_feeder.h): when it evaluates, the cost line it fits, the
// keep-up and saturation sizes, the rates it reads, and that it never passes
// the options' maxima.

#include "tests/batching/adaptive_feeder.h"

namespace batchscope {
namespace {

using namespace adaptive_test;

// The state without plans: evaluation periods, the fit, the keep-up and
// saturation sizes, the rate it reads, backlogs shared over the lanes, and
// the maxima.

TEST(AdaptiveTest, MakeStrategyBuildsIt) {
  auto s = make_strategy(StrategyKind::kAdaptive, make_adaptive_plan);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind(), StrategyKind::kAdaptive);
  EXPECT_NE(dynamic_cast<AdaptiveStrategy*>(s.get()), nullptr);
}

TEST(AdaptiveTest, FreshStateCutsAsSoonAsALaneIsFreeSharingTheQueue) {
  struct Row {
    uint32_t max_batch;
    size_t queued;
    uint32_t idle;
    Decision::Kind kind;
    size_t count;  // kDispatch
  };
  const Row rows[] = {
      {32, 0, 1, Decision::Kind::kIdle, 0},        {32, 1, 1, Decision::Kind::kDispatch, 1},
      {32, 5, 1, Decision::Kind::kDispatch, 5},    {32, 5, 2, Decision::Kind::kDispatch, 3},
      {32, 40, 2, Decision::Kind::kDispatch, 20},  {32, 40, 4, Decision::Kind::kDispatch, 10},
      {32, 100, 1, Decision::Kind::kDispatch, 32}, {8, 40, 2, Decision::Kind::kDispatch, 8},
      {32, 3, 0, Decision::Kind::kDispatch, 3},  // a snapshot's 0 idle lanes counts as one
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message()
                 << "max_batch=" << r.max_batch << " queued=" << r.queued << " idle=" << r.idle);
    const Options o = adaptive_options(r.max_batch, 2000);
    AdaptiveStrategy s(make_adaptive_plan);
    QueueView q;
    q.size = r.queued;
    q.oldest_arrival = kStart;
    q.idle_lanes = r.idle;
    EXPECT_EQ(s.limits(q, o).max_wait, Duration(0));
    const Decision d = s.decide(q, kStart, o);
    EXPECT_EQ(d.kind, r.kind);
    if (r.kind == Decision::Kind::kDispatch) EXPECT_EQ(d.count, r.count);
  }
}

TEST(AdaptiveTest, EvaluatesEveryEightBatchesOrSixtyFourRequests) {
  struct Row {
    uint32_t size;
    int batches_per_eval;
  };
  const Row rows[] = {{1, 8}, {7, 8}, {8, 8}, {9, 8}, {16, 4}, {21, 4}, {22, 3}, {64, 1}, {100, 1}};
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "size=" << r.size);
    Feeder f(adaptive_options(128));
    Traffic t;
    t.size = r.size;
    t.latencies = {milliseconds(30)};
    for (int round = 1; round <= 3; ++round) {
      for (int i = 1; i < r.batches_per_eval; ++i) f.batch(t);
      EXPECT_EQ(f.state().evaluations, static_cast<uint64_t>(round - 1));
      f.batch(t);
      EXPECT_EQ(f.state().evaluations, static_cast<uint64_t>(round));
    }
  }
}

TEST(AdaptiveTest, CostModelFitsLineForgetsAndFallsBack) {
  // Varied sizes: recovers t(b) = 300 + 50 b exactly.
  {
    Feeder f(adaptive_options(64));
    Traffic t;
    t.run_fixed = microseconds(300);
    t.run_per_item = microseconds(50);
    t.latencies = {milliseconds(30)};
    for (uint32_t size : {2u, 30u, 9u, 17u, 64u}) {
      t.size = size;
      f.batch(t);
    }
    const auto m = adaptive_cost_model(f.state());
    ASSERT_TRUE(m.has_value());
    EXPECT_FALSE(m->proportional);
    EXPECT_NEAR(m->intercept_us, 300, 1e-6);
    EXPECT_NEAR(m->per_item_us, 50, 1e-6);
    EXPECT_NEAR(*adaptive_predict_run_us(f.state(), 100), 5300, 1e-6);

    // The machine slows down: t(b) = 600 + 100 b. Old samples are forgotten.
    t.run_fixed = microseconds(600);
    t.run_per_item = microseconds(100);
    for (int i = 0; i < 200; ++i) {
      t.size = 4 + static_cast<uint32_t>(i % 5) * 12;
      f.batch(t);
    }
    EXPECT_NEAR(*adaptive_predict_run_us(f.state(), 32), 600 + 100 * 32, 1.0);
  }
  // One size only: proportional through the origin, t(b) = (run / size) * b.
  {
    Feeder f(adaptive_options(64));
    EXPECT_FALSE(adaptive_cost_model(f.state()).has_value());
    EXPECT_FALSE(adaptive_predict_run_us(f.state(), 8).has_value());
    Traffic t;
    t.size = 10;
    t.run_fixed = microseconds(500);
    t.run_per_item = microseconds(50);  // 1000 us per batch of 10
    t.latencies = {milliseconds(30)};
    for (int i = 0; i < 5; ++i) f.batch(t);
    const auto m = adaptive_cost_model(f.state());
    ASSERT_TRUE(m.has_value());
    EXPECT_TRUE(m->proportional);
    EXPECT_NEAR(*adaptive_predict_run_us(f.state(), 40), 4000, 1e-6);
  }
}

// A state whose fit is t(b) = a + c b exactly.
AdaptiveState fitted(double a_us, double c_us, const Options& o) {
  Feeder f(o);
  Traffic t;
  t.run_fixed = microseconds(static_cast<int64_t>(a_us));
  t.run_per_item = microseconds(static_cast<int64_t>(c_us));
  t.latencies = {milliseconds(1)};
  for (uint32_t size : {1u, 4u, 16u, 2u}) {
    t.size = size;
    f.batch(t);
  }
  return f.state();
}

TEST(AdaptiveTest, KeepUpSizeIsTheSmallestBatchThatServesTheRateWithHeadroom) {
  // Brute force over b: lanes * b / t(b) >= 1.25 * rate, t(b) = 500 + 20 b.
  auto brute = [](double rate, uint32_t lanes, uint32_t max_batch) -> size_t {
    for (uint32_t b = 1; b <= max_batch; ++b) {
      if (lanes * b / (500.0 + 20.0 * b) * 1e6 >= kAdaptiveHeadroom * rate) return b;
    }
    return max_batch;
  };
  for (uint32_t lanes : {1u, 2u, 4u}) {
    Options o = adaptive_options(256);
    o.num_lanes = lanes;
    const AdaptiveState s = fitted(500, 20, o);
    for (double rate : {0.0, 100.0, 1500.0, 2000.0, 10'000.0, 20'000.0, 39'000.0, 1e9}) {
      SCOPED_TRACE(testing::Message() << "lanes=" << lanes << " rate=" << rate);
      EXPECT_EQ(adaptive_keep_up_size(s, rate, o), rate > 0 ? brute(rate, lanes, 256) : 1u);
    }
  }
  // Without a fit there is nothing to size from.
  EXPECT_EQ(adaptive_keep_up_size(AdaptiveState{}, 1e6, adaptive_options(64)), 1u);
}

TEST(AdaptiveTest, SaturationSizeReachesNinetyFivePercentOfTheAsymptote) {
  const Options o = adaptive_options(4096);
  // b / (a + c b) >= 0.95 / c  <=>  b >= 19 a / c.
  EXPECT_EQ(adaptive_saturation_size(fitted(300, 50, o), o), 114u);
  EXPECT_EQ(adaptive_saturation_size(fitted(100, 50, o), o), 38u);
  // Beyond the user's maximum: the maximum.
  EXPECT_EQ(adaptive_saturation_size(fitted(2000, 5, o), adaptive_options(256)), 256u);
  EXPECT_EQ(adaptive_saturation_size(AdaptiveState{}, o), 4096u);
}

TEST(AdaptiveTest, ReadsTheFastRateOnlyWhenABurstBegins) {
  AdaptiveState s;
  s.arrival_rate_per_s = 700;  // its own estimate
  struct Row {
    double smooth, fast, want;
  };
  const Row rows[] = {
      {1000, 0, 1000}, {1000, 1900, 1000}, {1000, 2000, 1000}, {1000, 2001, 2001},
      {0, 0, 700},     {0, 1500, 1500},  // smooth unknown: own, or fast above 2x it
  };
  for (const Row& r : rows) {
    QueueView q;
    q.arrival_rate_per_s = r.smooth;
    q.fast_rate_per_s = r.fast;
    EXPECT_EQ(adaptive_rate(s, q), r.want) << r.smooth << " " << r.fast;
  }
}

TEST(AdaptiveTest, NeverExceedsMaximaUnderRandomTrafficAndOptionChanges) {
  std::mt19937 rng(12345);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  using Range = std::pair<int64_t, int64_t>;
  const Range gaps[] = {{1, 20}, {20, 400}, {400, 20'000}};
  const Range latencies[] = {{100, 30'000}, {30'000, 80'000}, {80'000, 200'000}};
  Range regime_gap = gaps[0];
  Range regime_latency = latencies[0];
  Feeder f(adaptive_options(64));
  for (int i = 0; i < 3'000; ++i) {
    Options& o = f.options();
    if (uniform(0, 200) == 0) o.max_batch_size = static_cast<uint32_t>(uniform(1, 128));
    if (uniform(0, 200) == 0) o.max_wait_us = uniform(0, 20'000);
    if (uniform(0, 300) == 0) o.target_p99_ms = static_cast<double>(uniform(1, 100));
    if (uniform(0, 400) == 0) o.num_lanes = static_cast<uint32_t>(uniform(1, 8));
    // Regimes of a few hundred batches, so that plans are made and the guard
    // moves: fast or slow arrivals, low or high latencies.
    if (i % 400 == 0) {
      regime_gap = gaps[uniform(0, 2)];
      regime_latency = latencies[uniform(0, 2)];
    }
    Traffic t;
    t.size = static_cast<uint32_t>(uniform(1, 128));
    t.gap = microseconds(uniform(regime_gap.first, regime_gap.second));
    t.run_fixed = microseconds(uniform(0, 3000));
    t.run_per_item = microseconds(uniform(1, 500));
    t.latencies = {microseconds(uniform(regime_latency.first, regime_latency.second))};
    f.batch(t);

    const double rates[] = {0, 1e-3, 50, 5000, 1e9};
    const double rate = rates[uniform(0, 4)];
    const size_t queued = static_cast<size_t>(uniform(0, 300));
    const uint32_t idle = static_cast<uint32_t>(uniform(0, 8));
    const Limits l = f.limits(rate, queued, idle);
    ASSERT_GE(l.max_batch, 1u);
    ASSERT_LE(l.max_batch, o.max_batch_size) << "step " << i;
    ASSERT_GE(l.max_wait, Duration(0));
    ASSERT_LE(l.max_wait, microseconds(o.max_wait_us)) << "step " << i;

    QueueView q;
    q.size = queued;
    q.oldest_arrival = kStart;
    q.arrival_rate_per_s = rate;
    q.idle_lanes = idle;
    const Decision d = f.strategy().decide(q, kStart + microseconds(uniform(0, 30'000)), o);
    if (d.kind == Decision::Kind::kDispatch) {
      ASSERT_LE(d.count, o.max_batch_size);
    }
  }
  EXPECT_GT(f.state().plans_made, 0u) << "the random traffic never made a plan";
}

TEST(AdaptiveTest, FailedBatchesAndNonOkRequestsAreNotEvidence) {
  AdaptiveStrategy s(make_adaptive_plan);
  const Options o = adaptive_options(32);
  std::vector<RequestRecord> reqs(4);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].times.arrival = kStart + microseconds(10 * static_cast<int64_t>(i));
    reqs[i].times.completed = reqs[i].times.arrival + milliseconds(500);
    reqs[i].outcome = Outcome::kModelError;
  }
  BatchRecord b;
  b.size = 4;
  b.failed = true;
  b.run_start = kStart;
  b.run_end = kStart + microseconds(5);
  s.observe(b, reqs, {}, o);
  EXPECT_FALSE(adaptive_cost_model(s.state()).has_value());
  EXPECT_EQ(s.state().latency_count, 0u);
  EXPECT_EQ(s.state().batches_since_eval, 1u);

  reqs[2].outcome = Outcome::kOk;
  b.failed = false;
  s.observe(b, reqs, {}, o);
  EXPECT_TRUE(adaptive_cost_model(s.state()).has_value());
  EXPECT_EQ(s.state().latency_count, 1u);
  EXPECT_DOUBLE_EQ(s.state().latencies_us[0], 500'000.0);
}

// A lane that prepares its batch learns the lengths as it runs: a batch that
// failed, or whose every request failed, has none, and says nothing of
// whether they vary.
TEST(AdaptiveTest, ABatchWithoutAnswersDoesNotSayTheLengthsStoppedVarying) {
  AdaptiveStrategy s(make_adaptive_plan);
  const Options o = adaptive_options(32);
  std::vector<RequestRecord> reqs(2);
  for (RequestRecord& r : reqs) {
    r.times.arrival = kStart;
    r.times.completed = kStart + milliseconds(1);
  }
  BatchRecord b;
  b.size = 2;
  b.run_start = kStart;
  b.run_end = kStart + microseconds(50);
  b.longest = 40;
  b.length_sum = 60;
  const std::vector<uint32_t> lengths = {20, 40};
  s.observe(b, reqs, lengths, o);
  ASSERT_TRUE(s.state().lengths_vary);
  const uint32_t seen = s.state().length_count;
  b.longest = b.length_sum = 0;
  for (RequestRecord& r : reqs) r.outcome = Outcome::kModelError;
  s.observe(b, reqs, {}, o);  // every request's preprocess failed
  b.failed = true;
  s.observe(b, reqs, {}, o);  // the batch failed
  EXPECT_TRUE(s.state().lengths_vary);
  EXPECT_EQ(s.state().length_count, seen);
  EXPECT_TRUE(adaptive_cost_model(s.state()).has_value());
}

// Where lengths vary, the fit is per padded element, so single requests at
// a light load separate the fixed cost from the per-token one; it reads out
// at the mean padded length. The planner gets the latest lengths, oldest
// first, and the padding policy, which keys the plans.
TEST(AdaptiveTest, WhereLengthsVaryTheFitIsPerPaddedElementAndThePlannerGetsTheLengths) {
  std::vector<AdaptiveCostModel> models;
  std::vector<Padding> policies;
  AdaptivePlanner planner = [&](double rate, const AdaptiveCostModel& m, const Options& o) {
    models.push_back(m);
    policies.push_back(o.padding);
    return make_adaptive_plan(rate, m, o);
  };
  Feeder f(adaptive_options(), planner);
  Traffic t;
  t.size = 1;
  t.gap = milliseconds(10);
  t.run_fixed = microseconds(300);
  t.run_per_item = microseconds(0);
  t.run_per_token = microseconds(2);
  t.lengths = {16, 48, 200, 24, 96};
  t.latencies = {milliseconds(2)};
  double w = 0, l = 0;
  for (size_t i = 0; i < 300; ++i) {
    f.batch(t);
    w = kAdaptiveForgetting * w + 1;
    l = kAdaptiveForgetting * l + t.lengths[i % t.lengths.size()];
  }
  const auto m = adaptive_cost_model(f.state());
  ASSERT_TRUE(m.has_value());
  EXPECT_FALSE(m->proportional);
  EXPECT_NEAR(m->padded_length, l / w, 1e-9 * l / w);
  EXPECT_NEAR(m->intercept_us, 300, 1e-6);
  EXPECT_NEAR(m->per_item_us, 2 * l / w, 1e-6);
  EXPECT_TRUE(m->lengths.empty());  // only plans carry them

  EXPECT_EQ(f.state().length_count, kAdaptiveLengthWindow);
  ASSERT_FALSE(models.empty());
  EXPECT_GT(f.state().plans_made, 0u);
  for (const AdaptiveCostModel& asked : models) {
    EXPECT_GT(asked.padded_length, 16);
    ASSERT_FALSE(asked.lengths.empty());
    EXPECT_LE(asked.lengths.size(), kAdaptiveLengthWindow);
    // Consecutive, in the order they were served.
    const auto at = std::find(t.lengths.begin(), t.lengths.end(), asked.lengths[0]);
    ASSERT_NE(at, t.lengths.end());
    size_t k = static_cast<size_t>(at - t.lengths.begin());
    for (uint32_t length : asked.lengths) EXPECT_EQ(length, t.lengths[k++ % t.lengths.size()]);
  }
  EXPECT_EQ(f.state().plan_key.padding, Padding::kLongest);

  // Another padding policy: the plans made for the old one go, and new ones
  // are made for it.
  f.options().padding = Padding::kSorted;
  for (int i = 0; i < 40; ++i) f.batch(t);
  EXPECT_EQ(f.state().plan_key.padding, Padding::kSorted);
  EXPECT_GT(f.state().plans_made, 0u);
  EXPECT_EQ(policies.back(), Padding::kSorted);

  // Then a model whose lengths do not vary (the engine's model swapped):
  // the fit, the lengths and the plans start again, and it plans without
  // lengths.
  models.clear();
  Traffic plain;
  plain.size = 1;
  f.batch(plain);
  EXPECT_EQ(f.state().length_count, 0u);
  EXPECT_EQ(f.state().plans_made, 0u);
  ASSERT_TRUE(adaptive_cost_model(f.state()).has_value());
  EXPECT_EQ(adaptive_cost_model(f.state())->padded_length, 0);
  EXPECT_EQ(adaptive_cost_model(f.state())->per_item_us, 125);  // the new model's alone
  for (int i = 0; i < 200; ++i) {
    plain.size = 1 + i % 4;
    f.batch(plain);
  }
  EXPECT_EQ(f.state().length_count, 0u);
  EXPECT_GT(f.state().plans_made, 0u);
  ASSERT_FALSE(models.empty());
  for (const AdaptiveCostModel& asked : models) {
    EXPECT_TRUE(asked.lengths.empty());
    EXPECT_EQ(asked.padded_length, 0);
  }
}

}  // namespace
}  // namespace batchscope

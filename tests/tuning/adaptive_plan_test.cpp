// SPDX-License-Identifier: GPL-3.0-or-later
// The adaptive strategy's plans, the guard between their two choices, and
// what it all is for: on step, burst and sine traffic, adaptive meets any p99
// target that the best static configuration the tuner finds meets, at the
// same throughput (replayed on the predictor, so no test times anything).

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/batching/adaptive_feeder.h"
#include "tuning/cost_model.h"
#include "tuning/predictor.h"
#include "tuning/tuner.h"

namespace batchscope {
namespace {

using namespace adaptive_test;

AdaptiveCostModel line(double a_us, double c_us) {
  AdaptiveCostModel m;
  m.intercept_us = a_us;
  m.per_item_us = c_us;
  return m;
}

// Where lengths vary, the plan replays them under the padding policy in
// force, and its efficient choice is the least model time per request, not
// the fewest batches: under `longest`, batching a short request with a long
// one pads it to the long one's length.
TEST(AdaptivePlanTest, WhereLengthsVaryTheEfficientChoiceWeighsThePadding) {
  Options o = adaptive_options(32, 20000, 200);
  AdaptiveCostModel m = line(20, 100);
  // Without lengths a batch of b saves (b - 1) x 20 us: the efficient choice
  // waits and batches.
  const AdaptivePlan plain = make_adaptive_plan(2000, m, o);
  ASSERT_TRUE(plain.valid);
  EXPECT_GT(plain.efficient.wait_ns, 0);
  EXPECT_GT(plain.efficient.cap, 1u);
  // Lengths 16 and 496 in turn, 100 us per request at 256 (4 us + 0.39 us
  // per token): a pair costs 20 + 2 x 496 x 0.39 = 408 us padded, against
  // 240 us run apart. Waiting to batch only adds padding.
  m.padded_length = 256;
  m.lengths = {16, 496};
  const AdaptivePlan padded = make_adaptive_plan(2000, m, o);
  ASSERT_TRUE(padded.valid);
  EXPECT_EQ(padded.efficient.wait_ns, 0);
  EXPECT_LT(padded.efficient.cap, plain.efficient.cap);
  // In buckets of their own, the short ones batch with no padding and the
  // plan waits for them again.
  o.padding = Padding::kBuckets;
  ASSERT_TRUE(parse_length_buckets("32,512", o).ok());
  const AdaptivePlan bucketed = make_adaptive_plan(2000, m, o);
  ASSERT_TRUE(bucketed.valid);
  EXPECT_GT(bucketed.efficient.wait_ns, 0);
  // The same lengths at one length are no padding: the plan is the plain one.
  m.lengths = {256};
  o.padding = Padding::kLongest;
  const AdaptivePlan even = make_adaptive_plan(2000, m, o);
  EXPECT_EQ(even.efficient.cap, plain.efficient.cap);
  EXPECT_EQ(even.efficient.wait_ns, plain.efficient.wait_ns);
  EXPECT_EQ(even.fast.cap, plain.fast.cap);
  EXPECT_EQ(even.fast.wait_ns, plain.fast.wait_ns);
}

TEST(AdaptivePlanTest, RateBucketsAreGeometric) {
  EXPECT_EQ(adaptive_rate_bucket(0), 0u);
  EXPECT_EQ(adaptive_rate_bucket(-5), 0u);
  EXPECT_EQ(adaptive_rate_bucket(1.0), 0u);
  EXPECT_EQ(adaptive_rate_bucket(1e300), kAdaptiveRateBuckets - 1);
  EXPECT_EQ(adaptive_rate_bucket(std::nan("")), 0u);
  for (size_t b = 0; b + 1 < kAdaptiveRateBuckets; ++b) {
    const double lo = std::pow(kAdaptiveRateStep, static_cast<double>(b));
    EXPECT_EQ(adaptive_rate_bucket(lo * 1.0001), b);
    EXPECT_EQ(adaptive_rate_bucket(lo * kAdaptiveRateStep * 0.9999), b);
    EXPECT_EQ(adaptive_rate_bucket(adaptive_bucket_rate(b)), b);
  }
}

// What the plan replays, written out again: the same Poisson arrivals.
PredictSpec plan_spec(double rate, AdaptiveCostModel m, Options o) {
  PredictSpec s;
  s.cost = *CostModel::from_points(
      {{1, m.intercept_us + m.per_item_us, 0}, {2, m.intercept_us + 2 * m.per_item_us, 0}});
  s.options = o;
  s.options.strategy = StrategyKind::kFifo;
  s.arrivals.pattern = Pattern::kPoisson;
  s.arrivals.rate = rate;
  s.arrivals.max_requests = kAdaptivePlanRequests;
  s.arrivals.duration_s = 2.0 * kAdaptivePlanRequests / rate;
  s.arrivals.seed = 1;
  return s;
}

struct Replayed {
  double p99_ms = 0;  // nearest rank, as the plan ranks candidates
  double batches_per_ok = 0;
  bool lossless = false;
};

Replayed replay(PredictSpec s, uint32_t cap, int64_t wait_ns) {
  s.options.max_batch_size = cap;
  s.options.max_wait_us = wait_ns / 1000;
  const RunData run = predict_run(s);
  std::vector<double> ms;
  for (const RunRequest& r : run.requests) {
    if (r.outcome == Outcome::kOk) ms.push_back(to_us(r.done - r.intended) / 1000.0);
  }
  Replayed out;
  out.lossless = ms.size() == run.requests.size();
  if (ms.empty()) return out;
  std::sort(ms.begin(), ms.end());
  out.p99_ms = ms[static_cast<size_t>(std::ceil(0.99 * static_cast<double>(ms.size()))) - 1];
  out.batches_per_ok = static_cast<double>(run.batches.size()) / static_cast<double>(ms.size());
  return out;
}

TEST(AdaptivePlanTest, TheFastChoiceBeatsFifoWithNoWaitAndTheEfficientOneKeepsItsBudget) {
  for (uint32_t lanes : {1u, 2u}) {
    for (double rate : {300.0, 3000.0, 12'000.0, 30'000.0}) {
      SCOPED_TRACE(testing::Message() << "lanes=" << lanes << " rate=" << rate);
      Options o = adaptive_options(256, 20'000, 10);
      o.num_lanes = lanes;
      const AdaptivePlan p = make_adaptive_plan(rate, line(500, 20), o);
      ASSERT_TRUE(p.valid);
      const PredictSpec s = plan_spec(rate, line(500, 20), o);
      const Replayed fast = replay(s, p.fast.cap, p.fast.wait_ns);
      const Replayed eff = replay(s, p.efficient.cap, p.efficient.wait_ns);
      EXPECT_DOUBLE_EQ(fast.p99_ms, p.fast_p99_ms);
      EXPECT_DOUBLE_EQ(eff.p99_ms, p.efficient_p99_ms);
      // No candidate of the grid is faster than the fast choice, fifo with
      // no wait at any of its caps among them.
      for (uint32_t cap : {1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u, 256u}) {
        const Replayed greedy = replay(s, cap, 0);
        if (!greedy.lossless) continue;
        EXPECT_LE(p.fast_p99_ms, greedy.p99_ms) << "cap " << cap;
      }
      // The efficient choice stays within half the target, and no cap of
      // the grid with no wait meets it with fewer batches.
      EXPECT_LE(p.efficient_p99_ms, kAdaptiveBudgetShare * o.target_p99_ms);
      for (uint32_t cap : {1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u, 256u}) {
        const Replayed greedy = replay(s, cap, 0);
        if (!greedy.lossless || greedy.p99_ms > kAdaptiveBudgetShare * o.target_p99_ms) continue;
        EXPECT_LE(eff.batches_per_ok, greedy.batches_per_ok) << "cap " << cap;
      }
    }
  }
}

TEST(AdaptivePlanTest, APlanRespectsTheMaximaAndBatchesWhereTheLoadNeedsIt) {
  // t(b) = 2000 us whatever b, one lane, 4000 req/s: a batch of 8 or more
  // keeps up, smaller ones cannot.
  Options o = adaptive_options(256, 20'000, 50);
  AdaptivePlan p = make_adaptive_plan(4000, line(2000, 0), o);
  ASSERT_TRUE(p.valid);
  EXPECT_GE(p.fast.cap, 8u);
  EXPECT_GE(p.efficient.cap, 8u);
  // Lower maxima bound every choice.
  o.max_batch_size = 4;
  o.max_wait_us = 0;
  p = make_adaptive_plan(4000, line(2000, 0), o);
  ASSERT_TRUE(p.valid);
  for (const AdaptiveLimits& l : {p.fast, p.efficient}) {
    EXPECT_LE(l.cap, 4u);
    EXPECT_EQ(l.wait_ns, 0);
  }
  // The same inputs give the same plan.
  const AdaptivePlan again = make_adaptive_plan(4000, line(2000, 0), o);
  EXPECT_EQ(again.fast.cap, p.fast.cap);
  EXPECT_EQ(again.efficient.wait_ns, p.efficient.wait_ns);
  EXPECT_EQ(again.fast_p99_ms, p.fast_p99_ms);
  // No rate, no plan.
  EXPECT_FALSE(make_adaptive_plan(0, line(2000, 0), o).valid);
  EXPECT_FALSE(make_adaptive_plan(std::nan(""), line(2000, 0), o).valid);
  EXPECT_FALSE(make_adaptive_plan(INFINITY, line(2000, 0), o).valid);
}

TEST(AdaptivePlanTest, ExtremeOptionsAndRatesStillGiveBoundedPlans) {
  struct Row {
    uint32_t max_batch, lanes;
    double rate, a_us, c_us;
  };
  const Row rows[] = {
      {4096, 64, 1e9, 500, 20},      {4096, 1, 0.5, 500, 20}, {4096, 64, 1000, 0, 0},
      {4096, 8, 30'000, 1e-3, 1e-3}, {2, 64, 1.3, 10, 1},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "max_batch=" << r.max_batch << " lanes=" << r.lanes
                                    << " rate=" << r.rate << " a=" << r.a_us << " c=" << r.c_us);
    Options o = adaptive_options(r.max_batch, 20'000, 10);
    o.num_lanes = r.lanes;
    const AdaptivePlan p = make_adaptive_plan(r.rate, line(r.a_us, r.c_us), o);
    ASSERT_TRUE(p.valid);
    for (const AdaptiveLimits& l : {p.fast, p.efficient}) {
      EXPECT_GE(l.cap, 1u);
      EXPECT_LE(l.cap, r.max_batch);
      EXPECT_GE(l.wait_ns, 0);
      EXPECT_LE(l.wait_ns, 20'000'000);
    }
  }
  // A model that takes an hour a batch answers nothing within the run: no
  // evidence, no plan.
  EXPECT_FALSE(make_adaptive_plan(50'000, line(3.6e9, 0), adaptive_options(1)).valid);
}

// Feeds batches of varied sizes with t(b) = a + c b, arrivals `gap` apart,
// until `periods` evaluations have passed.
void feed(Feeder& f, int64_t a_us, int64_t c_us, Duration gap, Duration latency, int periods) {
  Traffic t;
  t.run_fixed = microseconds(a_us);
  t.run_per_item = microseconds(c_us);
  t.gap = gap;
  t.latencies = {latency};
  const uint32_t sizes[] = {1, 3, 2, 5};
  size_t k = 0;
  const uint64_t until = f.state().evaluations + static_cast<uint64_t>(periods);
  while (f.state().evaluations < until) {
    t.size = sizes[k++ % std::size(sizes)];
    f.batch(t);
  }
}

TEST(AdaptivePlanTest, PlansTheRateItSeesOnceTheFitHasAnInterceptAndUsesThem) {
  const Options o = adaptive_options(64, 5000, 20);
  // One size only: the fit is proportional and nothing is planned.
  Feeder flat(o);
  Traffic same;
  same.size = 4;
  same.latencies = {milliseconds(1)};
  for (int i = 0; i < 100; ++i) flat.batch(same);
  EXPECT_EQ(flat.state().plans_made, 0u);

  // 1000 req/s with t(b) = 400 + 30 b: the rate's bucket and then its
  // neighbours, one plan per period.
  Feeder f(o);
  feed(f, 400, 30, microseconds(1000), milliseconds(1), 1);
  ASSERT_EQ(f.state().plans_made, 1u);
  const size_t bucket = adaptive_rate_bucket(f.state().arrival_rate_per_s);
  EXPECT_EQ(bucket, adaptive_rate_bucket(1000));
  EXPECT_TRUE(f.state().plans[bucket].valid);
  feed(f, 400, 30, microseconds(1000), milliseconds(1), 3);
  EXPECT_EQ(f.state().plans_made, 3u);
  EXPECT_TRUE(f.state().plans[bucket + 1].valid);
  EXPECT_TRUE(f.state().plans[bucket - 1].valid);

  // The plan is the one make_adaptive_plan() gives for the bucket's rate on
  // the fit, and limits() applies its efficient choice.
  const AdaptivePlan want = make_adaptive_plan(adaptive_bucket_rate(bucket), line(400, 30), o);
  const AdaptivePlan& got = f.state().plans[bucket];
  EXPECT_EQ(got.efficient.cap, want.efficient.cap);
  EXPECT_EQ(got.efficient.wait_ns, want.efficient.wait_ns);
  EXPECT_EQ(got.fast.cap, want.fast.cap);
  const Limits l = f.limits(1000, 0);
  EXPECT_EQ(l.max_batch, got.efficient.cap);
  EXPECT_EQ(l.max_wait, Duration(got.efficient.wait_ns));
  // A rate kAdaptivePlanReach buckets beyond the planned ones borrows the
  // nearest plan; one bucket further falls back to keep-up.
  EXPECT_NE(adaptive_plan_for(f.state(), 1000 * std::pow(1.25, 3), o), nullptr);
  EXPECT_EQ(adaptive_plan_for(f.state(), 1000 * std::pow(1.25, 4), o), nullptr);

  // Options the plans were not made for: not used, then planned afresh.
  Options other = o;
  other.target_p99_ms = 3;
  f.options() = other;
  EXPECT_EQ(adaptive_plan_for(f.state(), 1000, other), nullptr);
  EXPECT_EQ(f.limits(1000, 0).max_wait, Duration(0));
  feed(f, 400, 30, microseconds(1000), milliseconds(1), 1);
  EXPECT_EQ(f.state().plans_made, 1u);
  EXPECT_EQ(f.state().plan_key.target_p99_ms, 3);
  EXPECT_NE(adaptive_plan_for(f.state(), 1000, other), nullptr);

  // The model slows down by half: the plans go and are made again on the new fit.
  feed(f, 600, 45, microseconds(1000), milliseconds(1), 30);
  EXPECT_NEAR(f.state().plan_key.intercept_us, 600, 600 * kAdaptiveReplanDrift);
  EXPECT_NEAR(f.state().plan_key.per_item_us, 45, 45 * kAdaptiveReplanDrift);
}

TEST(AdaptivePlanTest, TheGuardTakesTheFastChoiceAtOnceAndTheEfficientOneBackAfterCalm) {
  const Options o = adaptive_options(64, 5000, 20);  // stop above 16 ms, resume below 10 ms
  Feeder f(o);
  feed(f, 400, 30, microseconds(1000), milliseconds(12), 2);
  EXPECT_TRUE(f.state().efficient);
  // One period over 16 ms switches at once and clears the window.
  feed(f, 400, 30, microseconds(1000), milliseconds(17), 1);
  EXPECT_FALSE(f.state().efficient);
  EXPECT_EQ(f.state().guard_switches, 1u);
  EXPECT_EQ(f.state().latency_count, 0u);
  const AdaptivePlan* p = adaptive_plan_for(f.state(), 1000, o);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(f.limits(1000, 0).max_batch, p->fast.cap);
  EXPECT_EQ(f.limits(1000, 0).max_wait, Duration(p->fast.wait_ns));
  // Two calm periods are not enough, the third brings the efficient choice back.
  feed(f, 400, 30, microseconds(1000), milliseconds(5), 2);
  EXPECT_FALSE(f.state().efficient);
  feed(f, 400, 30, microseconds(1000), milliseconds(5), 1);
  EXPECT_TRUE(f.state().efficient);
  EXPECT_EQ(f.state().guard_switches, 2u);
  // Off again; a period in between restarts the count, and its latencies
  // keep the window's p99 above the resume threshold while they are in it.
  feed(f, 400, 30, microseconds(1000), milliseconds(17), 1);
  EXPECT_FALSE(f.state().efficient);
  feed(f, 400, 30, microseconds(1000), milliseconds(5), 2);
  feed(f, 400, 30, microseconds(1000), milliseconds(12), 1);
  EXPECT_EQ(f.state().calm_streak, 0);
  feed(f, 400, 30, microseconds(1000), milliseconds(5), 3);
  EXPECT_FALSE(f.state().efficient);
  EXPECT_EQ(f.state().guard_switches, 3u);
}

TEST(AdaptivePlanTest, UnderAPlanABacklogIsSharedUpToTheSaturationSize) {
  // t(b) = 100 + 50 b: 95% of the asymptote 1/c at b = 38.
  const Options o = adaptive_options(256, 5000, 20);
  Feeder f(o);
  feed(f, 100, 50, microseconds(1000), milliseconds(1), 2);
  // A plan of cap 8 for 1000/s, installed by hand.
  AdaptiveState st = f.state();
  AdaptivePlanRequest r;
  r.key = st.plan_key;
  r.bucket = static_cast<uint32_t>(adaptive_rate_bucket(1000));
  AdaptivePlan plan;
  plan.valid = true;
  plan.efficient = plan.fast = {8, 0};
  adaptive_install_plan(st, r, plan);
  auto cap = [&](size_t queued, uint32_t idle) {
    QueueView q;
    q.size = queued;
    q.oldest_arrival = kStart;
    q.arrival_rate_per_s = 1000;
    q.idle_lanes = idle;
    return adaptive_limits(st, q, o).max_batch;
  };
  EXPECT_EQ(cap(0, 1), 8u);
  EXPECT_EQ(cap(30, 1), 30u);
  EXPECT_EQ(cap(60, 2), 30u);
  EXPECT_EQ(cap(200, 1), 38u);
  EXPECT_EQ(cap(200, 4), 38u);
  // A plan for another key (the fit moved) is not installed.
  r.key.intercept_us += 1;
  plan.efficient = plan.fast = {2, 0};
  adaptive_install_plan(st, r, plan);
  EXPECT_EQ(cap(0, 1), 8u);
}

TEST(AdaptivePlanTest, APlannedWaitKeepsTheFifoDeadlineBoundary) {
  // A light load on a model with a large fixed cost: the efficient choice
  // waits to fill batches.
  const Options o = adaptive_options(64, 20'000, 50);
  Feeder f(o);
  feed(f, 5000, 10, microseconds(1000), milliseconds(10), 2);
  const Limits l = f.limits(1000, 1);
  ASSERT_GT(l.max_wait, Duration(0)) << "no planned wait to test";
  ASSERT_GT(l.max_batch, 1u);
  QueueView q;
  q.size = 1;
  q.oldest_arrival = kStart;
  q.arrival_rate_per_s = 1000;
  const Decision before = f.strategy().decide(q, kStart + l.max_wait - Duration(1), o);
  EXPECT_EQ(before.kind, Decision::Kind::kWait);
  EXPECT_EQ(before.until, kStart + l.max_wait);
  EXPECT_EQ(before.wake_at_size, l.max_batch);
  const Decision at = f.strategy().decide(q, kStart + l.max_wait, o);
  EXPECT_EQ(at.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(at.reason, BatchReason::kTimeout);
  q.size = l.max_batch;
  EXPECT_EQ(f.strategy().decide(q, kStart, o).reason, BatchReason::kFull);
}

TEST(AdaptivePlanTest, PlansGoWhenTheModelSlowsWhateverShapeTheFitTakes) {
  const Options o = adaptive_options(64, 5000, 20);
  Feeder f(o);
  feed(f, 400, 30, microseconds(1000), milliseconds(1), 2);
  ASSERT_GT(f.state().plans_made, 0u);
  // Every batch the same size from now on, and three times slower.
  Traffic t;
  t.size = 4;
  t.run_fixed = microseconds(1200);
  t.run_per_item = microseconds(90);
  t.latencies = {milliseconds(1)};
  for (int i = 0; i < 400; ++i) f.batch(t);
  ASSERT_TRUE(adaptive_cost_model(f.state())->proportional);
  // The plans made for t(4) = 520 us are gone; any plan in force now was
  // made on a fit within the drift of t(4) = 1560 us.
  const AdaptivePlanKey& k = f.state().plan_key;
  if (f.state().plans_made > 0) {
    EXPECT_NEAR(k.intercept_us + 4 * k.per_item_us, 1560, 1560 * kAdaptiveReplanDrift);
  } else {
    EXPECT_EQ(adaptive_plan_for(f.state(), 1000, o), nullptr);
  }
}

// ---- what it is for ----

struct Case {
  const char* name;
  ArrivalSpec arrivals;
  uint32_t lanes;
  double slo_ms;
};

ArrivalSpec step() {
  ArrivalSpec a;
  a.pattern = Pattern::kStep;
  a.steps = {{500, 1}, {6000, 1}, {12'000, 1}, {1500, 1}};
  a.duration_s = 4;
  a.seed = 3;
  return a;
}

ArrivalSpec burst() {
  ArrivalSpec a;
  a.pattern = Pattern::kBurst;
  a.rate = 12'000;
  a.rate_low = 1000;
  a.on_s = 0.5;
  a.off_s = 1;
  a.duration_s = 4.5;
  a.seed = 3;
  return a;
}

ArrivalSpec sine() {
  ArrivalSpec a;
  a.pattern = Pattern::kSine;
  a.rate_min = 200;
  a.rate_max = 10'000;
  a.period_s = 4;
  a.duration_s = 4;
  a.seed = 3;
  return a;
}

TEST(AdaptivePlanTest, MeetsEveryTargetTheBestStaticConfigurationMeets) {
  // t(b) = 500 + 20 b us: one request alone takes 0.52 ms (1900/s), a batch
  // of 64 serves 35,000/s.
  const CostModel cost = *CostModel::from_points({{1, 520, 0}, {2, 540, 0}});
  const Case cases[] = {
      {"step", step(), 1, 5},   {"step", step(), 2, 2}, {"burst", burst(), 1, 5},
      {"burst", burst(), 2, 2}, {"sine", sine(), 1, 3}, {"sine", sine(), 2, 1.5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.name << " lanes=" << c.lanes << " slo=" << c.slo_ms);
    PredictSpec spec;
    spec.arrivals = c.arrivals;
    spec.cost = cost;
    auto evaluate = [&](const Options& o) {
      PredictSpec s = spec;
      s.options = o;
      return evaluated_from(o, predict(s));
    };
    auto space =
        TuneSpace::parse("max_batch_size=1..128,max_wait_ms=0..2,lanes=" + std::to_string(c.lanes));
    ASSERT_TRUE(space.ok());
    TuneSettings settings;
    settings.slo_p99_ms = c.slo_ms;
    const TuneResult r = search(*space, Options{}, settings, evaluate);
    ASSERT_TRUE(r.best.ok()) << "no static configuration meets the target: pick another case";

    Options a;
    a.strategy = StrategyKind::kAdaptive;
    a.max_batch_size = 128;
    a.max_wait_us = 20'000;
    a.num_lanes = c.lanes;
    a.target_p99_ms = c.slo_ms;
    const Evaluated got = evaluate(a);
    EXPECT_LE(got.p99_ms, c.slo_ms)
        << "best static: " << describe(r.best->options) << " p99 " << r.best->p99_ms;
    EXPECT_GE(got.throughput_rps, 0.95 * r.best->throughput_rps);
    EXPECT_LE(got.loss_rate(), kLossTolerance);
  }
}

}  // namespace
}  // namespace batchscope

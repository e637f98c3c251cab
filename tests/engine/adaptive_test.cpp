#include "adaptive_feeder.h"

namespace batchscope {
namespace {

using namespace adaptive_test;

// The batch cap: evaluation periods, AIMD with hysteresis, the maxima and
// the throughput floor.

TEST(AdaptiveTest, MakeStrategyBuildsIt) {
  auto s = make_strategy(StrategyKind::kAdaptive);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind(), StrategyKind::kAdaptive);
  EXPECT_NE(dynamic_cast<AdaptiveStrategy*>(s.get()), nullptr);
}

TEST(AdaptiveTest, FreshStateBehavesLikeFifo) {
  struct Row {
    uint32_t max_batch;
    int64_t max_wait_us;
    size_t queued;
    int64_t waited_us;  // now - oldest
  };
  const Row rows[] = {
      {32, 2000, 0, 0},     {32, 2000, 1, 0},  {32, 2000, 31, 1999},
      {32, 2000, 31, 2000}, {32, 2000, 32, 0}, {32, 2000, 100, 0},
      {1, 2000, 1, 0},      {8, 0, 3, 0},      {4096, 10'000'000, 5, 9'999'999},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "max_batch=" << r.max_batch << " queued=" << r.queued
                                    << " waited=" << r.waited_us);
    const Options o = adaptive_options(r.max_batch, r.max_wait_us);
    AdaptiveStrategy s;
    QueueView q{r.queued, kStart, 0};
    const Limits l = s.limits(q, o);
    EXPECT_EQ(l.max_batch, r.max_batch);
    EXPECT_EQ(l.max_wait, microseconds(r.max_wait_us));
    const TimePoint now = kStart + microseconds(r.waited_us);
    const Decision got = s.decide(q, now, o);
    const Decision want = decide_fifo(q, now, Limits{r.max_batch, microseconds(r.max_wait_us)});
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.count, want.count);
    EXPECT_EQ(got.reason, want.reason);
    EXPECT_EQ(got.until, want.until);
    EXPECT_EQ(got.wake_at_size, want.wake_at_size);
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
    t.latencies = {milliseconds(45)};  // in band: no cap changes
    for (int round = 1; round <= 3; ++round) {
      for (int i = 1; i < r.batches_per_eval; ++i) f.batch(t);
      EXPECT_EQ(f.state().evaluations, static_cast<uint64_t>(round - 1));
      f.batch(t);
      EXPECT_EQ(f.state().evaluations, static_cast<uint64_t>(round));
    }
  }
}

TEST(AdaptiveTest, SustainedHighP99HalvesCapAfterTwoPeriods) {
  Feeder f(adaptive_options(32));
  Traffic over;  // 8 per batch, 1000/s, p99 60 ms against 50 ms
  // Not before the second period: one period, then all but the last batch of the next.
  f.period(over);
  EXPECT_EQ(f.cap(), 32u);
  EXPECT_EQ(f.state().over_streak, 1);
  for (int i = 0; i < 7; ++i) f.batch(over);
  EXPECT_EQ(f.cap(), 32u);
  f.batch(over);
  EXPECT_EQ(f.cap(), 16u);
  EXPECT_EQ(f.state().cap, 16u);
  EXPECT_EQ(f.state().over_streak, 0);
  EXPECT_EQ(f.state().latency_count, 0u);  // fresh evidence for the next decision

  const size_t after_each_period[] = {16, 8, 8, 4, 4, 2, 2, 1, 1, 1, 1};
  for (size_t i = 0; i < std::size(after_each_period); ++i) {
    f.period(over);
    EXPECT_EQ(f.cap(), after_each_period[i]) << "period " << i + 3;
    EXPECT_LE(f.limits().max_batch, 32u);
  }
}

TEST(AdaptiveTest, LowP99GrowsCapAdditivelyToMaxNotBeyond) {
  Feeder f(adaptive_options(32));
  Traffic over;
  while (f.cap() > 1) f.period(over);  // cut to the bottom first

  Traffic low = over;
  low.latencies = {milliseconds(20)};  // below 0.8 * 50 ms
  size_t expected = 1;
  const size_t step = 32 / 16;
  for (int period = 1; period <= 60; ++period) {
    f.period(low);
    if (period % 3 == 0) expected = std::min<size_t>(32, expected + step);
    ASSERT_EQ(f.cap(), expected) << "period " << period;
    ASSERT_LE(f.limits().max_batch, 32u);
  }
  EXPECT_EQ(expected, 32u);
  EXPECT_EQ(f.state().cap, 0u);  // no throttle left: a raised maximum applies at once
  f.options().max_batch_size = 48;
  EXPECT_EQ(f.limits().max_batch, 48u);
}

TEST(AdaptiveTest, P99InsideBandHoldsSteady) {
  Feeder f(adaptive_options(32));
  Traffic over;
  f.period(over);
  f.period(over);
  ASSERT_EQ(f.cap(), 16u);
  const uint64_t changes = f.state().cap_changes;

  // Latencies alternate around the target inside [0.8, 1] * target; the
  // band's edges, p99 exactly 40 ms or exactly 50 ms, belong to it.
  const std::vector<Duration> patterns[] = {
      {milliseconds(42), milliseconds(49), milliseconds(50), milliseconds(40), milliseconds(44)},
      {milliseconds(50)},
      {milliseconds(40)},
      {milliseconds(41), milliseconds(49)},
  };
  for (const auto& latencies : patterns) {
    Traffic band = over;
    band.latencies = latencies;
    for (int period = 0; period < 40; ++period) {
      f.period(band);
      ASSERT_EQ(f.cap(), 16u) << "period " << period << " first " << to_us(latencies[0]);
      ASSERT_EQ(f.state().over_streak, 0);
      ASSERT_EQ(f.state().under_streak, 0);
    }
  }
  EXPECT_EQ(f.state().cap_changes, changes);
}

TEST(AdaptiveTest, RareOutliersUnderOnePercentDoNotShrink) {
  // A period ends at 64 requests. Every other period holds one 60 ms outlier;
  // the window's p99 is computed here independently and the streak follows it.
  Feeder f(adaptive_options(64));
  Traffic spike;
  spike.size = 64;
  spike.latencies.assign(64, milliseconds(45));
  spike.latencies[10] = milliseconds(60);
  Traffic calm = spike;
  calm.latencies = {milliseconds(45)};

  std::vector<double> window;
  int over = 0;
  for (int period = 0; period < 40; ++period) {
    const Traffic& t = period % 2 == 0 ? spike : calm;
    f.period(t);
    for (int i = 0; i < 64; ++i) {
      window.push_back(to_us(t.latencies[i % t.latencies.size()]));
    }
    if (window.size() > kAdaptiveLatencyWindow) {
      window.erase(window.begin(), window.end() - kAdaptiveLatencyWindow);
    }
    const double p99 = reference_p99(window);
    EXPECT_DOUBLE_EQ(f.state().last_p99_us, p99) << "period " << period;
    over = p99 > 50'000 ? over + 1 : 0;
    ASSERT_LT(over, kAdaptiveDecreaseAfter) << "test premise broken at period " << period;
    EXPECT_EQ(f.state().over_streak, over) << "period " << period;
    EXPECT_EQ(f.cap(), 64u) << "period " << period;
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
  for (int i = 0; i < 20'000; ++i) {
    Options& o = f.options();
    if (uniform(0, 50) == 0) o.max_batch_size = static_cast<uint32_t>(uniform(1, 128));
    if (uniform(0, 50) == 0) o.max_wait_us = uniform(0, 20'000);
    if (uniform(0, 80) == 0) o.target_p99_ms = static_cast<double>(uniform(1, 100));
    if (uniform(0, 100) == 0) o.num_lanes = static_cast<uint32_t>(uniform(1, 8));
    // Regimes of a few hundred batches, so that the cap and the load mode
    // actually move: fast or slow arrivals, low or high latencies.
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

    const double live_rate[] = {0, 1e-3, 50, 5000, 1e9};
    const double rate = live_rate[uniform(0, 4)];
    const Limits l = f.limits(rate);
    ASSERT_GE(l.max_batch, 1u);
    ASSERT_LE(l.max_batch, o.max_batch_size) << "step " << i;
    ASSERT_GE(l.max_wait, Duration(0));
    ASSERT_LE(l.max_wait, microseconds(o.max_wait_us)) << "step " << i;
    ASSERT_LE(f.state().cap, o.max_batch_size);

    QueueView q{static_cast<size_t>(uniform(0, 300)), kStart, rate};
    const Decision d = f.strategy().decide(q, kStart + microseconds(uniform(0, 30'000)), o);
    if (d.kind == Decision::Kind::kDispatch) {
      ASSERT_LE(d.count, o.max_batch_size);
    }
  }
}

TEST(AdaptiveTest, LoweredMaxBatchIsClampedAtOnce) {
  // Fresh state: lowering applies before any observe().
  {
    Feeder f(adaptive_options(32));
    f.options().max_batch_size = 4;
    EXPECT_EQ(f.limits().max_batch, 4u);
  }
  // Throttled state: cut to 16, then the user lowers to 8 mid-run.
  Feeder f(adaptive_options(32));
  Traffic over;
  f.period(over);
  f.period(over);
  ASSERT_EQ(f.cap(), 16u);
  f.options().max_batch_size = 8;
  EXPECT_EQ(f.limits().max_batch, 8u);  // before any observe()
  const Decision d = f.strategy().decide(QueueView{20, kStart, 0}, kStart, f.options());
  EXPECT_EQ(d.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(d.count, 8u);
  f.batch(over);
  EXPECT_EQ(f.state().cap, 8u);
  // Raising it again does not relax the learned throttle; evidence must.
  f.options().max_batch_size = 32;
  EXPECT_EQ(f.limits().max_batch, 8u);
  // A lowered max_wait bounds the wait at once too.
  f.options().max_wait_us = 700;
  EXPECT_EQ(f.wait(), microseconds(700));
  f.options().max_wait_us = 0;
  EXPECT_EQ(f.wait(), Duration(0));
}

TEST(AdaptiveTest, FailedBatchesAndNonOkRequestsAreNotEvidence) {
  AdaptiveStrategy s;
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
  s.observe(b, reqs, o);
  EXPECT_FALSE(adaptive_cost_model(s.state()).has_value());
  EXPECT_EQ(s.state().latency_count, 0u);
  EXPECT_EQ(s.state().batches_since_eval, 1u);

  reqs[2].outcome = Outcome::kOk;
  b.failed = false;
  s.observe(b, reqs, o);
  EXPECT_TRUE(adaptive_cost_model(s.state()).has_value());
  EXPECT_EQ(s.state().latency_count, 1u);
  EXPECT_DOUBLE_EQ(s.state().latencies_us[0], 500'000.0);
}

TEST(AdaptiveTest, ThroughputFloorStopsShrinkingUnderLoad) {
  // t(b) = 1000 + 80 b us on one lane; arrivals at 4000/s. Keeping up with
  // 1.25 x 4000/s needs b / t(b) >= 5000/s; the smallest such b is found here
  // by brute force.
  const double need_per_s = 1.25 * 4000;
  size_t floor = 0;
  for (size_t b = 1; b <= 32 && floor == 0; ++b) {
    if (static_cast<double>(b) / (1000.0 + 80.0 * static_cast<double>(b)) * 1e6 >= need_per_s) {
      floor = b;
    }
  }
  ASSERT_EQ(floor, 9u);

  Feeder f(adaptive_options(32, 2000));
  Traffic over;
  over.gap = microseconds(250);
  over.run_fixed = microseconds(1000);
  over.run_per_item = microseconds(80);
  over.latencies = {milliseconds(60)};
  const uint32_t sizes[] = {8, 16, 32, 12};
  size_t k = 0;
  auto period = [&](Traffic t) {
    const uint64_t before = f.state().evaluations;
    while (f.state().evaluations == before) {
      t.size = sizes[k++ % std::size(sizes)];
      f.batch(t);
    }
  };
  const size_t caps[] = {32, 16, 16, floor, floor, floor, floor, floor};
  for (size_t i = 0; i < std::size(caps); ++i) {
    period(over);
    EXPECT_EQ(f.cap(), caps[i]) << "period " << i + 1;
  }
  EXPECT_EQ(adaptive_throughput_floor(f.state(), f.options()), floor);

  // Two lanes halve what each must serve: the floor drops and so does the cap.
  f.options().num_lanes = 2;
  period(over);
  period(over);
  EXPECT_LT(f.cap(), floor);

  // Load outgrows every batch size (12500/s x 1.25 > 1 / 80 us per lane):
  // a "decrease" raises the cap to the maximum, the best throughput there is,
  // once the queue shows the backlog.
  f.options().num_lanes = 1;
  over.gap = microseconds(80);
  over.backlog = 50;
  period(over);
  period(over);
  EXPECT_EQ(adaptive_throughput_floor(f.state(), f.options()), 32u);
  EXPECT_EQ(f.cap(), 32u);
}

TEST(AdaptiveTest, AModelThatContradictsTheQueueIsNotBelieved) {
  // Sizes 1 and 2 only, with run times whose fitted slope says no batch size
  // could keep up with 1.25x the rate; yet no batch left a backlog. The cap
  // halves as plain AIMD says and never jumps to the maximum.
  Feeder f(adaptive_options(32, 2000, 50));
  Traffic t;
  t.gap = microseconds(500);  // 2000/s
  t.run_fixed = microseconds(0);
  t.run_per_item = microseconds(600);  // 1 / 600 us = 1667/s < 2500/s needed
  t.latencies = {milliseconds(60)};
  const uint32_t sizes[] = {1, 2};
  size_t k = 0;
  size_t last_cap = f.cap();
  for (int p = 0; p < 12; ++p) {
    const uint64_t before = f.state().evaluations;
    while (f.state().evaluations == before) {
      t.size = sizes[k++ % 2];
      f.batch(t);
    }
    EXPECT_LE(f.cap(), last_cap) << "period " << p + 1 << ": the cap grew without a backlog";
    last_cap = f.cap();
  }
  EXPECT_EQ(adaptive_throughput_floor(f.state(), f.options()), 1u);
  EXPECT_LE(f.cap(), 2u);
}

TEST(AdaptiveTest, ABackloggedOverloadGrowsTheCapInsteadOfShrinkingIt) {
  Feeder f(adaptive_options(64, 2000, 50));
  Traffic t;
  t.size = 64;
  t.latencies = {milliseconds(60)};
  // First shrink it while there is no backlog: 64 -> 32 -> 16.
  for (int p = 0; p < 4; ++p) f.period(t);
  ASSERT_EQ(f.cap(), 16u);
  // Now every batch is cut full and leaves requests queued: the next
  // decrease doubles instead, towards the maximum.
  t.backlog = 40;
  f.period(t);
  f.period(t);
  EXPECT_EQ(f.cap(), 32u);
  f.period(t);
  f.period(t);
  EXPECT_EQ(f.cap(), 64u);
  EXPECT_TRUE(f.state().backlogged);
}

}  // namespace
}  // namespace batchscope

#include "adaptive.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

namespace batchscope {
namespace {

constexpr TimePoint kStart = TimePoint(std::chrono::seconds(1000));

// What a run of synthetic batches looks like. Each request arrives `gap` after
// the one before it, across batches too, so the true arrival rate is 1 / gap
// from the first request of a run on, even when the previous run was different.
struct Traffic {
  uint32_t size = 8;  // requests per batch, at most the effective cap
  Duration gap = microseconds(1000);
  Duration run_fixed = microseconds(0);  // run time = run_fixed + run_per_item * size
  Duration run_per_item = microseconds(125);
  std::vector<Duration> latencies = {milliseconds(60)};  // end-to-end, cycled over requests
  uint32_t backlog = 0;  // requests left queued after each batch; > 0 marks it cut full
};

Options adaptive_options(uint32_t max_batch = 32, int64_t max_wait_us = 2000,
                         double target_ms = 50) {
  Options o;
  o.strategy = StrategyKind::kAdaptive;
  o.max_batch_size = max_batch;
  o.max_wait_us = max_wait_us;
  o.target_p99_ms = target_ms;
  return o;
}

// Drives one AdaptiveStrategy with synthetic records and explicit timestamps.
class Feeder {
 public:
  explicit Feeder(Options o) : o_(o) {}

  Options& options() { return o_; }
  const AdaptiveStrategy& strategy() const { return s_; }
  const AdaptiveState& state() const { return s_.state(); }
  size_t cap() const { return adaptive_effective_cap(s_.state(), o_); }
  Limits limits(double live_rate = 0) const {
    QueueView q;
    q.arrival_rate_per_s = live_rate;
    return s_.limits(q, o_);
  }
  Duration wait(double live_rate = 0) const { return limits(live_rate).max_wait; }

  void batch(const Traffic& t) {
    const uint32_t size = std::min<uint32_t>(t.size, static_cast<uint32_t>(cap()));
    std::vector<RequestRecord> reqs;
    for (uint32_t i = 0; i < size; ++i) {
      RequestRecord r;
      r.batch_id = next_batch_;
      r.batch_size = size;
      last_arrival_ = next_request_ == 1 ? kStart : last_arrival_ + t.gap;
      r.id = next_request_++;
      r.times.arrival = last_arrival_;
      r.times.completed = last_arrival_ + t.latencies[latency_index_++ % t.latencies.size()];
      reqs.push_back(r);
    }
    BatchRecord b;
    b.id = next_batch_++;
    b.size = size;
    b.reason = t.backlog > 0 ? BatchReason::kFull : BatchReason::kTimeout;
    b.queue_depth_after = t.backlog;
    b.oldest_arrival = reqs.front().times.arrival;
    b.batched = reqs.back().times.arrival;
    b.run_start = b.batched;
    b.run_end = b.run_start + t.run_fixed + t.run_per_item * size;
    for (auto& r : reqs) {
      r.times.batched = b.batched;
      r.times.run_start = b.run_start;
      r.times.run_end = b.run_end;
    }
    s_.observe(b, reqs, o_);
  }

  // Feeds batches until the strategy has finished one evaluation period.
  void period(const Traffic& t) {
    const uint64_t before = state().evaluations;
    for (int i = 0; i < 1000 && state().evaluations == before; ++i) batch(t);
    ASSERT_EQ(state().evaluations, before + 1) << "no evaluation after 1000 batches";
  }

 private:
  Options o_;
  AdaptiveStrategy s_;
  TimePoint last_arrival_ = kStart;
  RequestId next_request_ = 1;
  uint64_t next_batch_ = 1;
  size_t latency_index_ = 0;
};

// Reference p99, written independently of the implementation: nearest rank.
double reference_p99(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size())));
  return v[rank - 1];
}

// ---------------------------------------------------------------------------

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

TEST(AdaptiveTest, FullBatchAndExactDeadlineBoundary) {
  // Build a state with a cap of 16 and, with a live rate of 5000/s, a wait
  // bounded by the fill time (16 - 1) / 5000 s = 3000 us (< max_wait 10 ms).
  Feeder f(adaptive_options(32, 10'000));
  Traffic over;
  f.period(over);
  f.period(over);
  ASSERT_EQ(f.cap(), 16u);
  const double live_rate = 5000;
  const Duration wait = microseconds(3000);
  ASSERT_EQ(f.limits(live_rate).max_batch, 16u);
  ASSERT_EQ(f.limits(live_rate).max_wait, wait);

  const TimePoint oldest = kStart + std::chrono::seconds(5);
  using K = Decision::Kind;
  struct Row {
    size_t queued;
    Duration waited;
    K kind;
    size_t count;
    BatchReason reason;
  };
  const Row rows[] = {
      {0, microseconds(0), K::kIdle, 0, BatchReason::kFull},
      {16, microseconds(0), K::kDispatch, 16, BatchReason::kFull},  // full: at once
      {40, microseconds(0), K::kDispatch, 16, BatchReason::kFull},  // never above the cap
      {1, microseconds(0), K::kWait, 0, BatchReason::kFull},
      {15, wait - microseconds(1), K::kWait, 0, BatchReason::kFull},  // 1 us early: waits
      {15, wait, K::kDispatch, 15, BatchReason::kTimeout},            // exactly at: goes
      {3, wait + microseconds(1), K::kDispatch, 3, BatchReason::kTimeout},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "queued=" << r.queued << " waited=" << to_us(r.waited));
    QueueView q{r.queued, oldest, live_rate};
    const Decision d = f.strategy().decide(q, oldest + r.waited, f.options());
    EXPECT_EQ(d.kind, r.kind);
    if (r.kind == K::kDispatch) {
      EXPECT_EQ(d.count, r.count);
      EXPECT_EQ(d.reason, r.reason);
    }
    if (r.kind == K::kWait) {
      EXPECT_EQ(d.until, oldest + wait);
      EXPECT_EQ(d.wake_at_size, 16u);
    }
  }
}

TEST(AdaptiveTest, LowLoadStopsWaitingAfterHysteresisAndHighLoadRestoresIt) {
  // max_wait 2 ms. Low: one request per 10 ms, so 100/s * 2 ms = 0.2 expected
  // arrivals within max_wait (< 1). High: 10000/s, 20 expected (>= 2).
  Feeder f(adaptive_options(32, 2000));
  Traffic low;
  low.size = 1;
  low.gap = milliseconds(10);
  low.run_per_item = microseconds(100);
  low.latencies = {milliseconds(45)};
  Traffic high = low;
  high.size = 8;
  high.gap = microseconds(100);

  // Before the third low period the strategy still waits the full max_wait:
  // the fill time 31 / 100 s and the budget 50 ms - 32 * 100 us both exceed it.
  const Duration full = microseconds(2000);
  const Duration after_low[] = {full, full, Duration(0), Duration(0), Duration(0)};
  for (size_t i = 0; i < std::size(after_low); ++i) {
    f.period(low);
    EXPECT_EQ(f.wait(), after_low[i]) << "low period " << i + 1;
  }
  EXPECT_TRUE(f.state().low_load);
  EXPECT_DOUBLE_EQ(f.state().arrival_rate_per_s, 100.0);
  EXPECT_EQ(f.wait(1e6), Duration(0));  // the mode decides, not a momentary live rate
  EXPECT_EQ(f.cap(), 32u);              // the cap is untouched by the mode
  // With wait 0 a lone request goes at once.
  const Decision d = f.strategy().decide(QueueView{1, kStart, 0}, kStart, f.options());
  EXPECT_EQ(d.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(d.count, 1u);

  // Fill time at 10000/s is 31 / 10000 s = 3.1 ms > 2 ms, so waiting returns
  // at the full max_wait after the third high period.
  const Duration after_high[] = {Duration(0), Duration(0), full, full};
  for (size_t i = 0; i < std::size(after_high); ++i) {
    f.period(high);
    EXPECT_EQ(f.wait(), after_high[i]) << "high period " << i + 1;
  }
  EXPECT_FALSE(f.state().low_load);
  EXPECT_DOUBLE_EQ(f.state().arrival_rate_per_s, 10'000.0);
  // The live rate, where the engine has one, sets the fill time: 31 / 20000 s.
  EXPECT_EQ(f.wait(20'000), microseconds(1550));
}

TEST(AdaptiveTest, LowLoadCountRestartsAfterAPeriodInBetween) {
  // rate * max_wait: low 0.2, between 1.25 (neither enters nor leaves).
  Feeder f(adaptive_options(32, 2000));
  Traffic low;
  low.size = 1;
  low.gap = milliseconds(10);
  low.latencies = {milliseconds(45)};
  Traffic between = low;
  between.gap = microseconds(1600);

  const Traffic* sequence[] = {&low, &low, &between, &low, &low, &low};
  const bool low_after[] = {false, false, false, false, false, true};
  for (size_t i = 0; i < std::size(sequence); ++i) {
    f.period(*sequence[i]);
    EXPECT_EQ(f.state().low_load, low_after[i]) << "period " << i + 1;
  }
  // In low-load mode a period in between does not leave it either.
  f.period(between);
  EXPECT_TRUE(f.state().low_load);
  EXPECT_EQ(f.wait(), Duration(0));
}

TEST(AdaptiveTest, LiveRateBoundsWaitByFillTime) {
  struct Row {
    uint32_t max_batch;
    int64_t max_wait_us;
    double live_rate;
    Duration want;
  };
  const Row rows[] = {
      {32, 10'000, 0, microseconds(10'000)},     // no rate: no bound
      {32, 10'000, 10'000, microseconds(3100)},  // 31 / 10000 s
      {32, 10'000, 1000, microseconds(10'000)},  // 31 ms > max_wait
      {8, 10'000, 2000, microseconds(3500)},     // 7 / 2000 s
      {1, 10'000, 2000, Duration(0)},            // a batch of one is full at once
      {32, 0, 10'000, Duration(0)},
  };
  for (const Row& r : rows) {
    Feeder f(adaptive_options(r.max_batch, r.max_wait_us));
    EXPECT_EQ(f.wait(r.live_rate), r.want)
        << "max_batch=" << r.max_batch << " rate=" << r.live_rate;
  }
}

TEST(AdaptiveTest, LatencyBudgetShortensWait) {
  // Six batches of sizes 4, 8, 16 (fewer than one period, so the cap stays at
  // the maximum) with run time a + c * size; then wait = min(max_wait,
  // target - 2 (a + c * cap)), never negative.
  struct Row {
    int64_t a_us, c_us;
    double target_ms;
    int64_t max_wait_us;
  };
  const Row rows[] = {
      {200, 100, 8, 2000},    // t(32) = 3400 us: budget 8000 - 6800 = 1200 us < 2000
      {200, 100, 7.4, 2000},  // budget 600 us
      {200, 100, 5, 2000},    // 2 t(32) > target: wait 0
      {200, 100, 50, 2000},   // budget ample: max_wait
      {1000, 10, 3, 5000},    // t(32) = 1320 us: budget 360 us
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message()
                 << "a=" << r.a_us << " c=" << r.c_us << " target=" << r.target_ms);
    Feeder f(adaptive_options(32, r.max_wait_us, r.target_ms));
    Traffic t;
    t.gap = microseconds(10);
    t.run_fixed = microseconds(r.a_us);
    t.run_per_item = microseconds(r.c_us);
    t.latencies = {milliseconds(1)};
    for (uint32_t size : {4u, 8u, 16u, 4u, 8u, 16u}) {
      t.size = size;
      f.batch(t);
    }
    ASSERT_EQ(f.state().evaluations, 0u);
    const double predicted = static_cast<double>(r.a_us + r.c_us * 32);
    const double budget_us = r.target_ms * 1000 - 2 * predicted;
    const double want_us = std::clamp(budget_us, 0.0, static_cast<double>(r.max_wait_us));
    const Duration got = f.wait();
    EXPECT_NEAR(to_us(got), want_us, 1e-3);
    if (budget_us < static_cast<double>(r.max_wait_us)) {
      EXPECT_LT(got, microseconds(r.max_wait_us));
    }
    // And the decision honours it: the head goes when the budget is spent.
    const QueueView q{2, kStart, 0};
    EXPECT_EQ(f.strategy().decide(q, kStart + got, f.options()).kind, Decision::Kind::kDispatch);
    if (got > Duration(0)) {
      EXPECT_EQ(f.strategy().decide(q, kStart + got - Duration(1), f.options()).kind,
                Decision::Kind::kWait);
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
    t.latencies = {milliseconds(45)};
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
    t.latencies = {milliseconds(45)};
    for (int i = 0; i < 5; ++i) f.batch(t);
    const auto m = adaptive_cost_model(f.state());
    ASSERT_TRUE(m.has_value());
    EXPECT_TRUE(m->proportional);
    EXPECT_NEAR(*adaptive_predict_run_us(f.state(), 40), 4000, 1e-6);
  }
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

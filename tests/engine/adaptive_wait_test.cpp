#include "adaptive_feeder.h"

namespace batchscope {
namespace {

using namespace adaptive_test;

// The wait: fifo boundaries with the effective limits, low-load mode, the
// fill time, the latency budget and the cost model behind it.

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

}  // namespace
}  // namespace batchscope

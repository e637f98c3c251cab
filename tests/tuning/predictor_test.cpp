// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for the predictor (the cost model's are in cost_model_test.cpp). Its
// cases are worked out by hand on paper (times in microseconds from the run's start), and the
// predictor is checked against the real engine, one and two lanes, on a manual clock,
// record for record. No test sleeps or times anything.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "batching/synthetic_runner.h"
#include "tests/batching/test_support.h"
#include "tests/tuning/cost_points.h"
#include "tuning/adaptive_planner.h"
#include "tuning/cost_model.h"
#include "tuning/predictor.h"

namespace batchscope {
namespace {

using std::chrono::seconds;
using test::linear;
using test::points;

const TimePoint kStart = TimePoint(seconds(1000));

TimePoint at_us(int64_t us) { return kStart + microseconds(us); }

PredictSpec constant(double rate, uint64_t n, Options o, CostModel cost) {
  PredictSpec s;
  s.arrivals.pattern = Pattern::kConstant;
  s.arrivals.rate = rate;
  s.arrivals.duration_s = 100;
  s.arrivals.max_requests = n;
  s.options = o;
  s.cost = std::move(cost);
  return s;
}

std::vector<int64_t> latencies_us(const RunData& run) {
  std::vector<int64_t> out;
  for (const RunRequest& r : run.requests) {
    out.push_back(std::chrono::duration_cast<microseconds>(r.done - r.intended).count());
  }
  return out;
}

std::vector<uint32_t> batch_sizes(const RunData& run) {
  std::vector<uint32_t> out;
  for (const BatchRecord& b : run.batches) out.push_back(b.size);
  return out;
}

std::vector<uint16_t> batch_lanes(const RunData& run) {
  std::vector<uint16_t> out;
  for (const BatchRecord& b : run.batches) out.push_back(b.lane);
  return out;
}

void expect_same_run(const RunData& a, const RunData& b) {
  EXPECT_EQ(a.start, b.start);
  ASSERT_EQ(a.requests.size(), b.requests.size());
  for (size_t i = 0; i < a.requests.size(); ++i) {
    const RunRequest &x = a.requests[i], &y = b.requests[i];
    EXPECT_EQ(x.index, y.index) << "request " << i;
    EXPECT_EQ(x.intended, y.intended) << "request " << i;
    EXPECT_EQ(x.sent, y.sent) << "request " << i;
    EXPECT_EQ(x.done, y.done) << "request " << i;
    EXPECT_EQ(x.outcome, y.outcome) << "request " << i;
    EXPECT_EQ(x.batch_id, y.batch_id) << "request " << i;
    EXPECT_EQ(x.batch_size, y.batch_size) << "request " << i;
  }
  ASSERT_EQ(a.batches.size(), b.batches.size());
  for (size_t i = 0; i < a.batches.size(); ++i) {
    const BatchRecord &x = a.batches[i], &y = b.batches[i];
    EXPECT_EQ(x.id, y.id) << "batch " << i;
    EXPECT_EQ(x.size, y.size) << "batch " << i;
    EXPECT_EQ(x.reason, y.reason) << "batch " << i;
    EXPECT_EQ(x.lane, y.lane) << "batch " << i;
    EXPECT_EQ(x.failed, y.failed) << "batch " << i;
    EXPECT_EQ(x.queue_depth_after, y.queue_depth_after) << "batch " << i;
    EXPECT_EQ(x.oldest_arrival, y.oldest_arrival) << "batch " << i;
    EXPECT_EQ(x.batched, y.batched) << "batch " << i;
    EXPECT_EQ(x.run_start, y.run_start) << "batch " << i;
    EXPECT_EQ(x.run_end, y.run_end) << "batch " << i;
    EXPECT_EQ(x.longest, y.longest) << "batch " << i;
    EXPECT_EQ(x.length_sum, y.length_sum) << "batch " << i;
  }
  ASSERT_EQ(a.depth.size(), b.depth.size());
  for (size_t i = 0; i < a.depth.size(); ++i) {
    EXPECT_EQ(a.depth[i].time, b.depth[i].time) << "depth sample " << i;
    EXPECT_EQ(a.depth[i].depth, b.depth[i].depth) << "depth sample " << i;
    EXPECT_EQ(a.depth[i].peak, b.depth[i].peak) << "depth sample " << i;
  }
}

// ------------------------------------------------- Predictor: worked by hand
// Constant arrivals at 1000/s come at 0, 1000, 2000, ... us. At equal times
// the leader's deadline goes first, then completions, then arrivals.

TEST(PredictorTest, WaitsMaxWaitThenCutsWhatIsQueued) {
  // r0 opens a 2 ms wait; at 2000 the batch {r0, r1} is cut (r2 comes just
  // after) and runs 1200 us; r2 and r3 wait for their own deadline at 4000,
  // and so on: pairs, 3200 and 2200 us.
  const RunData run = predict_run(
      constant(1000, 10, {.max_batch_size = 4, .max_wait_us = 2000}, linear(1000, 100)));
  EXPECT_EQ(latencies_us(run),
            (std::vector<int64_t>{3200, 2200, 3200, 2200, 3200, 2200, 3200, 2200, 3200, 2200}));
  ASSERT_EQ(run.batches.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const BatchRecord& b = run.batches[i];
    EXPECT_EQ(b.id, i + 1);
    EXPECT_EQ(b.size, 2u);
    EXPECT_EQ(b.reason, BatchReason::kTimeout);
    EXPECT_EQ(b.batched, at_us(2000 + 2000 * int64_t(i)));
    EXPECT_EQ(b.run_end, at_us(3200 + 2000 * int64_t(i)));
    EXPECT_EQ(b.oldest_arrival, at_us(2000 * int64_t(i)));
    EXPECT_EQ(b.queue_depth_after, 0u);
  }
  EXPECT_EQ(run.requests[3].batch_id, 2u);
  EXPECT_EQ(run.requests[3].batch_size, 2u);
  // A sample at each cut (two queued, peak two), then the final one.
  ASSERT_EQ(run.depth.size(), 6u);
  EXPECT_EQ(run.depth[0].time, at_us(2000));
  EXPECT_EQ(run.depth[0].depth, 2u);
  EXPECT_EQ(run.depth[0].peak, 2u);
  EXPECT_EQ(run.depth[5].time, at_us(11200));
  EXPECT_EQ(run.depth[5].depth, 0u);

  const RunSummary s = summarize_run(run);
  EXPECT_EQ(s.ok, 10u);
  EXPECT_DOUBLE_EQ(s.batch_mean, 2.0);
  EXPECT_NEAR(s.latency.max_ms, 3.2, 0.02);
}

TEST(PredictorTest, AFullBatchIsCutWithoutWaiting) {
  // Four requests fill the batch at 3000; it runs 1400 us.
  const RunData run = predict_run(
      constant(1000, 8, {.max_batch_size = 4, .max_wait_us = 100'000}, linear(1000, 100)));
  EXPECT_EQ(latencies_us(run),
            (std::vector<int64_t>{4400, 3400, 2400, 1400, 4400, 3400, 2400, 1400}));
  ASSERT_EQ(run.batches.size(), 2u);
  EXPECT_EQ(run.batches[0].reason, BatchReason::kFull);
  EXPECT_EQ(run.batches[1].batched, at_us(7000));
}

TEST(PredictorTest, ZeroWaitDispatchesAtOnceAndBatchesGrowUnderLoad) {
  // Batch k = {r_k} is cut at 1100 k and ends at 1100 (k + 1): latency
  // 1100 + 100 k. r10's batch is cut at 11000 just before r11 arrives (a
  // completion goes before an arrival at the same time), so r11 and r12
  // wait together for the lane and ride in one batch of two at 12100.
  const RunData run =
      predict_run(constant(1000, 13, {.max_batch_size = 4, .max_wait_us = 0}, linear(1000, 100)));
  std::vector<int64_t> expected;
  for (int64_t k = 0; k <= 10; ++k) expected.push_back(1100 + 100 * k);
  expected.push_back(13300 - 11000);
  expected.push_back(13300 - 12000);
  EXPECT_EQ(latencies_us(run), expected);
  std::vector<uint32_t> sizes(11, 1);
  sizes.push_back(2);
  EXPECT_EQ(batch_sizes(run), sizes);
  EXPECT_EQ(run.batches.back().batched, at_us(12100));
}

TEST(PredictorTest, AFullQueueRejectsAtOnce) {
  // One lane, 5 ms a batch of one, room for two in the queue: r3, r4 (queue
  // r1 r2) and r6, r7 (queue r2 r5) are turned away.
  Options o{.max_batch_size = 1, .max_wait_us = 0, .queue_capacity = 2};
  const RunData run = predict_run(constant(1000, 8, o, points({{1, 5000}, {2, 5000}})));
  ASSERT_EQ(run.requests.size(), 8u);
  const std::vector<Outcome> outcomes = {Outcome::kOk,       Outcome::kOk,       Outcome::kOk,
                                         Outcome::kRejected, Outcome::kRejected, Outcome::kOk,
                                         Outcome::kRejected, Outcome::kRejected};
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(run.requests[i].outcome, outcomes[i]) << i;
  const std::vector<int64_t> lat = latencies_us(run);
  EXPECT_EQ(lat[0], 5000);
  EXPECT_EQ(lat[1], 9000);
  EXPECT_EQ(lat[2], 13000);
  EXPECT_EQ(lat[5], 15000);
  EXPECT_EQ(lat[3], 0);  // answered at once
  EXPECT_EQ(run.requests[3].batch_id, 0u);
  EXPECT_EQ(summarize_run(run).rejected, 4u);
}

TEST(PredictorTest, ARequestThatWaitsPastItsTimeoutNeverRuns) {
  // One lane busy with r0 until 5000; a 2 ms timeout. r1, r2, r3 time out at
  // 3000, 4000, 5000 (a deadline goes before the completion at 5000), r4
  // rides next, r5 times out at 7000.
  Options o{.max_batch_size = 1, .max_wait_us = 0, .request_timeout_ms = 2};
  const RunData run = predict_run(constant(1000, 6, o, points({{1, 5000}, {2, 5000}})));
  ASSERT_EQ(run.requests.size(), 6u);
  for (size_t i : {1, 2, 3, 5}) {
    EXPECT_EQ(run.requests[i].outcome, Outcome::kTimedOut) << i;
    EXPECT_EQ(run.requests[i].done, run.requests[i].intended + milliseconds(2)) << i;
    EXPECT_EQ(run.requests[i].batch_id, 0u) << i;
  }
  EXPECT_EQ(run.requests[0].outcome, Outcome::kOk);
  EXPECT_EQ(run.requests[4].outcome, Outcome::kOk);
  EXPECT_EQ(latencies_us(run)[0], 5000);
  EXPECT_EQ(latencies_us(run)[4], 6000);
  EXPECT_EQ(run.batches.size(), 2u);
  EXPECT_EQ(summarize_run(run).timed_out, 4u);
}

TEST(PredictorTest, TwoLanesTakeTurnsAndBatchesGrowWhenBothAreBusy) {
  // t(b) = 2500 + 500 b: 3000 us alone, 3500 for two. r2 waits for lane 0 to
  // free at 3000; r4 and r5 wait together for it at 6000.
  Options o{.max_batch_size = 4, .max_wait_us = 0, .num_lanes = 2};
  const RunData run = predict_run(constant(1000, 8, o, linear(2500, 500)));
  EXPECT_EQ(latencies_us(run),
            (std::vector<int64_t>{3000, 3000, 4000, 4000, 5500, 4500, 4000, 5500}));
  EXPECT_EQ(batch_sizes(run), (std::vector<uint32_t>{1, 1, 1, 1, 2, 1, 1}));
  EXPECT_EQ(batch_lanes(run), (std::vector<uint16_t>{0, 1, 0, 1, 0, 1, 0}));
}

TEST(PredictorTest, WithTwoLanesAFreeLaneLeadsWhileTheOtherRuns) {
  // As with one lane, but the lane that frees while the other leads follows;
  // the next arrival after a cut promotes it, so the lanes alternate.
  Options o{.max_batch_size = 4, .max_wait_us = 2000, .num_lanes = 2};
  const RunData run = predict_run(constant(1000, 10, o, linear(1000, 100)));
  EXPECT_EQ(latencies_us(run),
            (std::vector<int64_t>{3200, 2200, 3200, 2200, 3200, 2200, 3200, 2200, 3200, 2200}));
  EXPECT_EQ(batch_lanes(run), (std::vector<uint16_t>{0, 1, 0, 1, 0}));
}

TEST(PredictorTest, AFreeModelStillMovesTimeOnInAClosedLoop) {
  // t(b) = 0: each batch takes a nanosecond, so the loop moves on and stops
  // at max_requests instead of sending at the same instant for ever.
  PredictSpec s;
  s.arrivals.pattern = Pattern::kClosed;
  s.arrivals.concurrency = 4;
  s.arrivals.duration_s = 10;
  s.arrivals.max_requests = 1000;
  s.options = Options{.max_batch_size = 1, .max_wait_us = 0};
  s.cost = points({{1, 0}});
  const RunData run = predict_run(s);
  ASSERT_EQ(run.requests.size(), 1000u);
  EXPECT_GT(run.requests.back().done, run.requests.front().done);
}

TEST(PredictorTest, AClosedLoopOfOneSeesTheBatchCostExactly) {
  for (const Options& o : {Options{.max_batch_size = 8, .max_wait_us = 0},
                           Options{.max_batch_size = 1, .max_wait_us = 2000}}) {
    PredictSpec s;
    s.arrivals.pattern = Pattern::kClosed;
    s.arrivals.concurrency = 1;
    s.arrivals.duration_s = 0.01;
    s.options = o;
    s.cost = points({{1, 750}});
    const RunData run = predict_run(s);
    ASSERT_EQ(run.requests.size(), 14u);  // sent at 0, 750, ..., 9750
    for (size_t k = 0; k < run.requests.size(); ++k) {
      EXPECT_EQ(run.requests[k].intended, at_us(750 * int64_t(k)));
      EXPECT_EQ(run.requests[k].done - run.requests[k].intended, microseconds(750));
    }
    // The overhead delays each answer, and so the next send.
    s.engine_overhead = microseconds(50);
    const RunData slower = predict_run(s);
    ASSERT_EQ(slower.requests.size(), 13u);  // sent at 0, 800, ..., 9600
    for (size_t k = 0; k < slower.requests.size(); ++k) {
      EXPECT_EQ(slower.requests[k].intended, at_us(800 * int64_t(k)));
      EXPECT_EQ(slower.requests[k].done - slower.requests[k].intended, microseconds(800));
    }
  }
}

TEST(PredictorTest, TwoLanesTakeTheOverheadMeasuredWithTwoLanes) {
  // The same pairs as below: a one-lane configuration adds the model's own
  // 250 us, a two-lane one the 600 us its calibration run measured.
  Expected<CostModel> m = linear(1000, 100).with_overhead({250, 250});
  ASSERT_TRUE(m.ok());
  const CostModel both = m->calibrated(*linear(1000, 100).with_overhead({600, 600}), /*lanes=*/2);
  Options o{.max_batch_size = 4, .max_wait_us = 2000};
  const RunData one = predict_run(constant(1000, 10, o, both));
  EXPECT_EQ(latencies_us(one).front(), 3450);
  o.num_lanes = 2;
  const RunData two = predict_run(constant(1000, 10, o, both));
  const RunData bare = predict_run(constant(1000, 10, o, linear(1000, 100)));
  ASSERT_EQ(latencies_us(two).size(), latencies_us(bare).size());
  for (size_t i = 0; i < latencies_us(two).size(); ++i) {
    EXPECT_EQ(latencies_us(two)[i], latencies_us(bare)[i] + 600) << i;
  }
}

TEST(PredictorTest, StreakyJitterKeepsItsSpreadAndMakesSlowBatchesFollowEachOther) {
  // Uniform jitter of +-40% at one size: independent draws against draws
  // with a strong streak. Both keep the size's spread; with the streak a
  // slow batch is followed by a slow one far more often.
  const Options o{.max_batch_size = 1, .max_wait_us = 0};
  const CostModel plain = points({{1, 100, 0.4}});
  const CostModel streaky = plain.with_streak({.weight = 0.9, .rho = 0.95});
  auto runs_of = [&](const CostModel& m) {
    std::vector<double> us;
    for (const BatchRecord& b : predict_run(constant(1000, 4000, o, m)).batches) {
      us.push_back(static_cast<double>((b.run_end - b.run_start).count()) / 1000.0);
    }
    return us;
  };
  auto lag1 = [](const std::vector<double>& v) {
    double mean = 0, var = 0, c = 0;
    for (double x : v) mean += x / static_cast<double>(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      var += (v[i] - mean) * (v[i] - mean);
      if (i + 1 < v.size()) c += (v[i] - mean) * (v[i + 1] - mean);
    }
    return c / var;
  };
  const std::vector<double> a = runs_of(plain), b = runs_of(streaky);
  ASSERT_EQ(a.size(), 4000u);
  ASSERT_EQ(b.size(), 4000u);
  for (const auto* v : {&a, &b}) {
    EXPECT_GE(*std::min_element(v->begin(), v->end()), 60 - 1e-3);
    EXPECT_LE(*std::max_element(v->begin(), v->end()), 140 + 1e-3);
  }
  EXPECT_LT(std::abs(lag1(a)), 0.1);
  EXPECT_GT(lag1(b), 0.6);
  // The same seed gives the same run.
  EXPECT_EQ(runs_of(streaky), b);
}

TEST(PredictorTest, ALanesTurnaroundHoldsItBeforeItsNextBatch) {
  // One request every 1000 us, t(1) = 900 us: alone, each waits for nothing.
  // A turnaround of 50 + 100 us an answer holds the lane 150 us after each
  // batch, so the lane starts batch k at 1050k: the answers keep their
  // times after the run, and each request waits 50 us more than the last.
  const Options o{.max_batch_size = 1, .max_wait_us = 0};
  const RunData plain = predict_run(constant(1000, 5, o, linear(900, 0)));
  EXPECT_EQ(latencies_us(plain), (std::vector<int64_t>{900, 900, 900, 900, 900}));
  const CostModel turning = linear(900, 0).with_turnaround({.fixed_us = 50, .per_answer_us = 100});
  const RunData a = predict_run(constant(1000, 5, o, turning));
  EXPECT_EQ(latencies_us(a), (std::vector<int64_t>{900, 950, 1000, 1050, 1100}));
  EXPECT_EQ(a.batches.back().run_start, at_us(4200));
  // With two lanes, the second takes what the first cannot: nobody waits.
  Options two = o;
  two.num_lanes = 2;
  EXPECT_EQ(latencies_us(predict_run(constant(1000, 5, two, turning))),
            (std::vector<int64_t>{900, 900, 900, 900, 900}));
}

TEST(PredictorTest, AMeasuredOverheadDelaysEachAnswerAndNotTheLane) {
  // As in WaitsMaxWaitThenCutsWhatIsQueued (pairs at 3200 and 2200 us), with
  // 250 us added to every answer: the batches stay, each latency grows by 250.
  const Options o{.max_batch_size = 4, .max_wait_us = 2000};
  Expected<CostModel> late = linear(1000, 100).with_overhead({250, 250});
  ASSERT_TRUE(late.ok());
  const RunData a = predict_run(constant(1000, 10, o, *late));
  EXPECT_EQ(latencies_us(a),
            (std::vector<int64_t>{3450, 2450, 3450, 2450, 3450, 2450, 3450, 2450, 3450, 2450}));
  EXPECT_EQ(a.batches.back().run_end, at_us(11200));
  // A spread of overheads gives each request its own draw from it, the same
  // on the same seed.
  Expected<CostModel> wide = linear(1000, 100).with_overhead({0, 100});
  ASSERT_TRUE(wide.ok());
  const RunData c = predict_run(constant(1000, 200, o, *wide));
  const RunData plain = predict_run(constant(1000, 200, o, linear(1000, 100)));
  ASSERT_EQ(c.requests.size(), plain.requests.size());
  int64_t lo = INT64_MAX, hi = 0;
  for (size_t i = 0; i < c.requests.size(); ++i) {
    const int64_t us =
        std::chrono::duration_cast<microseconds>(c.requests[i].done - plain.requests[i].done)
            .count();
    lo = std::min(lo, us), hi = std::max(hi, us);
  }
  EXPECT_GE(lo, 0);
  EXPECT_LE(hi, 100);
  EXPECT_LT(lo, 10);
  EXPECT_GT(hi, 90);
  expect_same_run(c, predict_run(constant(1000, 200, o, *wide)));
}

TEST(PredictorTest, AnswersLaterThanTheDriverWaitsAreErrors) {
  // 100 s a batch: bench stops waiting 60 s after its last send (at 2 ms);
  // the engine then drains what is queued.
  Options o{.max_batch_size = 1, .max_wait_us = 0, .request_timeout_ms = 3'600'000};
  const RunData run = predict_run(constant(1000, 3, o, points({{1, 100e6}})));
  ASSERT_EQ(run.requests.size(), 3u);
  for (const RunRequest& r : run.requests) {
    EXPECT_EQ(r.outcome, Outcome::kModelError);
    EXPECT_EQ(r.done, at_us(60'002'000));
  }
  ASSERT_EQ(run.batches.size(), 3u);
  EXPECT_EQ(run.batches[1].reason, BatchReason::kDrain);
  EXPECT_EQ(run.batches[2].batched, at_us(200'000'000));
  EXPECT_EQ(run.depth.back().time, at_us(300'000'000));
}

TEST(PredictorTest, AnInvalidSpecIsNamedAndGivesAnEmptyRun) {
  PredictSpec s = constant(1000, 10, {.max_batch_size = 0}, linear(1, 1));
  EXPECT_NE(s.validate().message().find("max_batch_size"), std::string::npos);
  EXPECT_TRUE(predict_run(s).requests.empty());
  s.options = Options{};
  s.engine_overhead = microseconds(-1);
  EXPECT_NE(s.validate().message().find("engine_overhead"), std::string::npos);
}

// ------------------------------------------------------------- Determinism

PredictSpec jittered_poisson(uint64_t seed, StrategyKind strategy) {
  PredictSpec s;
  s.arrivals.pattern = Pattern::kPoisson;
  s.arrivals.rate = 5000;
  s.arrivals.duration_s = 0.5;
  s.arrivals.seed = 3;
  s.options = {.max_batch_size = 32,
               .max_wait_us = 1000,
               .num_lanes = 2,
               .strategy = strategy,
               .target_p99_ms = 5};
  s.cost = CostModel::from_synthetic({.fixed_us = 500, .per_item_us = 20, .jitter = 0.1}, 64);
  s.seed = seed;
  return s;
}

TEST(PredictorTest, TheSameSeedGivesTheSameRun) {
  for (StrategyKind k : {StrategyKind::kFifo, StrategyKind::kAdaptive}) {
    const RunData a = predict_run(jittered_poisson(7, k));
    const RunData b = predict_run(jittered_poisson(7, k));
    EXPECT_GT(a.requests.size(), 2000u);
    expect_same_run(a, b);
  }
}

TEST(PredictorTest, AnotherJitterSeedGivesOtherRunTimes) {
  const RunData a = predict_run(jittered_poisson(7, StrategyKind::kFifo));
  const RunData b = predict_run(jittered_poisson(8, StrategyKind::kFifo));
  ASSERT_EQ(a.requests.size(), b.requests.size());  // the same traffic
  ASSERT_FALSE(a.batches.empty());
  ASSERT_FALSE(b.batches.empty());
  EXPECT_NE(a.batches[0].run_end - a.batches[0].run_start,
            b.batches[0].run_end - b.batches[0].run_start);
}

TEST(PredictorTest, PredictSummarizesThePredictedRun) {
  const PredictSpec s = jittered_poisson(7, StrategyKind::kAdaptive);
  const RunSummary a = predict(s);
  const RunSummary b = summarize_run(predict_run(s));
  EXPECT_EQ(a.sent, b.sent);
  EXPECT_EQ(a.ok, b.ok);
  EXPECT_EQ(a.latency.p99_ms, b.latency.p99_ms);
  EXPECT_EQ(a.batch_histogram, b.batch_histogram);
  EXPECT_EQ(a.windows.size(), b.windows.size());
}

// ------------------------------ Agreement with the engine, one and two lanes

// A batch held in the runner, and whether the test has let it finish.
struct Held {
  uint64_t seq = 0;
  size_t size = 0;
  float first = 0;  // the first request's arrival index: earlier cut, lower
  TimePoint started{};
  uint32_t longest = 0;  // the batch's longest request, where lengths vary
  bool released = false;
};

// The batches in the runner, one per busy lane.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Held> held;
  uint64_t entered = 0;
};

// Request i's length as the predictor gives it (PredictSpec::lengths): the
// input's value is its index. 0 without lengths.
uint32_t length_of(const std::vector<uint32_t>& lengths, const Tensors& in) {
  if (lengths.empty()) return 0;
  return lengths[static_cast<size_t>(in[0].as<float>()[0]) % lengths.size()];
}

// A runner that takes no time of its own: run() holds until the test, having
// moved the manual clock to the batch's end, releases it.
class GateRunner final : public Runner {
 public:
  GateRunner(std::shared_ptr<Gate> gate, std::shared_ptr<ManualClock> clock,
             std::vector<uint32_t> lengths)
      : gate_(std::move(gate)), clock_(std::move(clock)), lengths_(std::move(lengths)) {}
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    uint32_t longest = 0;
    for (const Tensors& in : inputs) longest = std::max(longest, length_of(lengths_, in));
    std::unique_lock g(gate_->mu);
    const uint64_t me = gate_->entered++;
    gate_->held.push_back({me, inputs.size(), inputs[0][0].as<float>()[0], clock_->now(), longest});
    gate_->cv.notify_all();
    const auto mine = [&] {
      return std::find_if(gate_->held.begin(), gate_->held.end(),
                          [&](const Held& h) { return h.seq == me; });
    };
    gate_->cv.wait_for(g, test::kSafety, [&] { return mine()->released; });
    gate_->held.erase(mine());
    return std::vector<Tensors>(inputs.size());
  }

 private:
  std::shared_ptr<Gate> gate_;
  std::shared_ptr<ManualClock> clock_;
  std::vector<uint32_t> lengths_;
};

// Waits until the engine has nothing to do at the clock's time: each lane
// leads, parked at a future deadline, waits for its turn, or is held in the
// runner. Two readings of the engine around one of the gate must agree.
bool settle(const Engine& engine, Gate& gate) {
  const auto give_up = std::chrono::steady_clock::now() + test::kSafety;
  while (std::chrono::steady_clock::now() < give_up) {
    const EngineStatus a = engine.status();
    size_t held = 0;
    bool leaving = false;
    {
      std::lock_guard g(gate.mu);
      held = gate.held.size();
      for (const Held& h : gate.held) leaving |= h.released;
    }
    const EngineStatus b = engine.status();
    if (a.at_rest && b.at_rest && a.busy_lanes == held && b.busy_lanes == held && !leaving &&
        a.counters.batches == b.counters.batches &&
        a.counters.completed() == b.counters.completed()) {
      return true;
    }
    std::this_thread::yield();
  }
  return false;
}

// Sends `arrivals` to an engine on a manual clock, each batch taking
// cost.cost(b), with ties broken as the predictor breaks them: a deadline
// first, then completions (the batch cut first first), then arrivals one by
// one. Returns the run as bench would record it. Which lane leads first is
// the operating system's choice, so the lanes are named as the predictor
// names them: the one that cut the first batch is lane 0.
RunData replay_on_engine(const std::vector<TimePoint>& arrivals, const Options& o,
                         const CostModel& cost, const std::vector<uint32_t>& lengths = {}) {
  auto clock = std::make_shared<ManualClock>(kStart);
  auto gate = std::make_shared<Gate>();
  Engine engine(
      [gate, clock, lengths](int) { return std::make_unique<GateRunner>(gate, clock, lengths); }, o,
      clock);
  engine.set_adaptive_planner(make_adaptive_plan);  // what the predictor plans with
  if (!lengths.empty()) {
    EXPECT_TRUE(
        engine.set_length_of([lengths](const Tensors& in) { return length_of(lengths, in); }).ok());
  }
  RunData run;
  run.start = kStart;
  if (!engine.start().ok()) {
    ADD_FAILURE() << "the engine did not start";
    return run;
  }
  test::Collector got;
  std::vector<RequestId> ids;  // per arrival; 0 when refused
  size_t next = 0, admitted = 0;
  for (;;) {
    if (!settle(engine, *gate)) {
      ADD_FAILURE() << "the engine did not settle";
      break;
    }
    if (next == arrivals.size() && got.size() == admitted) break;
    const TimePoint arrival = next < arrivals.size() ? arrivals[next] : kNever;
    const TimePoint until = engine.status().idle_until;  // the leader's deadline, or the reaper's
    {
      std::unique_lock g(gate->mu);
      Held* first = nullptr;
      TimePoint end = kNever;
      for (Held& h : gate->held) {
        const TimePoint e =
            h.started + lengthen(cost.cost(h.size), cost.length_extra_us(h.size, h.longest));
        if (first == nullptr || e < end || (e == end && h.first < first->first))
          first = &h, end = e;
      }
      if (until != kNever && until <= end && until <= arrival) {
        g.unlock();
        clock->advance_to(until);
        continue;
      }
      if (first != nullptr && end <= arrival) {
        clock->advance_to(end);  // wakes nobody: no deadline comes before `until`
        first->released = true;
        gate->cv.notify_all();
        continue;
      }
    }
    if (arrival == kNever) {
      ADD_FAILURE() << "requests are left with nothing to wait for";
      break;
    }
    clock->advance_to(arrival);
    const Expected<RequestId> id = engine.submit(test::input_of(float(next)), got.callback());
    ids.push_back(id.ok() ? *id : 0);
    admitted += id.ok() ? 1 : 0;
    ++next;
  }
  engine.stop(StopMode::kDrain);
  RecordBatch records;
  engine.drain_records(records);
  for (size_t i = 0; i < ids.size(); ++i) {
    RunRequest q;
    q.index = i;
    q.intended = q.sent = q.done = arrivals[i];
    q.outcome = Outcome::kRejected;
    if (ids[i] != 0 && got.has(ids[i])) {
      const TensorResponse& r = got.at(ids[i]);
      q.done = r.times.completed;
      q.outcome = r.result.ok() ? Outcome::kOk : Outcome::kModelError;
      q.batch_id = r.batch_id;
      q.batch_size = r.batch_size;
    }
    run.requests.push_back(q);
  }
  run.batches = records.batches;
  // Batches are recorded as they end; the first cut has the lowest id.
  const auto first_cut =
      std::min_element(run.batches.begin(), run.batches.end(),
                       [](const BatchRecord& a, const BatchRecord& b) { return a.id < b.id; });
  if (first_cut != run.batches.end() && first_cut->lane != 0) {
    const uint16_t first = first_cut->lane;
    for (BatchRecord& b : run.batches) {
      b.lane = b.lane == first ? 0 : b.lane == 0 ? first : b.lane;
    }
  }
  run.depth = records.depth;
  return run;
}

void expect_engine_agrees(const PredictSpec& spec) {
  const RunData predicted = predict_run(spec);
  std::vector<TimePoint> arrivals;
  ArrivalSchedule schedule(spec.arrivals);
  while (auto offset = schedule.next()) arrivals.push_back(spec.start + *offset);
  ASSERT_EQ(predicted.requests.size(), arrivals.size());
  const RunData engine = replay_on_engine(arrivals, spec.options, spec.cost, spec.lengths);
  expect_same_run(predicted, engine);

  const RunSummary p = summarize_run(predicted), e = summarize_run(engine);
  EXPECT_EQ(p.ok, e.ok);
  EXPECT_EQ(p.latency.p50_ms, e.latency.p50_ms);
  EXPECT_EQ(p.latency.p99_ms, e.latency.p99_ms);
  EXPECT_EQ(p.batch_histogram, e.batch_histogram);
  EXPECT_EQ(p.depth_mean, e.depth_mean);
  EXPECT_EQ(p.depth_max, e.depth_max);
}

TEST(PredictorTest, MatchesTheEngineOnAManualClockFifo) {
  // The cases worked by hand above, ties included: a deadline and an
  // arrival at 2000, a completion and an arrival at 11000.
  expect_engine_agrees(
      constant(1000, 10, {.max_batch_size = 4, .max_wait_us = 2000}, linear(1000, 100)));
  expect_engine_agrees(
      constant(1000, 13, {.max_batch_size = 4, .max_wait_us = 0}, linear(1000, 100)));
  // Arrivals every 333.333 us, batches of 800 + 150 b us.
  PredictSpec s = constant(3000, 40, {.max_batch_size = 8, .max_wait_us = 1500}, linear(800, 150));
  expect_engine_agrees(s);
  // Batches cut full, at their deadline, and late behind a busy lane; a
  // queue too short for the bursts turns some away.
  s.arrivals.pattern = Pattern::kPoisson;
  s.arrivals.seed = 11;
  s.arrivals.max_requests = 200;
  s.options = {.max_batch_size = 4, .max_wait_us = 1000, .queue_capacity = 6};
  const RunSummary p = predict(s);
  EXPECT_GT(p.rejected, 0u);
  EXPECT_GT(p.batch_histogram.size(), 2u);
  expect_engine_agrees(s);
}

// 20,000/s, then 1,000/s, adaptive with room (a 20 ms target): plans for
// both rates are made as the fit learns t(b), and the rates the engine reads
// (smooth and fast) choose between them, so the leader's limits change with
// the moments it wakes.
PredictSpec adaptive_step(uint32_t lanes) {
  PredictSpec s;
  s.arrivals.pattern = Pattern::kStep;
  s.arrivals.steps = {{20'000, 0.1}, {1000, 0.1}};
  s.arrivals.duration_s = 0.2;
  s.options = {.max_batch_size = 16,
               .max_wait_us = 10'000,
               .num_lanes = lanes,
               .strategy = StrategyKind::kAdaptive,
               .target_p99_ms = 20};
  s.cost = linear(200, 20);
  return s;
}

// Poisson under a tight target (3 ms), where the guard takes the fast choice.
PredictSpec adaptive_tight(double rate, uint32_t lanes) {
  PredictSpec s = constant(rate, 300,
                           {.max_batch_size = 16,
                            .max_wait_us = 3000,
                            .num_lanes = lanes,
                            .strategy = StrategyKind::kAdaptive,
                            .target_p99_ms = 3},
                           linear(800, 150));
  s.arrivals.pattern = Pattern::kPoisson;
  s.arrivals.seed = 5;
  return s;
}

TEST(PredictorTest, MatchesTheEngineOnAManualClockAdaptive) {
  const PredictSpec s = adaptive_step(1);
  const RunData run = predict_run(s);
  // A planned wait: the head arrived while the lane was free, and its batch
  // was cut later, by the deadline, not when it arrived.
  bool waited = false;
  for (size_t i = 1; i < run.batches.size(); ++i) {
    const BatchRecord& b = run.batches[i];
    waited |= b.reason == BatchReason::kTimeout && b.oldest_arrival >= run.batches[i - 1].run_end &&
              b.batched > b.oldest_arrival;
  }
  EXPECT_TRUE(waited) << "no batch waited for a planned deadline";
  expect_engine_agrees(s);
  expect_engine_agrees(adaptive_tight(3000, 1));
}

// True when both lanes ran batches and some of them at the same time.
bool lanes_overlapped(const RunData& run) {
  bool lane1 = false, overlap = false;
  for (size_t i = 0; i < run.batches.size(); ++i) {
    lane1 |= run.batches[i].lane == 1;
    for (size_t j = i + 1; j < run.batches.size(); ++j) {
      overlap |= run.batches[j].lane != run.batches[i].lane &&
                 run.batches[j].run_start < run.batches[i].run_end;
    }
  }
  return lane1 && overlap;
}

TEST(PredictorTest, MatchesTheEngineOnAManualClockWithTwoLanes) {
  // Alternating lanes that never overlap, then both busy at once: arrivals
  // every 166.667 us, batches of 800 + 150 b us, cut full or at 1.5 ms.
  expect_engine_agrees(constant(1000, 13, {.max_batch_size = 4, .max_wait_us = 0, .num_lanes = 2},
                                linear(1000, 100)));
  PredictSpec s = constant(6000, 80, {.max_batch_size = 8, .max_wait_us = 1500, .num_lanes = 2},
                           linear(800, 150));
  EXPECT_TRUE(lanes_overlapped(predict_run(s)));
  expect_engine_agrees(s);
  // Poisson beyond both lanes' capacity into a short queue: full batches
  // hand the lead on while requests remain, and some are turned away.
  s.arrivals.pattern = Pattern::kPoisson;
  s.arrivals.rate = 8000;
  s.arrivals.seed = 11;
  s.arrivals.max_requests = 300;
  s.options = {.max_batch_size = 4, .max_wait_us = 1000, .queue_capacity = 6, .num_lanes = 2};
  const RunData run = predict_run(s);
  EXPECT_GT(summarize_run(run).rejected, 0u);
  EXPECT_TRUE(lanes_overlapped(run));
  expect_engine_agrees(s);
}

TEST(PredictorTest, MatchesTheEngineOnAManualClockAdaptiveWithTwoLanes) {
  // The strategy sees how many lanes are idle when it decides.
  const PredictSpec s = adaptive_step(2);
  EXPECT_TRUE(lanes_overlapped(predict_run(s)));
  expect_engine_agrees(s);
  expect_engine_agrees(adaptive_tight(6000, 2));
}

// ------------------------------------------- Requests of varying length
// Lengths 4..64 from a fixed LCG; a batch padded to L runs t(b) and what
// the grid adds: nothing at length 16, 1.2 ms (b = 1) to 4 ms (b = 8) at 64.
std::vector<uint32_t> some_lengths(size_t n) {
  std::vector<uint32_t> out;
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    out.push_back(4 + (x >> 16) % 61);
  }
  return out;
}

CostModel padded_cost() {
  LengthGrid g;
  g.reference = 16;
  g.batches = {1, 8};
  g.lengths = {16, 64};
  g.median_us = {800, 2000, 2000, 6000};
  auto m = linear(800, 150).with_length_grid(g);
  EXPECT_TRUE(m.ok());
  return *m;
}

PredictSpec varied(Padding padding, uint32_t lanes, uint64_t seed) {
  PredictSpec s = constant(900, 200,
                           {.max_batch_size = 4,
                            .max_wait_us = 1500,
                            .queue_capacity = 12,
                            .num_lanes = lanes,
                            .padding = padding},
                           padded_cost());
  EXPECT_TRUE(parse_length_buckets("16,32,48", s.options).ok());
  s.arrivals.pattern = Pattern::kPoisson;
  s.arrivals.seed = seed;
  s.lengths = some_lengths(37);
  return s;
}

TEST(PredictorTest, ABatchRunsAtItsPaddedLength) {
  PredictSpec s = constant(1000, 1, {.max_batch_size = 4, .max_wait_us = 0}, padded_cost());
  s.lengths = {64};
  const RunData run = predict_run(s);
  ASSERT_EQ(run.batches.size(), 1u);
  EXPECT_EQ(run.batches[0].longest, 64u);
  // 950 us, and 2000 - 800 for the length.
  EXPECT_EQ(run.batches[0].run_end - run.batches[0].run_start, microseconds(2150));
  s.lengths = {16};
  const RunData at_reference = predict_run(s);
  EXPECT_EQ(at_reference.batches[0].run_end - at_reference.batches[0].run_start, microseconds(950));
}

TEST(PredictorTest, MatchesTheEngineOnAManualClockWithLengths) {
  for (const Padding p : {Padding::kLongest, Padding::kBuckets, Padding::kSorted}) {
    SCOPED_TRACE(padding_name(p));
    const PredictSpec s = varied(p, 1, 3);
    const RunData run = predict_run(s);
    const RunSummary sum = summarize_run(run);
    EXPECT_GT(sum.batch_histogram.size(), 2u);
    if (p == Padding::kBuckets) {
      // No batch mixes buckets: 16, 32, 48 and beyond.
      for (const BatchRecord& b : run.batches) {
        std::vector<size_t> seen;
        for (const RunRequest& r : run.requests) {
          if (r.batch_id == b.id) seen.push_back(length_bucket(s.options, s.lengths[r.index % 37]));
        }
        ASSERT_FALSE(seen.empty());
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [&](size_t k) { return k == seen[0]; }))
            << "batch " << b.id;
      }
    }
    expect_engine_agrees(s);
    expect_engine_agrees(varied(p, 2, 7));
    // The adaptive strategy, which fits and plans with the lengths it is
    // shown, sees them alike in both.
    PredictSpec a = varied(p, 1, 3);
    a.options.strategy = StrategyKind::kAdaptive;
    a.options.target_p99_ms = 20;
    a.arrivals.max_requests = 600;
    expect_engine_agrees(a);
  }
}

TEST(PredictorTest, BucketsAndSortedWasteLessPaddingThanLongest) {
  double waste[3];
  int i = 0;
  for (const Padding p : {Padding::kLongest, Padding::kBuckets, Padding::kSorted}) {
    PredictSpec s = varied(p, 1, 3);
    s.arrivals.max_requests = 2000;
    s.options.queue_capacity = 1000;
    s.options.max_batch_size = 8;
    waste[i++] = summarize_run(predict_run(s)).padding_waste;
  }
  EXPECT_GT(waste[0], 0.2);
  EXPECT_LT(waste[1], waste[0]);
  EXPECT_LT(waste[2], waste[0]);
}

}  // namespace
}  // namespace batchscope

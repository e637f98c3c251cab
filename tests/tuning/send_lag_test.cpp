// SPDX-License-Identifier: GPL-3.0-or-later
// The load driver's send lag (tuning/send_lag.h): measured from a run laid
// out by the test (stalls in known states, each state's time), drawn back by
// the predictor (a stall sends what falls in it at its end, in order), kept
// in the cost file, and what the predictor makes of it; and the overhead
// by batch size, the measured capacity, and their file fields.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/tuning/cost_points.h"
#include "tuning/cost_calibration.h"
#include "tuning/cost_model.h"
#include "tuning/predictor.h"
#include "tuning/send_lag.h"

namespace batchscope {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

const TimePoint kT0(std::chrono::seconds(10));

// 1,000 requests meant 100 us apart over 0.1 s; one lane runs a batch in the
// first half (t0 + 0 .. 50 ms) and none in the second. Outside stalls each
// goes 50 us late. Stalls: at request 100 (in the busy half) one of 700 us,
// at request 700 (idle half) one of 300 us; the requests meant inside a
// stall go at its end.
RunData laid_out_run(bool with_max_wait) {
  RunData run;
  run.start = kT0;
  run.config.options.num_lanes = 1;
  run.config.options.max_wait_us = with_max_wait ? 1000 : 0;
  BatchRecord b;
  b.id = 1;
  b.size = 1;
  b.run_start = kT0;
  b.run_end = kT0 + milliseconds(50);
  run.batches.push_back(b);
  TimePoint stall_end{};
  for (int i = 0; i < 1000; ++i) {
    RunRequest r;
    r.index = static_cast<uint64_t>(i);
    r.intended = kT0 + microseconds(100 * i);
    if (i == 100) stall_end = r.intended + microseconds(700);
    if (i == 700) stall_end = r.intended + microseconds(300);
    r.sent = r.intended < stall_end ? stall_end : r.intended + microseconds(50);
    r.done = r.sent + microseconds(10);
    r.outcome = Outcome::kRejected;  // not queued: no lane parks on a timer for it
    run.requests.push_back(r);
  }
  return run;
}

TEST(SendLagTest, StallsAreCountedByTheStateTheyStartInOverTheTimeSpentThere) {
  const SendLagModel m = measure_send_lag(laid_out_run(false));
  ASSERT_FALSE(m.empty());
  EXPECT_DOUBLE_EQ(m.base_us.front(), 50);
  EXPECT_DOUBLE_EQ(m.base_us.back(), 200);  // the last of a stall, under the threshold
  ASSERT_EQ(m.by_busy.size(), 2u);
  // One stall in 0.05 s with no lane running, one in 0.05 s with one.
  EXPECT_NEAR(m.by_busy[0].per_s, 1 / 0.0499, 0.5);
  EXPECT_NEAR(m.by_busy[1].per_s, 1 / 0.05, 0.5);
  EXPECT_DOUBLE_EQ(m.by_busy[0].us.front(), 300);
  EXPECT_DOUBLE_EQ(m.by_busy[1].us.front(), 700);
  EXPECT_TRUE(m.waiting.empty());
  // Fewer than 50 requests: nothing measured.
  RunData few = laid_out_run(false);
  few.requests.resize(40);
  EXPECT_TRUE(measure_send_lag(few).empty());
}

TEST(SendLagTest, ALaneParkedOnItsTimerIsAStateOfItsOwn) {
  // Requests queued (answered by no batch before they time out) while the
  // lane is free, with a max_wait: a lane waits on its timer then.
  RunData run = laid_out_run(true);
  for (RunRequest& r : run.requests) {
    r.outcome = Outcome::kTimedOut;
    r.done = r.sent + microseconds(5000);
  }
  const SendLagModel m = measure_send_lag(run);
  ASSERT_FALSE(m.empty());
  // The idle half had requests queued throughout: its stall is a waiting one.
  ASSERT_FALSE(m.waiting.empty());
  EXPECT_DOUBLE_EQ(m.waiting[0].us.front(), 300);
  EXPECT_TRUE(m.by_busy.size() < 1 || m.by_busy[0].us.empty());
}

TEST(SendLagTest, ADrawSendsWhatFallsInAStallAtItsEndAndKeepsTheOrder) {
  SendLagModel m;
  m.base_us = {10, 10};
  m.by_busy = {SendLagModel::Stalls{0, {}}, SendLagModel::Stalls{1e9, {500, 500}}};
  SendLagDraw draw(m, 1);
  // No lane running: no stall, each 10 us late.
  TimePoint last = kT0;
  TimePoint t = draw.send(kT0, 0, false, last);
  EXPECT_EQ(t, kT0 + microseconds(10));
  last = t;
  // A lane running, a stall certain: 500 us from the request it delays.
  const TimePoint a = kT0 + microseconds(100);
  t = draw.send(a, 1, false, last);
  EXPECT_EQ(t, a + microseconds(500));
  last = t;
  // Meant within the stall: it goes at its end, after the one before.
  t = draw.send(a + microseconds(200), 0, false, last);
  EXPECT_EQ(t, a + microseconds(500));
  last = t;
  // After it, with no lane running: on time again, plus the base.
  t = draw.send(a + microseconds(900), 0, false, last);
  EXPECT_EQ(t, a + microseconds(910));
  // A state beyond those measured borrows the nearest.
  SendLagDraw again(m, 1);
  (void)again.send(kT0, 0, false, kT0);
  EXPECT_EQ(again.send(a, 7, true, kT0), a + microseconds(500));
}

TEST(SendLagTest, ItIsKeptInTheCostFileAndRefusedWhenOutOfRange) {
  Expected<CostModel> m =
      test::points({{1, 100}}).with_send_lag(measure_send_lag(laid_out_run(false)));
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::string json = m->to_json();
  EXPECT_NE(json.find("\"send_lag\":{\"base_us_quantiles\":["), std::string::npos) << json;
  auto back = CostModel::from_profile_json(json);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->send_lag(1), m->send_lag(1));
  EXPECT_EQ(back->to_json(), json);
  for (
      const char* bad :
      {R"({"points":[{"batch":1,"median_us":1}],"send_lag":{"base_us_quantiles":[0,1],"stalls":[{"per_s":-1}]}})",
       R"({"points":[{"batch":1,"median_us":1}],"send_lag":{"base_us_quantiles":[2,1]}})",
       R"({"points":[{"batch":1,"median_us":1}],"send_lag":{"stalls":[{"per_s":1,"us_quantiles":[1,2]}]}})",
       R"({"points":[{"batch":1,"median_us":1}],"send_lag":[]})"}) {
    auto refused = CostModel::from_profile_json(bad);
    EXPECT_FALSE(refused.ok()) << bad;
    if (!refused.ok()) EXPECT_NE(refused.error().message.find("send_lag"), std::string::npos);
  }
}

// A stall of 2 ms whenever a lane runs: arrivals during a batch go together
// at the stall's end, so the predictor cuts larger batches than on-time
// arrivals make, and the latency, counted from when each was meant to go,
// carries the lag.
TEST(SendLagTest, ThePredictorBatchesWhatAStallHeldBackTogether) {
  PredictSpec spec;
  spec.arrivals.pattern = Pattern::kConstant;
  spec.arrivals.rate = 2000;
  spec.arrivals.duration_s = 2;
  spec.options.max_batch_size = 32;
  spec.options.max_wait_us = 0;
  // A batch runs longer than the 500 us between arrivals: each finds the
  // lane running.
  spec.cost = test::points({{1, 700}, {2, 720}});
  const RunSummary on_time = predict(spec);
  SendLagModel lag;
  lag.base_us = {0, 0};
  lag.by_busy = {SendLagModel::Stalls{}, SendLagModel::Stalls{400, {2000, 2000}}};
  spec.cost = *spec.cost.with_send_lag(lag);
  const RunSummary stalled = predict(spec);
  EXPECT_GT(stalled.batch_mean, on_time.batch_mean * 1.3)
      << stalled.batch_mean << " against " << on_time.batch_mean;
  EXPECT_GT(stalled.latency.p50_ms, on_time.latency.p50_ms);
  EXPECT_GT(stalled.lag_p99_ms, 1.0);
  EXPECT_EQ(on_time.lag_p99_ms, 0);
  EXPECT_EQ(stalled.sent, on_time.sent);
}

TEST(OverheadBySizeTest, ABatchIsAnsweredWithItsSizesBandAndTheNearestWhereUnmeasured) {
  Expected<CostModel> m = test::points({{1, 100}}).with_overhead({1, 2});
  ASSERT_TRUE(m.ok());
  // Bands: 1 (none), 2-3 at 5 us, 4-7 none, 8-15 at 50 us.
  auto banded = m->with_overhead_by_size({{}, {5, 5}, {}, {50, 50}});
  ASSERT_TRUE(banded.ok()) << banded.error().message;
  EXPECT_EQ(banded->overheads_us(1, 3).front(), 5);
  EXPECT_EQ(banded->overheads_us(1, 12).front(), 50);
  EXPECT_EQ(banded->overheads_us(1, 1).front(), 5);      // nearest measured
  EXPECT_EQ(banded->overheads_us(1, 1000).front(), 50);  // held beyond
  EXPECT_EQ(m->overheads_us(1, 8).front(), 1);           // no bands: the pooled overhead
  auto back = CostModel::from_profile_json(banded->to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->to_json(), banded->to_json());
  EXPECT_FALSE(m->with_overhead_by_size(std::vector<std::vector<double>>(kMaxSizeBands + 1)).ok());
  auto bad = m->with_overhead_by_size({{3, 2}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("overhead_by_size[0][1] = 2 is below"), std::string::npos)
      << bad.error().message;
  // A run measures a band from 20 answers on.
  RunData run;
  run.start = kT0;
  for (uint64_t k = 0; k < 30; ++k) {
    BatchRecord b;
    b.id = k + 1;
    b.size = k < 10 ? 2 : 8;
    b.run_start = kT0 + milliseconds(static_cast<int64_t>(k));
    b.run_end = b.run_start + microseconds(300);
    run.batches.push_back(b);
    RunRequest r;
    r.intended = r.sent = b.run_start;
    r.done = b.run_end + microseconds(b.size == 2 ? 4 : 40);
    r.batch_id = b.id;
    run.requests.push_back(r);
  }
  auto seen = CostModel::from_run(run, 5);
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  EXPECT_DOUBLE_EQ(seen->overheads_us(1, 8).front(), 40);
  // Only 10 answers of size 2: no band of its own, the nearest is 8's.
  EXPECT_DOUBLE_EQ(seen->overheads_us(1, 2).front(), 40);
}

TEST(CapacityTest, WhatTheProbeMeasuredBoundsTheCapacityAndIsKept) {
  const CostModel cost = test::linear(10, 1);  // 64 / 74 us: 865k req/s
  EXPECT_GT(capacity_rps(cost, 1, 64), 800000);
  const CostModel measured = cost.with_capacity(1, 90000);
  EXPECT_DOUBLE_EQ(measured.measured_capacity(1), 90000);
  EXPECT_DOUBLE_EQ(capacity_rps(measured, 1, 64), 90000);
  // Two lanes: kept on their entry, which must exist.
  auto two = measured.with_lanes({LaneCostPoints{2, {{1, 20}}}});
  ASSERT_TRUE(two.ok());
  const CostModel both = two->with_capacity(2, 150000);
  EXPECT_DOUBLE_EQ(both.measured_capacity(2), 150000);
  EXPECT_DOUBLE_EQ(both.measured_capacity(1), 90000);
  auto back = CostModel::from_profile_json(both.to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_DOUBLE_EQ(back->measured_capacity(2), 150000);
  EXPECT_DOUBLE_EQ(back->measured_capacity(1), 90000);
  EXPECT_FALSE(
      CostModel::from_profile_json(R"({"points":[{"batch":1,"median_us":1}],"capacity_rps":-5})")
          .ok());
}

}  // namespace
}  // namespace batchscope

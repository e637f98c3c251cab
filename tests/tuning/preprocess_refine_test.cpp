// SPDX-License-Identifier: GPL-3.0-or-later
// A live run refines the preprocess cost (PreprocessCost::from_run and
// refined, CostModel::from_run and calibrated): the pool's requests by how
// many processes were busy over each one's time, a lane's preparing from the
// batch's start to the model's, and t(b) from the model's start. Times are
// worked by hand, in microseconds from a fixed origin.

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "tests/tuning/cost_points.h"
#include "tuning/cost_model.h"

namespace batchscope {
namespace {

using std::chrono::microseconds;
using test::points;

const TimePoint kT0 = TimePoint(std::chrono::seconds(10));

TimePoint at(int64_t us) { return kT0 + microseconds(us); }

CostModel preprocessed(const CostModel& m, PreprocessCost p) {
  auto c = m.with_preprocess(std::move(p));
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? *c : m;
}

// 30 requests one after another, 1000 us each, then 30 pairs that share
// their whole time, 2000 us each.
RunData pool_run() {
  RunData run;
  int64_t t = 0;
  for (int i = 0; i < 30; ++i, t += 1000) run.prepared.push_back({at(t), at(t + 1000)});
  for (int i = 0; i < 30; ++i, t += 2000) {
    run.prepared.push_back({at(t), at(t + 2000)});
    run.prepared.push_back({at(t), at(t + 2000)});
  }
  return run;
}

TEST(PreprocessRefine, APoolRunIsReadByTheProcessesBusyBesideEachRequest) {
  const PreprocessCost seen = PreprocessCost::from_run(pool_run());
  EXPECT_TRUE(seen.lane_us.empty());
  ASSERT_EQ(seen.pool.size(), 2u);
  EXPECT_EQ(seen.pool[0].busy, 1u);
  EXPECT_EQ(seen.pool[0].requests, 30u);
  EXPECT_DOUBLE_EQ(seen.pool[0].us.front(), 1000);
  EXPECT_DOUBLE_EQ(seen.pool[0].us.back(), 1000);
  EXPECT_EQ(seen.pool[1].busy, 2u);
  EXPECT_EQ(seen.pool[1].requests, 60u);
  EXPECT_DOUBLE_EQ(seen.pool[1].us[seen.pool[1].us.size() / 2], 2000);
}

TEST(PreprocessRefine, ARequestCountsTheCompanyItHadOnAverage) {
  // Each request of a pair starting 500 us apart (2000 us each) spends
  // three quarters of its time beside the other: 1.75 busy, read as 2; one
  // that overlaps a quarter (1.25) reads as 1. 20 of each shape.
  RunData run;
  int64_t t = 0;
  for (int i = 0; i < 10; ++i, t += 10000) {
    run.prepared.push_back({at(t), at(t + 2000)});
    run.prepared.push_back({at(t + 500), at(t + 2500)});
    run.prepared.push_back({at(t + 5000), at(t + 7000)});
    run.prepared.push_back({at(t + 6500), at(t + 8500)});
  }
  const PreprocessCost seen = PreprocessCost::from_run(run);
  ASSERT_EQ(seen.pool.size(), 2u);
  EXPECT_EQ(seen.pool[0].busy, 1u);
  EXPECT_EQ(seen.pool[0].requests, 20u);
  EXPECT_EQ(seen.pool[1].busy, 2u);
  EXPECT_EQ(seen.pool[1].requests, 20u);
}

TEST(PreprocessRefine, ALaneRunningABatchAndAnUnansweredRequestAreCompany) {
  // 20 requests alone in the pool, each beside a lane's batch for all its
  // time; 20 beside a request that was not answered (it counts as company,
  // its own time is not a sample).
  RunData run;
  int64_t t = 0;
  for (int i = 0; i < 20; ++i, t += 3000) {
    run.prepared.push_back({at(t), at(t + 1000)});
    BatchRecord b;
    b.size = 1;
    b.run_start = at(t);
    b.run_end = at(t + 1000);
    run.batches.push_back(b);
  }
  for (int i = 0; i < 20; ++i, t += 3000) {
    run.prepared.push_back({at(t), at(t + 1500)});
    run.prepared.push_back({at(t), at(t + 1500), false});
  }
  const PreprocessCost seen = PreprocessCost::from_run(run);
  ASSERT_EQ(seen.pool.size(), 1u);
  EXPECT_EQ(seen.pool[0].busy, 2u);
  EXPECT_EQ(seen.pool[0].requests, 40u);
}

TEST(PreprocessRefine, TooFewRequestsSayNothing) {
  RunData run = pool_run();
  run.prepared.resize(PreprocessCost::kMinSeen - 1);  // of the lone ones
  EXPECT_TRUE(PreprocessCost::from_run(run).empty());
}

TEST(PreprocessRefine, ARefinementAveragesByRequestsAndAddsWhatWasNotMeasured) {
  PreprocessCost kept;
  kept.pool.push_back({1, {1500, 1500}, 60});
  kept.pool.push_back({3, {4000, 4000}, 60});
  PreprocessCost seen;
  seen.pool.push_back({1, {1000, 1000}, 30});
  seen.pool.push_back({2, {2000, 2000}, 60});
  const PreprocessCost now = kept.refined(seen);
  ASSERT_EQ(now.pool.size(), 3u);
  // (1500 * 60 + 1000 * 30) / 90.
  EXPECT_NEAR(now.pool[0].us[0], 1333.33, 0.01);
  EXPECT_EQ(now.pool[0].requests, 90u);
  EXPECT_EQ(now.pool[1].busy, 2u);
  EXPECT_DOUBLE_EQ(now.pool[1].us[0], 2000);
  EXPECT_EQ(now.pool[2].busy, 3u);  // not seen: kept
  EXPECT_DOUBLE_EQ(now.pool[2].us[0], 4000);
  EXPECT_TRUE(now.validate().ok());
  // A kept part counted 0 (a file from before the counts) weighs one request.
  kept.pool[0].requests = 0;
  EXPECT_NEAR(kept.refined(seen).pool[0].us[0], (1500 + 1000 * 30) / 31.0, 1e-9);
}

// 20 batches of 2, each prepared for 1000 us (500 a request) before a
// 100 us model.
RunData lane_run(bool said_when_the_model_began) {
  RunData run;
  run.config.options.preprocess_workers = 0;
  run.config.options.max_wait_us = 0;
  for (int i = 0; i < 20; ++i) {
    BatchRecord b;
    b.id = static_cast<uint64_t>(i + 1);
    b.size = 2;
    b.batched = b.run_start = b.oldest_arrival = at(i * 5000);
    if (said_when_the_model_began) b.model_start = b.run_start + microseconds(1000);
    b.run_end = b.run_start + microseconds(1100);
    run.batches.push_back(b);
  }
  return run;
}

TEST(PreprocessRefine, ALaneThatSaysWhenTheModelBeganRefinesBothParts) {
  PreprocessCost p;
  p.pool.push_back({1, {1500, 1500}, 64});
  p.lane_us = {300, 300};
  p.lane_requests = 20;
  const CostModel base = preprocessed(points({{1, 200}, {2, 200}}), p);
  auto seen = CostModel::from_run(lane_run(true));
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  EXPECT_FALSE(seen->lanes_prepared());
  EXPECT_NEAR(seen->cost_us(2), 100, 1e-6);  // the model's part alone
  EXPECT_DOUBLE_EQ(seen->preprocess().lane_us[0], 500);
  EXPECT_EQ(seen->preprocess().lane_requests, 40u);
  EXPECT_EQ(seen->turnaround(), Turnaround{});  // not read from such a run
  const CostModel refined = base.calibrated(*seen);
  EXPECT_NEAR(refined.cost_us(2), 100, 1e-6);  // profiled only: the run's outright
  // (300 * 20 + 500 * 40) / 60.
  EXPECT_NEAR(refined.preprocess().lane_us[0], 433.33, 0.01);
  EXPECT_EQ(refined.preprocess().lane_requests, 60u);
  EXPECT_DOUBLE_EQ(refined.preprocess().pool[0].us[0], 1500);  // not seen
  // Without the model's start, t(b) holds the preparing: nothing moves.
  auto older = CostModel::from_run(lane_run(false));
  ASSERT_TRUE(older.ok());
  EXPECT_TRUE(older->lanes_prepared());
  EXPECT_EQ(base.calibrated(*older).to_json(), base.to_json());
}

TEST(PreprocessRefine, ACostThatNeverMeasuredPreprocessDoesNotStartOne) {
  const CostModel base = points({{1, 200}, {2, 200}});
  RunData run = lane_run(true);
  run.prepared = pool_run().prepared;
  auto seen = CostModel::from_run(run);
  ASSERT_TRUE(seen.ok());
  EXPECT_FALSE(seen->preprocess().empty());
  EXPECT_EQ(seen->turnaround(), Turnaround{});
  EXPECT_TRUE(base.calibrated(*seen).preprocess().empty());
}

TEST(PreprocessRefine, TheCountsGoToTheFileAndBack) {
  PreprocessCost p;
  p.pool.push_back({1, {1500, 1600}, 64});
  p.lane_us = {300, 400};
  p.lane_requests = 128;
  const CostModel m = preprocessed(points({{1, 200}}), p);
  auto back = CostModel::from_profile_json(m.to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->preprocess().pool[0].requests, 64u);
  EXPECT_EQ(back->preprocess().lane_requests, 128u);
  EXPECT_EQ(back->to_json(), m.to_json());
  auto bad = CostModel::from_profile_json(
      R"({"points":[{"batch":1,"median_us":100}],"preprocess":{"lane_us_quantiles":[1,2],)"
      R"("lane_requests":-3}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("preprocess.lane_requests = -3 must be a whole number"),
            std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace batchscope

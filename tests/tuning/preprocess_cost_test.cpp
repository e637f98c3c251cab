// SPDX-License-Identifier: GPL-3.0-or-later
// The preprocess cost (tuning/preprocess_cost.h) in a cost file, and the
// predictor's preprocess pool ahead of the batcher and a lane preparing its
// own batch, worked by hand (times in microseconds from the run's start;
// constant arrivals at 1000/s come at 0, 1000, 2000, ...).

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/tuning/cost_points.h"
#include "tuning/cost_model.h"
#include "tuning/predictor.h"

namespace batchscope {
namespace {

using test::points;

// t(b) = 100 us at every size.
CostModel flat() { return points({{1, 100}, {64, 100}}); }

CostModel with(const CostModel& m, PreprocessCost p) {
  auto c = m.with_preprocess(std::move(p));
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? *c : m;
}

PreprocessCost pool_of(std::vector<std::pair<uint32_t, double>> by_busy) {
  PreprocessCost p;
  for (auto [busy, us] : by_busy) p.pool.push_back({busy, {us, us}});
  return p;
}

PredictSpec constant(uint64_t n, Options o, CostModel cost) {
  PredictSpec s;
  s.arrivals.pattern = Pattern::kConstant;
  s.arrivals.rate = 1000;
  s.arrivals.duration_s = 100;
  s.arrivals.max_requests = n;
  s.options = o;
  s.cost = std::move(cost);
  return s;
}

std::vector<int64_t> done_us(const RunData& run) {
  std::vector<int64_t> out;
  for (const RunRequest& r : run.requests) {
    out.push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(r.done - run.start).count());
  }
  return out;
}

Options opts(uint32_t workers) {
  Options o;
  o.max_batch_size = 8;
  o.max_wait_us = 0;
  o.preprocess_workers = workers;
  return o;
}

TEST(PreprocessCost, ACostFileKeepsItAndReadsItBack) {
  PreprocessCost p = pool_of({{1, 1500}, {2, 2500}});
  p.lane_us = {400, 450, 700};
  const CostModel m = with(flat(), p);
  auto back = CostModel::from_profile_json(m.to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->preprocess().pool.size(), 2u);
  EXPECT_EQ(back->preprocess().pool[1].busy, 2u);
  EXPECT_EQ(back->preprocess().pool_us(1), (std::vector<double>{1500, 1500}));
  EXPECT_EQ(back->preprocess().pool_us(7), (std::vector<double>{2500, 2500}));
  EXPECT_EQ(back->preprocess().lane_us, p.lane_us);
  EXPECT_EQ(back->to_json(), m.to_json());
  EXPECT_NE(m.describe().find("preprocess 1500 us a request in the pool, 450 us in a lane"),
            std::string::npos)
      << m.describe();
}

TEST(PreprocessCost, BadValuesAreRefusedByName) {
  const std::string base = R"({"points":[{"batch":1,"median_us":100}],"preprocess":)";
  auto refused = [&](const std::string& pre) {
    auto m = CostModel::from_profile_json(base + pre + "}");
    EXPECT_FALSE(m.ok()) << pre;
    return m.ok() ? std::string() : m.error().message;
  };
  EXPECT_NE(refused(R"({"pool":[{"busy":2,"us_quantiles":[1,2]},{"busy":2,"us_quantiles":[1,2]}]})")
                .find("preprocess.pool[1].busy = 2 must be above 2"),
            std::string::npos);
  EXPECT_NE(refused(R"({"pool":[{"busy":0,"us_quantiles":[1,2]}]})").find("pool[0].busy = 0"),
            std::string::npos);
  EXPECT_NE(refused(R"({"pool":[{"busy":1,"us_quantiles":[5,2]}]})").find("us_quantiles[1]"),
            std::string::npos);
  EXPECT_NE(refused(R"({"pool":[{"busy":1}]})").find("pool[0].us_quantiles is missing"),
            std::string::npos);
  EXPECT_NE(refused(R"({"lane_us_quantiles":"fast"})").find("lane_us_quantiles = \"fast\""),
            std::string::npos);
  EXPECT_NE(refused("[1]").find("preprocess = [1] must be an object"), std::string::npos);
}

TEST(PreprocessPredict, OneProcessPreparesInTurnAheadOfTheBatcher) {
  // r0: pool 0..1500, batch 1500..1600. r1 (1000) waits for the process:
  // 1500..3000, batch 3000..3100. r2 (2000): 3000..4500, 4600. r3: 6100.
  const RunData run = predict_run(constant(4, opts(1), with(flat(), pool_of({{1, 1500}}))));
  EXPECT_EQ(done_us(run), (std::vector<int64_t>{1600, 3100, 4600, 6100}));
  ASSERT_EQ(run.batches.size(), 4u);
  EXPECT_EQ(run.batches[1].oldest_arrival, run.start + std::chrono::microseconds(1000));
  EXPECT_EQ(run.batches[1].batched, run.start + std::chrono::microseconds(3000));
}

TEST(PreprocessPredict, TwoProcessesOverlapAndAreSlowerTogether) {
  // Alone a request takes 1500 us, beside another 3000. r0: 0..1500 (alone),
  // batch to 1600. r1 (1000): starts with r0 in the other process: 1000..4000,
  // 4100. r2 (2000): p0 is free, r1 still in p1: 2000..5000, 5100. r3 (3000):
  // both busy until 4000; then 4000..7000 beside r2: 7100.
  const RunData run =
      predict_run(constant(4, opts(2), with(flat(), pool_of({{1, 1500}, {2, 3000}}))));
  EXPECT_EQ(done_us(run), (std::vector<int64_t>{1600, 4100, 5100, 7100}));
}

TEST(PreprocessPredict, RequestsBeingPreparedCountAgainstTheQueueCapacity) {
  // Capacity 1: r1 comes while r0 is in the pool and is rejected; r2 comes
  // after r0 was answered, and so on.
  Options o = opts(1);
  o.queue_capacity = 1;
  const RunData run = predict_run(constant(5, o, with(flat(), pool_of({{1, 1500}}))));
  std::vector<Outcome> outcomes;
  for (const RunRequest& r : run.requests) outcomes.push_back(r.outcome);
  EXPECT_EQ(outcomes, (std::vector<Outcome>{Outcome::kOk, Outcome::kRejected, Outcome::kOk,
                                            Outcome::kRejected, Outcome::kOk}));
}

TEST(PreprocessPredict, WithoutAPoolTheLanePreparesItsBatch) {
  // Each request adds 500 us to its batch: r0 runs 0..600; r1 1000..1600.
  PreprocessCost p = pool_of({{1, 1500}});
  p.lane_us = {500, 500};
  const RunData run = predict_run(constant(3, opts(0), with(flat(), p)));
  EXPECT_EQ(done_us(run), (std::vector<int64_t>{600, 1600, 2600}));
  EXPECT_EQ(run.batches[0].run_end - run.batches[0].run_start, std::chrono::microseconds(600));
}

TEST(PreprocessPredict, ACostWithoutPreprocessPredictsAsBefore) {
  // No preprocess measured: the pool's size changes nothing.
  const RunData one = predict_run(constant(20, opts(1), flat()));
  const RunData two = predict_run(constant(20, opts(2), flat()));
  const RunData none = predict_run(constant(20, opts(0), flat()));
  EXPECT_EQ(done_us(one), done_us(two));
  EXPECT_EQ(done_us(one), done_us(none));
  EXPECT_EQ(done_us(one)[0], 100);
}

TEST(PreprocessCost, ARunWhoseLanesPreparedWithoutSayingWhenTheModelBeganRefinesNothing) {
  // A live run with preprocess_workers 0 whose records lack the model's start
  // (an older engine's) ran t(b) with the preparing inside.
  PreprocessCost p = pool_of({{1, 1500}});
  p.lane_us = {500, 500};
  const CostModel base = with(flat(), p);
  RunData run;
  run.config.options.max_wait_us = 0;
  const TimePoint t0 = TimePoint(std::chrono::seconds(10));
  for (int i = 0; i < 20; ++i) {
    BatchRecord b;
    b.id = static_cast<uint64_t>(i + 1);
    b.size = 1;
    b.batched = b.run_start = t0 + std::chrono::milliseconds(i);
    b.run_end = b.run_start + std::chrono::microseconds(600);
    b.oldest_arrival = b.batched;
    run.batches.push_back(b);
  }
  for (uint32_t workers : {0u, 1u}) {
    run.config.options.preprocess_workers = workers;
    auto seen = CostModel::from_run(run);
    ASSERT_TRUE(seen.ok()) << seen.error().message;
    const CostModel refined = base.calibrated(*seen);
    if (workers == 0) {
      EXPECT_EQ(refined.to_json(), base.to_json());
    } else {
      EXPECT_NEAR(refined.cost_us(1), 600, 1);
    }
  }
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// What `batchscope tune` and the window's Tuner panel share: the front with
// alike points folded, the candidates to confirm, the largest batch a space
// asks for, the predictor as an evaluator, a live confirmation on the
// synthetic runner (and its stop), and the winner as measured.

#include "tuning/tune_run.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "batching/synthetic_runner.h"
#include "tuning/tune_space.h"

namespace batchscope {
namespace {

Evaluated run_point(uint32_t batch, double rps, double p99, uint64_t lost = 0) {
  Evaluated e;
  e.options.max_batch_size = batch;
  e.throughput_rps = rps;
  e.p50_ms = p99 / 2;
  e.p99_ms = p99;
  e.sent = 1000;
  e.ok = 1000 - lost;
  e.rejected = lost;
  return e;
}

ModelMetadata small_model() {
  ModelMetadata m;
  m.name = "small";
  m.max_batch_size = 32;
  m.inputs = {TensorSpec{"data", DType::kFloat32, {-1, 4}, false}};
  m.outputs = {TensorSpec{"output", DType::kFloat32, {-1, 4}, false}};
  return m;
}

TEST(TuneRun, TheFrontFoldsConsecutivePointsWithTheSameFigures) {
  const std::vector<Evaluated> front = {run_point(1, 1000, 1), run_point(2, 1000, 1),
                                        run_point(4, 1000, 1), run_point(8, 1200, 2),
                                        run_point(16, 1300, 3)};
  const auto d = distinct_front(front);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].index, 0u);
  EXPECT_EQ(d[0].alike, 2u);
  EXPECT_EQ(d[1].index, 3u);
  EXPECT_EQ(d[1].alike, 0u);
  EXPECT_EQ(d[2].index, 4u);
  EXPECT_TRUE(distinct_front({}).empty());
}

TEST(TuneRun, CandidatesAreTheBestThatMeetTheSloInOrder) {
  TuneResult r;
  r.slo_p99_ms = 5;
  r.objective = TuneObjective::kLatency;
  r.evaluated = {run_point(1, 1000, 4), run_point(2, 1000, 2), run_point(4, 1000, 9),
                 run_point(8, 1000, 3)};
  const auto c = tune_candidates(r, 5);
  ASSERT_EQ(c.size(), 3u);  // the p99 of 9 ms misses the SLO
  EXPECT_EQ(c[0].options.max_batch_size, 2u);
  EXPECT_EQ(c[1].options.max_batch_size, 8u);
  EXPECT_EQ(c[2].options.max_batch_size, 1u);
  EXPECT_TRUE(tune_candidates(r, 0).empty());
}

TEST(TuneRun, TheLargestBatchIsTheSpacesOrTheBases) {
  auto space = TuneSpace::parse("max_batch_size=4|48,lanes=1..2");
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(largest_batch(*space, Options{.max_batch_size = 512}), 48u);
  auto waits = TuneSpace::parse("max_wait_ms=0..2");
  ASSERT_TRUE(waits.ok());
  EXPECT_EQ(largest_batch(*waits, Options{.max_batch_size = 24}), 24u);
}

TEST(TuneRun, ThePredictionEvaluatorCountsWhatItReplays) {
  ArrivalSpec traffic;
  traffic.pattern = Pattern::kConstant;
  traffic.rate = 1000;
  traffic.duration_s = 0.5;
  uint64_t simulated = 0;
  const Evaluator e = prediction_evaluator(
      traffic, CostModel::from_synthetic({.fixed_us = 100, .per_item_us = 10}, 64), &simulated);
  const Evaluated one = e(Options{.max_batch_size = 8, .max_wait_us = 0});
  EXPECT_EQ(one.sent, 500u);
  EXPECT_EQ(one.ok, 500u);
  EXPECT_EQ(simulated, 500u);
  EXPECT_NEAR(one.throughput_rps, 1000, 20);
  // A request alone runs 110 us and waits for none.
  EXPECT_NEAR(one.p50_ms, 0.11, 1e-6);
}

// Poisson traffic at `rate` for `seconds` on the synthetic 100 + 5 b us.
ConfirmSpec synthetic_spec(double rate, double seconds) {
  ConfirmSpec spec;
  spec.factory = SyntheticRunner::factory({.fixed_us = 100, .per_item_us = 5});
  spec.metadata = small_model();
  spec.traffic.pattern = Pattern::kPoisson;
  spec.traffic.rate = rate;
  spec.traffic.duration_s = seconds;
  return spec;
}

TEST(TuneRun, ALiveConfirmationMeasuresUntilStable) {
  ConfirmSpec spec = synthetic_spec(500, 0.2);
  spec.rule = StabilityRule{0.5, 2, 4};
  int runs_seen = 0;
  spec.on_run = [&runs_seen](int runs) { runs_seen = runs; };
  const Evaluated predicted = run_point(8, 500, 1);
  auto c = confirm_live(spec, predicted);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->has_value());
  const Confirmed& got = **c;
  EXPECT_GE(got.runs, 2);
  EXPECT_LE(got.runs, 4);
  EXPECT_EQ(runs_seen, got.runs);
  EXPECT_EQ(got.predicted.p99_ms, 1);
  EXPECT_EQ(got.measured.options, predicted.options);
  EXPECT_GT(got.measured.ok, 0u);
  EXPECT_GT(got.measured.throughput_rps, 0);
  EXPECT_GT(got.measured.p99_ms, 0);
}

TEST(TuneRun, AStoppedConfirmationSaysSoAndADeadlineSkipsIt) {
  ConfirmSpec spec = synthetic_spec(500, 60);
  std::atomic<bool> stop{false};
  spec.stop = &stop;
  // Stopped from another thread during the first run, which is a minute
  // long: the run ends at its next send and no other starts.
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
  });
  auto c = confirm_live(spec, run_point(8, 500, 1));
  stopper.join();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kCancelled);

  stop = false;
  spec.deadline = std::chrono::steady_clock::now();
  auto late = confirm_live(spec, run_point(8, 500, 1));
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(late->has_value());
}

TEST(TuneRun, TheWinnerIsTheBestAsMeasured) {
  Confirmed a{run_point(1, 1000, 1), run_point(1, 1000, 4), 3, true};
  Confirmed b{run_point(2, 1000, 2), run_point(2, 1000, 2), 3, true};
  const std::vector<Confirmed> both = {a, b};
  auto best = best_measured(both, 5, TuneObjective::kLatency);
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(*best, 1u);
  auto none = best_measured(both, 1, TuneObjective::kLatency);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("measured live, none of the 2 best predictions"),
            std::string::npos)
      << none.error().message;
  EXPECT_NE(none.error().message.find("closest:"), std::string::npos);
}

CostModel line_cost(std::vector<std::pair<uint32_t, double>> points) {
  std::vector<CostPoint> v;
  for (auto [b, us] : points) v.push_back(CostPoint{.batch = b, .median_us = us});
  auto m = CostModel::from_points(v);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return *m;
}

TEST(TuneRun, ALevelIsTheGeometricMeanOfTBOverTheCosts) {
  const CostModel base = line_cost({{1, 100}, {4, 200}, {8, 400}});
  // 1.21 at b = 1 and 1.0 at b = 4: sqrt(1.21) = 1.1.
  EXPECT_NEAR(cost_level(line_cost({{1, 121}, {4, 200}}), base, 1), 1.1, 1e-9);
  // b = 2 is between base's points (133.3 us): 1.5 there, alone.
  EXPECT_NEAR(cost_level(line_cost({{2, 200}}), base, 1), 200 / (100 + 100.0 / 3), 1e-9);
  // With two lanes, against base's two-lane curve (twice as slow): 0.5.
  auto two = base.with_lanes({LaneCostPoints{
      2, {CostPoint{.batch = 1, .median_us = 200}, CostPoint{.batch = 8, .median_us = 800}}}});
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_NEAR(cost_level(line_cost({{1, 100}, {8, 400}}), *two, 2), 0.5, 1e-9);
  EXPECT_NEAR(cost_level(line_cost({{1, 100}, {8, 400}}), *two, 1), 1.0, 1e-9);
  // Nothing compares against a cost of zero.
  EXPECT_EQ(cost_level(line_cost({{1, 100}}), line_cost({{1, 0}, {2, 0}}), 1), 0);
}

TEST(TuneRun, TheMedianLevelSkipsRunsThatRefinedNothing) {
  using L = std::vector<double>;
  EXPECT_EQ(median_level(L{1.3, 0.9, 1.1}), 2u);
  EXPECT_EQ(median_level(L{1.3, 0, 0.9, 1.1}), 3u);
  EXPECT_EQ(median_level(L{1.2, 0.8}), 1u);  // the lower of the middle two
  EXPECT_EQ(median_level(L{0.7}), 0u);
  EXPECT_EQ(median_level(L{0, 0}), 0u);
  EXPECT_EQ(median_level(L{}), 0u);
}

TEST(TuneRun, CalibrationWithSeveralRunsRefinesWithTheMedianRun) {
  ConfirmSpec spec = synthetic_spec(3000, 0.3);
  const CostModel before = line_cost({{1, 50}, {32, 80}});
  CostModel cost = before;
  auto c = calibrate_live(spec, calibration_options(Options{}, 32, 1), cost, 3);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->levels.size(), 3u);
  ASSERT_EQ(c->seen.size(), 3u);
  ASSERT_TRUE(c->observed());
  EXPECT_EQ(c->observed(), c->seen[c->chosen]);
  EXPECT_EQ(c->chosen, median_level(c->levels));
  for (size_t k = 0; k < 3; ++k) {
    ASSERT_TRUE(c->seen[k]);
    // The synthetic runner sleeps 100 + 5 b us at least: slower than 50..80.
    EXPECT_GT(c->levels[k], 1.0);
    EXPECT_DOUBLE_EQ(c->levels[k], cost_level(*c->seen[k], before, 1));
  }
  // The chosen run's sizes are the cost's now, as measured.
  for (const CostPoint& p : c->observed()->points()) {
    EXPECT_DOUBLE_EQ(cost.cost_us(p.batch), p.median_us) << "b = " << p.batch;
  }
  // One run at least, however few are asked for.
  CostModel again = before;
  auto one = calibrate_live(spec, calibration_options(Options{}, 32, 1), again, 0);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->levels.size(), 1u);
  EXPECT_EQ(one->chosen, 0u);
}

}  // namespace
}  // namespace batchscope

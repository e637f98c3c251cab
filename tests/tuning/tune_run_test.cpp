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

Evaluated point(uint32_t batch, double rps, double p99, uint64_t lost = 0) {
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
  const std::vector<Evaluated> front = {point(1, 1000, 1), point(2, 1000, 1), point(4, 1000, 1),
                                        point(8, 1200, 2), point(16, 1300, 3)};
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
  r.evaluated = {point(1, 1000, 4), point(2, 1000, 2), point(4, 1000, 9), point(8, 1000, 3)};
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

TEST(TuneRun, ALiveConfirmationMeasuresUntilStable) {
  ConfirmSpec spec;
  spec.factory = SyntheticRunner::factory({.fixed_us = 100, .per_item_us = 5});
  spec.metadata = small_model();
  spec.traffic.pattern = Pattern::kPoisson;
  spec.traffic.rate = 500;
  spec.traffic.duration_s = 0.2;
  spec.rule = StabilityRule{0.5, 2, 4};
  int runs_seen = 0;
  spec.on_run = [&runs_seen](int runs) { runs_seen = runs; };
  const Evaluated predicted = point(8, 500, 1);
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
  ConfirmSpec spec;
  spec.factory = SyntheticRunner::factory({.fixed_us = 100, .per_item_us = 5});
  spec.metadata = small_model();
  spec.traffic.pattern = Pattern::kPoisson;
  spec.traffic.rate = 500;
  spec.traffic.duration_s = 60;
  std::atomic<bool> stop{false};
  spec.stop = &stop;
  // Stopped from another thread during the first run, which is a minute
  // long: the run ends at its next send and no other starts.
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
  });
  auto c = confirm_live(spec, point(8, 500, 1));
  stopper.join();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kCancelled);

  stop = false;
  spec.deadline = std::chrono::steady_clock::now();
  auto late = confirm_live(spec, point(8, 500, 1));
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(late->has_value());
}

TEST(TuneRun, TheWinnerIsTheBestAsMeasured) {
  Confirmed a{point(1, 1000, 1), point(1, 1000, 4), 3, true};
  Confirmed b{point(2, 1000, 2), point(2, 1000, 2), 3, true};
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

}  // namespace
}  // namespace batchscope

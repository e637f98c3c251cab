// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for a run's stage times: hand-built engine records whose stages are
// worked out by hand, through the recorder, the summary, its JSON and text.

#include "runs/run_stages.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runs/run_record.h"
#include "runs/run_recorder.h"

namespace batchscope {
namespace {

const TimePoint kStageZero = TimePoint(std::chrono::seconds(7000));
TimePoint stage_at_us(int64_t us) { return kStageZero + std::chrono::microseconds(us); }

// A request a preprocess pool prepared and whose runner timed postprocess:
// 100 µs waiting for a process, 900 in it, 2,000 queued, 500 for a lane,
// 3,000 in the model and 400 in postprocess.
RequestRecord prepared_request(int64_t shift_us) {
  RequestRecord r;
  StageTimes& t = r.times;
  t.arrival = stage_at_us(shift_us);
  t.prepare_start = stage_at_us(shift_us + 100);
  t.admitted = stage_at_us(shift_us + 1000);
  t.batched = stage_at_us(shift_us + 3000);
  t.run_start = stage_at_us(shift_us + 3500);
  t.post_start = stage_at_us(shift_us + 6500);
  t.run_end = stage_at_us(shift_us + 6900);
  t.completed = stage_at_us(shift_us + 6950);
  return r;
}

// A TorchScript model's request: no pool, no postprocess.
RequestRecord plain_request() {
  RequestRecord r;
  StageTimes& t = r.times;
  t.arrival = stage_at_us(0);
  t.admitted = stage_at_us(2);
  t.batched = stage_at_us(1000);
  t.run_start = stage_at_us(1000);
  t.run_end = stage_at_us(4000);
  t.completed = stage_at_us(4010);
  return r;
}

double p50_us(const RunStages& s, RunStage stage) {
  return static_cast<double>(s.of(stage).quantile(0.5)) / 1000.0;
}

TEST(RunStages, APreparedRequestSpendsItsTimeInSixStagesThatAddUp) {
  RunStages s;
  s.add(prepared_request(0));
  EXPECT_NEAR(p50_us(s, RunStage::kPreprocessWait), 100, 1);
  EXPECT_NEAR(p50_us(s, RunStage::kPreprocess), 900, 4);
  EXPECT_NEAR(p50_us(s, RunStage::kBatchWait), 2000, 8);
  EXPECT_NEAR(p50_us(s, RunStage::kLaneWait), 500, 2);
  EXPECT_NEAR(p50_us(s, RunStage::kModel), 3000, 12);
  EXPECT_NEAR(p50_us(s, RunStage::kPostprocess), 400, 2);
  // Means are exact sums, and they add up to arrival .. run_end.
  uint64_t total = 0;
  for (const LogHistogram& h : s.ns) total += h.sum();
  EXPECT_EQ(total, 6'900'000u);
}

TEST(RunStages, APlainRequestHasNoPreprocessOrPostprocessAndItsBatchWaitStartsAtArrival) {
  RunStages s;
  s.add(plain_request());
  EXPECT_TRUE(s.of(RunStage::kPreprocessWait).empty());
  EXPECT_TRUE(s.of(RunStage::kPreprocess).empty());
  EXPECT_TRUE(s.of(RunStage::kPostprocess).empty());
  EXPECT_EQ(s.of(RunStage::kBatchWait).sum(), 1'000'000u);
  EXPECT_EQ(s.of(RunStage::kLaneWait).sum(), 0u);
  EXPECT_EQ(s.of(RunStage::kModel).sum(), 3'000'000u);
  const auto figs = stage_figures(s);
  ASSERT_EQ(figs.size(), 3u);
  EXPECT_EQ(figs[0].stage, RunStage::kBatchWait);
  EXPECT_EQ(figs[1].stage, RunStage::kLaneWait);
  EXPECT_EQ(figs[2].stage, RunStage::kModel);
  EXPECT_NEAR(figs[2].mean_ms, 3.0, 1e-9);
}

TEST(RunStages, APoolPreparedRequestInABatchTheLanePreparedCountsItsPreprocessOnce) {
  RunStages s;
  RequestRecord r = prepared_request(0);
  r.times.model_start = r.times.run_start + std::chrono::microseconds(1000);
  s.add(r);
  EXPECT_EQ(s.of(RunStage::kPreprocess).count(), 1u);
  EXPECT_EQ(s.of(RunStage::kPreprocess).sum(), 900'000u);  // the pool's, not the lane's
  EXPECT_EQ(s.of(RunStage::kModel).sum(), 3'000'000u);     // the whole run before postprocess
  // A raw one in the same batch: the lane's preparing is its preprocess.
  RequestRecord raw = plain_request();
  raw.times.model_start = raw.times.run_start + std::chrono::microseconds(1000);
  RunStages t;
  t.add(raw);
  EXPECT_EQ(t.of(RunStage::kPreprocess).sum(), 1'000'000u);
  EXPECT_EQ(t.of(RunStage::kModel).sum(), 2'000'000u);
}

TEST(RunStages, OnlyAnsweredRequestsCount) {
  RunStages s;
  RequestRecord r = prepared_request(0);
  r.outcome = Outcome::kTimedOut;
  s.add(r);
  r.outcome = Outcome::kModelError;
  s.add(r);
  EXPECT_TRUE(s.empty());
  EXPECT_TRUE(stage_figures(s).empty());
}

TEST(RunStages, TheRecorderKeepsThoseOfItsRunAndTheSummaryCarriesThemThroughJsonAndText) {
  RunRecorder rec;
  rec.start(RunConfig{}, stage_at_us(1000));
  RecordBatch records;
  records.requests = {prepared_request(0), prepared_request(2000), prepared_request(4000)};
  rec.add(records);  // the first arrived before the run: left out
  const RunData run = rec.finish(stage_at_us(20000));
  ASSERT_EQ(run.requests.size(), 2u);
  EXPECT_EQ(run.stages.of(RunStage::kModel).count(), 2u);

  const RunSummary s = summarize_run(run);
  ASSERT_EQ(s.stages.size(), 6u);
  const std::string json = run_summary_json(run, s);
  const auto j = nlohmann::json::parse(json);
  ASSERT_TRUE(j.contains("stages_ms")) << json;
  EXPECT_EQ(j["stages_ms"]["preprocess"]["count"], 2);
  EXPECT_NEAR(j["stages_ms"]["model"]["mean"].get<double>(), 3.0, 1e-9);
  EXPECT_NEAR(j["stages_ms"]["postprocess"]["p99"].get<double>(), 0.4, 0.01);

  const std::string text = run_summary_text(run, s);
  EXPECT_NE(text.find("stages ms"), std::string::npos) << text;
  EXPECT_NE(text.find("preprocess wait"), std::string::npos) << text;
  EXPECT_NE(text.find("lane wait"), std::string::npos) << text;
}

TEST(RunStages, ARunWithoutEngineRecordsHasNoStagesInItsJson) {
  RunData run;
  const std::string json = run_summary_json(run, summarize_run(run));
  EXPECT_EQ(json.find("stages_ms"), std::string::npos);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The tunes as a command calls them, once, on the synthetic models: the
// report hears the search before any confirmation and the result last, the
// result's JSON names the winner and where it was measured; a request that
// cannot be tuned as asked is refused before anything runs.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "model/lm_tune.h"
#include "model/tensor_tune.h"

namespace batchscope {
namespace {
namespace fs = std::filesystem;

// Kept costs go to a cache of the test's own.
class Tunes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("batchscope_tune_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("XDG_CACHE_HOME");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

// What a tune told, in order.
struct Heard final : TuneReport {
  Say lines{[this](const std::string& s) { said += s; },
            [this](const std::string& s) { said += s; }};
  std::vector<std::string> events;
  std::string said;
  std::optional<TuneFinish> finish;
  const Say& say() const override { return lines; }
  void searched(const TuneResult& r, const SearchStats& s) override {
    events.push_back("searched");
    EXPECT_FALSE(r.evaluated.empty());
    EXPECT_GT(s.simulated, 0u);
  }
  void ranked(const HeadroomResult& h) override {
    events.push_back("ranked");
    EXPECT_FALSE(h.checked.empty());
  }
  void confirmed(const Confirmed& c) override {
    events.push_back("confirmed");
    EXPECT_GE(c.runs, 1);
  }
  void finished(const TuneFinish& f) override {
    events.push_back("finished");
    finish = f;
  }
};

TuneRequest synthetic_tune() {
  TuneRequest t;
  t.model.synthetic = SyntheticCost{500, 20};
  t.traffic.pattern = Pattern::kPoisson;
  t.traffic.rate = 1000;
  t.traffic.duration_s = 0.3;
  t.traffic.seed = 4;
  t.slo_p99_ms = 100;
  t.space_text = "max_batch_size=1..16,max_wait_ms=0..2,lanes=1";
  t.confirm = 1;
  t.calibrate = false;
  t.cost.calibration_s = 0.5;
  t.history.off = true;
  return t;
}

TEST_F(Tunes, TheTensorTuneTellsTheSearchThenEachConfirmationThenItsResult) {
  const TuneRequest t = synthetic_tune();
  Heard heard;
  const auto error = tune_tensor(t, heard);
  ASSERT_FALSE(error) << error->message << "\n" << heard.said;
  ASSERT_GE(heard.events.size(), 3u);
  EXPECT_EQ(heard.events.front(), "searched");
  EXPECT_EQ(heard.events[1], "ranked");
  EXPECT_EQ(heard.events[2], "confirmed");
  EXPECT_EQ(heard.events.back(), "finished");
  ASSERT_TRUE(heard.finish && heard.finish->winner);
  EXPECT_TRUE(heard.finish->measured);
  // The winner comes with its band and headroom, in the JSON too.
  ASSERT_TRUE(heard.finish->winner->band && heard.finish->winner->headroom);
  EXPECT_LE(heard.finish->winner->band->p99_ms.low, heard.finish->winner->p99_ms);
  EXPECT_GE(heard.finish->winner->band->p99_ms.high, heard.finish->winner->p99_ms);
  EXPECT_NE(heard.finish->json.find("\"headroom\":{\"needed_slowdown\":"), std::string::npos);
  EXPECT_NE(heard.finish->json.find("\"drift\":{\"runs\":"), std::string::npos);
  EXPECT_GT(heard.finish->winner->options.max_batch_size, 1u);  // batching pays at this rate
  EXPECT_NE(heard.finish->json.find("\"measured_on\""), std::string::npos);
  EXPECT_NE(heard.said.find("best predicted: "), std::string::npos) << heard.said;
}

TEST_F(Tunes, AWinnerWithoutTheHeadroomAskedForIsTheClosestMarkedFragile) {
  TuneRequest t = synthetic_tune();
  t.confirm = 0;
  t.slo_p99_ms = 3;
  t.headroom = 2.9;  // t(b) 3.9x as slow: past the SLO for every batch of 8
  t.cost.file = (dir_ / "cost.json").string();
  FILE* f = std::fopen(t.cost.file.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs(
      "{\"points\": [{\"batch\": 1, \"median_us\": 400}, {\"batch\": 8, \"median_us\": 1000}]}", f);
  std::fclose(f);
  t.space_text = "max_batch_size=1..8,max_wait_ms=0..1,lanes=1";
  Heard heard;
  const auto error = tune_tensor(t, heard);
  ASSERT_FALSE(error) << error->message << "\n" << heard.said;
  ASSERT_TRUE(heard.finish && heard.finish->winner);
  EXPECT_TRUE(heard.finish->fragile);
  ASSERT_TRUE(heard.finish->winner->headroom);
  EXPECT_LT(heard.finish->winner->headroom->slowdown, 3.9);
  EXPECT_GT(heard.finish->winner->headroom->slowdown, 1.0);
  EXPECT_NE(heard.finish->json.find("\"fragile\":true"), std::string::npos);
  EXPECT_NE(heard.said.find("(fragile)"), std::string::npos) << heard.said;
  EXPECT_NE(heard.said.find("drift: not known yet"), std::string::npos) << heard.said;
}

TEST_F(Tunes, ASpaceAboveTheModelsLargestBatchIsRefusedBeforeAnythingRuns) {
  TuneRequest t = synthetic_tune();
  t.space_text = "max_batch_size=1..8192";
  Heard heard;
  const auto error = tune_tensor(t, heard);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->refused);
  EXPECT_NE(error->message.find("8192"), std::string::npos) << error->message;
  EXPECT_TRUE(heard.events.empty());
}

TEST_F(Tunes, ALiveMissFinishesWithoutAWinnerAndFails) {
  TuneRequest t = synthetic_tune();
  t.model.synthetic = SyntheticCost{5000, 10};
  t.traffic.rate = 50;
  t.slo_p99_ms = 1;
  // Priced far below the model: every prediction meets 1 ms, no run does.
  t.cost.file = (dir_ / "cheap.json").string();
  FILE* f = std::fopen(t.cost.file.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs("{\"points\": [{\"batch\": 1, \"median_us\": 10}, {\"batch\": 8, \"median_us\": 12}]}",
             f);
  std::fclose(f);
  t.space_text = "max_batch_size=1..8,max_wait_ms=0,lanes=1";
  Heard heard;
  const auto error = tune_tensor(t, heard);
  ASSERT_TRUE(error);
  EXPECT_FALSE(error->refused);
  EXPECT_NE(error->message.find("measured live"), std::string::npos) << error->message;
  ASSERT_TRUE(heard.finish);
  EXPECT_FALSE(heard.finish->winner);
  EXPECT_NE(heard.finish->json.find("\"best\":null"), std::string::npos);
}

struct HeardLm final : LmTuneReport {
  Say lines{[this](const std::string& s) { said += s; },
            [this](const std::string& s) { said += s; }};
  std::vector<std::string> events;
  std::string said;
  std::optional<LmTuneFinish> finish;
  const Say& say() const override { return lines; }
  void searched(const GenTuneResult& r, double) override {
    events.push_back("searched");
    EXPECT_FALSE(r.evaluated.empty());
  }
  void confirmed(const LmConfirmation& c, const GenSlo&) override {
    events.push_back("confirmed");
    EXPECT_EQ(c.runs.size(), c.live.size());
  }
  void finished(const LmTuneFinish& f) override {
    events.push_back("finished");
    finish = f;
  }
};

TEST_F(Tunes, TheLanguageModelTuneConfirmsOnTheSyntheticModelsOwnCost) {
  LmTuneRequest t;
  t.model.synthetic_lm = SyntheticLmCost{2000, 20};
  t.traffic.pattern = Pattern::kPoisson;
  t.traffic.rate = 10;
  t.traffic.duration_s = 0.5;
  t.slo.ttft_ms = 1000;
  t.slo.itl_ms = 100;
  t.space_text = "scheduling=continuous,max_num_seqs=8|16";
  t.confirm = 1;
  t.confirm_runs = 1;
  t.history.off = true;
  HeardLm heard;
  const auto error = tune_lm(t, heard);
  ASSERT_FALSE(error) << error->message << "\n" << heard.said;
  EXPECT_EQ(heard.events, (std::vector<std::string>{"searched", "confirmed", "finished"}));
  ASSERT_TRUE(heard.finish && heard.finish->winner);
  EXPECT_NE(heard.said.find("the synthetic model's own cost"), std::string::npos) << heard.said;
  EXPECT_NE(heard.finish->json.find("\"kind\":\"generation\""), std::string::npos);
}

}  // namespace
}  // namespace batchscope

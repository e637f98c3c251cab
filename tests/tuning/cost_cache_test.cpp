// SPDX-License-Identifier: GPL-3.0-or-later
// The cost cache (tuning/cost_cache.h) and its refinement by live runs
// (CostModel::calibrated weighted by batches): where the file goes, its key,
// what it refuses and why, and that a refinement moves the cost towards
// what a run measured and is kept. The calibration's traffic
// (tuning/cost_calibration.h) is checked here too.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/tuning/cost_points.h"
#include "tuning/cost_cache.h"
#include "tuning/cost_calibration.h"

namespace batchscope {
namespace {

namespace fs = std::filesystem;
using test::points;

CostKey key_of(std::string machine = R"({"machine": {"cpu": "Xeon", "cores": 2, "host": "a"}})") {
  return CostKey{"mlp", "sha256:abc", "cpu", std::move(machine)};
}

class CostCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("batchscope_cost_cache_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

TEST(CostKeyTest, ChangesWithTheModelTheDeviceAndTheMachineAloneNotTheirOrder) {
  const CostKey k = key_of();
  EXPECT_EQ(k.id().size(), 16u);
  EXPECT_EQ(k.id(), key_of(R"({"machine":{"host":"a","cores":2,"cpu":"Xeon"}})").id());
  CostKey other_model = k;
  other_model.model_id = "sha256:abd";
  EXPECT_NE(other_model.id(), k.id());
  CostKey other_device = k;
  other_device.device = "cuda:0";
  EXPECT_NE(other_device.id(), k.id());
  EXPECT_NE(key_of(R"({"machine": {"cpu": "Xeon", "cores": 2, "host": "b"}})").id(), k.id());
  CostKey renamed = k;
  renamed.model = "mlp-copy";  // the name names the file; the key is what it is made for
  EXPECT_EQ(renamed.id(), k.id());
  EXPECT_EQ(cost_cache_path(k, "/c"), "/c/mlp-" + k.id() + ".json");
  CostKey odd = k;
  odd.model = "../my model";
  EXPECT_EQ(cost_cache_path(odd, "/c"), "/c/model.._my_model-" + k.id() + ".json");
}

TEST(CostKeyTest, TheFolderIsTheUsersCache) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(cost_cache_dir(), "/x/cache/batchscope/costs");
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // not absolute: ignored, as the XDG spec says
  ::setenv("HOME", std::getenv("HOME") ? std::getenv("HOME") : "/root", 1);
  EXPECT_EQ(cost_cache_dir(), std::string(std::getenv("HOME")) + "/.cache/batchscope/costs");
  if (xdg)
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_CACHE_HOME");
}

TEST_F(CostCacheTest, WhatIsWrittenIsReadBackForItsKeyAlone) {
  const CostKey k = key_of();
  const std::string path = cost_cache_path(k, dir_.string());
  auto none = read_cached_cost(path, k);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  const CostModel m = points({{1, 100, 0, {}, true, 50, "2026-11-29T10:00:00.000Z"}, {8, 400}});
  ASSERT_TRUE(write_cached_cost(path, k, m).ok());
  const std::string text = read(path);
  EXPECT_NE(text.find(R"("version":3,"made_for":{"model":"mlp","model_id":"sha256:abc")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"written_at\":\"20"), std::string::npos);
  auto back = read_cached_cost(path, k);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->to_json(), m.to_json());
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(CostCacheTest, AStaleOrForeignFileIsRefusedNamingWhy) {
  const CostKey k = key_of();
  const std::string path = cost_cache_path(k, dir_.string());
  fs::create_directories(dir_);
  // Version 2, written before the cache: stale.
  std::ofstream(path) << points({{1, 100}}).to_json().replace(35, 1, "2");
  std::ofstream(dir_ / "v2.json") << R"({"format":"batchscope-cost","version":2,"points":[]})";
  auto old = read_cached_cost(path, k);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message.find(path + " is stale: version"), std::string::npos)
      << old.error().message;
  // Made for another model file: stale.
  CostKey changed = k;
  changed.model_id = "sha256:def";
  ASSERT_TRUE(write_cached_cost(path, changed, points({{1, 100}})).ok());
  auto stale = read_cached_cost(path, k);
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.error().message.find("is stale: it was made for \"sha256:def\", and the model "
                                       "is now \"sha256:abc\" (the file changed)"),
            std::string::npos)
      << stale.error().message;
  // Made on another machine: the facts that differ are named.
  ASSERT_TRUE(write_cached_cost(path,
                                key_of(R"({"machine": {"cpu": "EPYC", "cores": 2, "host": "b"}})"),
                                points({{1, 100}}))
                  .ok());
  auto foreign = read_cached_cost(path, k);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().message.find(path + " was made on another machine ("),
            std::string::npos)
      << foreign.error().message;
  EXPECT_NE(foreign.error().message.find("machine.cpu \"EPYC\", here \"Xeon\""), std::string::npos)
      << foreign.error().message;
  EXPECT_NE(foreign.error().message.find("machine.host \"b\", here \"a\""), std::string::npos);
  // Another device.
  CostKey gpu = k;
  gpu.device = "cuda:0";
  ASSERT_TRUE(write_cached_cost(path, gpu, points({{1, 100}})).ok());
  auto device = read_cached_cost(path, k);
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.error().message.find("was made on device \"cuda:0\", not \"cpu\""),
            std::string::npos);
  // Not a cost file at all.
  std::ofstream(path) << "{\"points\": []}";
  auto other = read_cached_cost(path, k);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("is not a cost file"), std::string::npos);
}

TEST_F(CostCacheTest, ARefinementMovesTheCostTowardsTheRunAndIsKept) {
  const CostKey k = key_of();
  const std::string path = cost_cache_path(k, dir_.string());
  // Nothing kept: a live run does not start a file.
  auto none = refine_cached_cost(path, k, points({{4, 300, 0, {}, true, 100}}), 1);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(fs::exists(path));
  // Kept: b = 4 measured live over 300 batches at 200 us; 16 profiled only.
  const CostModel kept =
      points({{4, 200, 0, {}, true, 300, "2026-01-01T00:00:00.000Z"}, {16, 500}});
  ASSERT_TRUE(write_cached_cost(path, k, kept).ok());
  // A run of 100 batches of 4 at 240 us: (300 * 200 + 100 * 240) / 400 = 210.
  auto r = refine_cached_cost(path, k, points({{4, 240, 0, {}, true, 100}}), 1);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->has_value());
  ASSERT_EQ((*r)->moves.size(), 1u);
  EXPECT_DOUBLE_EQ((*r)->moves[0].was_us, 200);
  EXPECT_DOUBLE_EQ((*r)->moves[0].seen_us, 240);
  EXPECT_DOUBLE_EQ((*r)->moves[0].now_us, 210);
  EXPECT_EQ((*r)->batches, 100u);
  auto back = read_cached_cost(path, k);
  ASSERT_TRUE(back.ok() && back->has_value());
  const CostModel& now = **back;
  EXPECT_DOUBLE_EQ(now.cost_us(4), 210);
  EXPECT_EQ(now.points()[0].batches, 400u);
  EXPECT_NE(now.points()[0].measured_at, "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(now.points()[0].measured_at.size(), 24u);  // 2026-11-29T10:21:37.123Z
  // 16 was never measured live: scaled by 4's ratio (210 / 200).
  EXPECT_DOUBLE_EQ(now.cost_us(16), 525);
  EXPECT_EQ(now.points()[1].measured_at, "");
  EXPECT_TRUE(calibrated_for(now, 1));
  EXPECT_FALSE(calibrated_for(now, 2));
}

TEST_F(CostCacheTest, ARefinementSaysHowThePreprocessCostMoved) {
  const CostKey k = key_of();
  const std::string path = cost_cache_path(k, dir_.string());
  PreprocessCost was;
  was.pool.push_back({1, {9000, 9000, 9000}, 100});
  auto kept = points({{1, 200}}).with_preprocess(was);
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(write_cached_cost(path, k, *kept).ok());
  PreprocessCost seen;
  seen.pool.push_back({1, {7000, 8000, 9000}, 300});
  auto observed = points({{1, 200, 0, {}, true, 50}}).with_preprocess(seen);
  ASSERT_TRUE(observed.ok());
  auto r = refine_cached_cost(path, k, *observed, 1);
  ASSERT_TRUE(r.ok() && r->has_value());
  ASSERT_EQ((*r)->preprocess.size(), 1u);
  const PreprocessMove& m = (*r)->preprocess[0];
  EXPECT_EQ(m.busy, 1u);
  EXPECT_EQ(m.requests, 300u);
  EXPECT_DOUBLE_EQ(m.was_us, 9000);
  EXPECT_DOUBLE_EQ(m.seen_us, 8000);
  EXPECT_DOUBLE_EQ(m.now_us, 8250);  // (9000 * 100 + 8000 * 300) / 400
  auto back = read_cached_cost(path, k);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((**back).preprocess().pool[0].requests, 400u);
}

TEST_F(CostCacheTest, ARunOfVaryingLengthsRefinesThePreprocessCostAlone) {
  const CostKey k = key_of();
  const std::string path = cost_cache_path(k, dir_.string());
  PreprocessCost seen;
  seen.pool.push_back({1, {7000, 8000, 9000}, 300});
  // No file, or a file without preprocess: nothing to refine.
  auto none = refine_cached_preprocess(path, k, seen);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(write_cached_cost(path, k, points({{1, 200}})).ok());
  none = refine_cached_preprocess(path, k, seen);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  PreprocessCost was;
  was.pool.push_back({1, {9000, 9000, 9000}, 100});
  auto kept = points({{1, 200}}).with_preprocess(was);
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(write_cached_cost(path, k, *kept).ok());
  auto r = refine_cached_preprocess(path, k, seen);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_TRUE((*r)->moves.empty());
  ASSERT_EQ((*r)->preprocess.size(), 1u);
  EXPECT_DOUBLE_EQ((*r)->preprocess[0].now_us, 8250);
  auto back = read_cached_cost(path, k);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_DOUBLE_EQ((**back).cost_us(1), 200);  // t(b) untouched
  EXPECT_EQ((**back).preprocess().pool[0].requests, 400u);
}

// A generative model's step cost is kept beside, under the same key and
// refusals, and read back as written.
TEST_F(CostCacheTest, AStepCostIsKeptForItsKeyAlone) {
  StepCost c;
  c.steps = 900;
  c.decode_steps = 800;
  c.step_us = 1500;
  c.token_us = 12.5;
  c.prefill_token_us = 40;
  c.rows.push_back({1, 1, 300, 1512});
  CostKey key = key_of();
  key.model = "tiny_lm";
  const std::string path = step_cost_cache_path(key, dir_.string());
  EXPECT_EQ(path, (dir_ / ("tiny_lm-" + key.id() + "-steps.json")).string());
  EXPECT_NE(path, cost_cache_path(key, dir_.string()));
  auto none = read_cached_step_cost(path, key);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(write_cached_step_cost(path, key, c).ok());
  auto back = read_cached_step_cost(path, key);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->has_value());
  EXPECT_DOUBLE_EQ((*back)->step_us, 1500);
  EXPECT_DOUBLE_EQ((*back)->token_us, 12.5);
  EXPECT_DOUBLE_EQ((*back)->prefill_token_us, 40);
  EXPECT_EQ((*back)->steps, 900u);
  ASSERT_EQ((*back)->rows.size(), 1u);
  EXPECT_NE(read(path).find("\"kind\": \"generation-steps\""), std::string::npos);
  // Another machine's file, copied in, is refused by name.
  CostKey elsewhere = key_of(R"({"machine": {"cpu": "Xeon", "cores": 2, "host": "b"}})");
  elsewhere.model = "tiny_lm";
  auto refused = read_cached_step_cost(path, elsewhere);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("was made on another machine"), std::string::npos)
      << refused.error().message;
  // A tensor cost file is no step cost.
  ASSERT_TRUE(write_cached_cost(path, key, points({{1, 100}, {2, 150}})).ok());
  auto tensor = read_cached_step_cost(path, key);
  ASSERT_FALSE(tensor.ok());
  EXPECT_NE(tensor.error().message.find("no \"step_us\""), std::string::npos)
      << tensor.error().message;
}

TEST(StepCostRefinementTest, WeightsBySteps) {
  StepCost kept;
  kept.steps = 1000;
  kept.step_us = 1000;
  kept.token_us = 10;
  kept.prefill_token_us = 50;
  StepCost seen;
  seen.steps = 3000;
  seen.step_us = 2000;
  seen.token_us = 20;
  seen.prefill_token_us = 0;  // the run prefilled nothing: its prompt cost teaches nothing
  const StepCost now = refine_step_cost(kept, seen);
  EXPECT_DOUBLE_EQ(now.step_us, 1750);
  EXPECT_DOUBLE_EQ(now.token_us, 17.5);
  EXPECT_DOUBLE_EQ(now.prefill_token_us, 50);
  EXPECT_EQ(now.steps, 4000u);
  // A long history counts at most `cap` steps, so the machine's drift shows.
  kept.steps = 1'000'000;
  EXPECT_DOUBLE_EQ(refine_step_cost(kept, seen, 1000).step_us, 1750);
  // A run with no steps changes nothing.
  EXPECT_DOUBLE_EQ(refine_step_cost(kept, StepCost{}).step_us, 1000);
}

TEST(CostRefinementTest, WeightsByBatchesCappedAndKeepsSizesMeasuredBefore) {
  // 2 and 8 measured live before; a run sees 2 alone.
  const CostModel kept = points({{2, 100, 0, {}, true, 100}, {8, 300, 0, {}, true, 50}, {32, 900}});
  const CostModel seen = points({{2, 200, 0, {}, true, 100}});
  const CostModel m = kept.calibrated(seen, 1, "T");
  EXPECT_DOUBLE_EQ(m.cost_us(2), 150);  // halfway: equal weights
  EXPECT_EQ(m.points()[0].batches, 200u);
  EXPECT_EQ(m.points()[0].measured_at, "T");
  EXPECT_DOUBLE_EQ(m.cost_us(8), 300);    // measured live before, not seen now: kept
  EXPECT_DOUBLE_EQ(m.cost_us(32), 1350);  // profiled only: scaled by 2's ratio, 1.5
  EXPECT_EQ(m.live_batches(1), 250u);
  // An old weight counts kMaxPointWeight batches at most, so that the curve
  // follows the machine: 1,000 new batches against 5,000.
  const CostModel heavy = points({{2, 100, 0, {}, true, 1'000'000}});
  const CostModel moved = heavy.calibrated(points({{2, 160, 0, {}, true, 1000}}));
  EXPECT_DOUBLE_EQ(moved.cost_us(2),
                   (100.0 * kMaxPointWeight + 160.0 * 1000) / (kMaxPointWeight + 1000.0));
  // Sizes kept from before and sizes just seen never cross: 4 seen at 350
  // above 8's 300 makes the two one pooled median.
  const CostModel crossed = kept.calibrated(points({{4, 350, 0, {}, true, 50}}));
  EXPECT_LE(crossed.cost_us(4), crossed.cost_us(8));
  EXPECT_DOUBLE_EQ(crossed.cost_us(4), 325);
}

TEST(CostRefinementTest, TheOverheadIsAveragedByBatchesPerLaneCount) {
  Expected<CostModel> kept = points({{4, 200, 0, {}, true, 300}}).with_overhead({10, 20, 30});
  ASSERT_TRUE(kept.ok());
  Expected<CostModel> seen = points({{4, 200, 0, {}, true, 100}}).with_overhead({50, 60, 70});
  ASSERT_TRUE(seen.ok());
  const CostModel one = kept->calibrated(*seen, 1);
  EXPECT_EQ(one.overheads_us(1), (std::vector<double>{20, 30, 40}));
  // Two lanes had none: the run's is taken as it is, and one lane keeps its own.
  const CostModel two = one.calibrated(*seen, 2);
  EXPECT_EQ(two.overheads_us(2), (std::vector<double>{50, 60, 70}));
  EXPECT_EQ(two.overheads_us(1), (std::vector<double>{20, 30, 40}));
  EXPECT_EQ(two.live_batches(2), 100u);
  EXPECT_TRUE(calibrated_for(two, 2));
}

TEST(CalibrationTrafficTest, AProbeForTheCapacityThenStepsThroughItUpToACeiling) {
  // t(b) = 1000 + 100 b us: one lane serves most at b = 64, 64 / 7400 us.
  const CostModel cost = test::linear(1000, 100);
  const double one = capacity_rps(cost, 1, 64);
  EXPECT_NEAR(one, 64 / 7400e-6, 1e-6);
  EXPECT_NEAR(capacity_rps(cost, 2, 64), 2 * one, 1e-6);
  // A lane's turnaround after each batch counts against it.
  EXPECT_NEAR(capacity_rps(cost.with_turnaround({600, 0}), 1, 64), 64 / 8000e-6, 1e-6);
  // The probe keeps twice the largest batch in flight, within the queue.
  const ArrivalSpec probe = probe_traffic(64, 1024, 6);
  EXPECT_EQ(probe.pattern, Pattern::kClosed);
  EXPECT_EQ(probe.concurrency, 128u);
  EXPECT_DOUBLE_EQ(probe.duration_s, 1.0);
  EXPECT_EQ(probe_traffic(1024, 1000, 6).concurrency, 1000u);
  EXPECT_TRUE(probe.validate().ok());
  // The steps: 10% .. 85% of the capacity measured, over the rest.
  const ArrivalSpec a = calibration_traffic(5000, 6);
  EXPECT_EQ(a.pattern, Pattern::kStep);
  ASSERT_EQ(a.steps.size(), 6u);
  EXPECT_DOUBLE_EQ(a.steps.front().first, 500);
  EXPECT_DOUBLE_EQ(a.steps[1].first, 1250);
  EXPECT_DOUBLE_EQ(a.steps.back().first, 4250);
  EXPECT_DOUBLE_EQ(a.duration_s, 5.0);
  EXPECT_NEAR(a.steps[2].second, 5.0 / 6, 1e-12);
  EXPECT_TRUE(a.validate().ok());
  // A model that costs next to nothing is stepped up to the ceiling alone.
  EXPECT_DOUBLE_EQ(calibration_traffic(1e6, 3).steps.back().first, kCalibrationMaxRate);
  const Options o = cache_calibration_options(Options{}, 64, 2);
  EXPECT_EQ(o.strategy, StrategyKind::kFifo);
  EXPECT_EQ(o.max_wait_us, 1000);
  EXPECT_EQ(o.num_lanes, 2u);
  EXPECT_EQ(o.max_batch_size, 64u);
}

}  // namespace
}  // namespace batchscope

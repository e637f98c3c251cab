// SPDX-License-Identifier: GPL-3.0-or-later
#include "torch/profile.h"
#include "tests/torch/model_files.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace batchscope {
namespace {

using test::kModels;

TEST(Profile, FitRecoversAnExactLine) {
  std::vector<ProfilePoint> pts;
  for (uint32_t b : {1u, 2u, 4u, 8u, 16u}) pts.push_back({b, 500.0 + 20.0 * b, 0, 0, 1});
  const LineFit f = fit_line(pts);
  EXPECT_NEAR(f.a, 500.0, 1e-9);
  EXPECT_NEAR(f.c, 20.0, 1e-9);
}

TEST(Profile, NamesTheSizesThatDidNotSettle) {
  std::vector<ProfilePoint> pts(3);
  pts[0].batch = 1, pts[1].batch = 2, pts[2].batch = 4;
  EXPECT_EQ(unsettled_text(pts), "");
  pts[1].settled = pts[2].settled = false;
  pts[1].why = "the machine is busy";
  pts[2].why = "another reason";
  EXPECT_EQ(unsettled_text(pts), "b = 2, 4: the machine is busy");
}

TEST(Profile, MeasuresAModelAndWritesTheDocumentedJson) {
  ProfileOptions o;
  o.max_batch = 8;
  o.seconds_per_point = 0.01;
  auto r = profile_model(kModels + "linear_128x64.pt", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->points.size(), 4u);  // 1, 2, 4, 8
  EXPECT_EQ(r->points.back().batch, 8u);
  EXPECT_DOUBLE_EQ(r->points.front().speedup, 1.0);
  for (const ProfilePoint& p : r->points) {
    EXPECT_GT(p.median_us, 0);
    EXPECT_GE(p.runs, o.min_runs);
  }
  const auto j = nlohmann::json::parse(profile_json(*r));
  for (const char* key :
       {"points", "a_us", "c_us", "speedup_at", "blas", "intra_op_threads", "settled"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["format"], "batchscope-cost");
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["settled"].get<bool>(), r->settled);
  for (size_t i = 0; i < r->points.size(); ++i) {
    const ProfilePoint& p = r->points[i];
    EXPECT_GE(p.windows, 3);
    if (i > 0) EXPECT_GE(p.median_us, r->points[i - 1].median_us);  // monotone
    ASSERT_EQ(j["points"][i]["run_quantiles"].size(), 65u);
    // About the fitted median, the runs' own median (p50 interpolates
    // between the two middle runs where the median takes the upper one).
    EXPECT_NEAR(j["points"][i]["run_quantiles"][32].get<double>() * p.median_us, p.measured_us,
                0.02 * p.measured_us);
    EXPECT_EQ(j["points"][i]["settled"].get<bool>(), p.settled);
  }
  EXPECT_EQ(j["points"][3]["batch"], 8);
  EXPECT_DOUBLE_EQ(j["points"][3]["median_us"].get<double>(), r->points[3].median_us);
  EXPECT_DOUBLE_EQ(j["speedup_at"]["8"].get<double>(), r->points[3].speedup);
  EXPECT_EQ(j["model"], "linear_128x64");
}

// A model whose inputs vary in length: t(b, L) at each length for every
// size, the reference length's row being t(b) as measured, written as the
// cost file's "length_grid".
TEST(Profile, MeasuresTheLengthGridOfAModelWhoseInputsVary) {
  ProfileOptions o;
  o.max_batch = 4;
  o.seconds_per_point = 0.01;
  o.lengths = {256};
  o.cliff_rounds = 0;  // whether 16 -> 256 looks like a cliff depends on the machine
  std::vector<std::pair<uint32_t, uint32_t>> seen;
  o.on_grid_point = [&](uint32_t b, uint32_t length, double us) {
    EXPECT_GT(us, 0);
    seen.emplace_back(b, length);
  };
  auto r = profile_model(kModels + "text_classifier.pt", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->points.size(), 3u);  // 1, 2, 4
  EXPECT_EQ(r->reference_length, 16u);
  ASSERT_EQ(r->grid_lengths, (std::vector<uint32_t>{16, 256}));
  ASSERT_EQ(r->grid_us.size(), 6u);
  EXPECT_EQ(seen, (std::vector<std::pair<uint32_t, uint32_t>>{{1, 256}, {2, 256}, {4, 256}}));
  for (size_t row = 0; row < 3; ++row) {
    EXPECT_DOUBLE_EQ(r->grid_us[row * 2], r->points[row].measured_us);
    EXPECT_GT(r->grid_us[row * 2 + 1], 0) << "b = " << r->points[row].batch;
  }
  const auto j = nlohmann::json::parse(profile_json(*r));
  ASSERT_TRUE(j.contains("length_grid"));
  EXPECT_EQ(j["length_grid"]["reference"], 16);
  EXPECT_EQ(j["length_grid"]["batches"], nlohmann::json::parse("[1, 2, 4]"));
  EXPECT_EQ(j["length_grid"]["lengths"], nlohmann::json::parse("[16, 256]"));
  ASSERT_EQ(j["length_grid"]["median_us"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["length_grid"]["median_us"][2][1].get<double>(), r->grid_us[5]);

  // The default grid: 16, 32, ... below the largest, and it; none on request
  // or for a model whose inputs do not vary.
  EXPECT_EQ(default_grid_lengths(256, 16), (std::vector<uint32_t>{16, 32, 64, 128, 256}));
  EXPECT_EQ(default_grid_lengths(100, 16), (std::vector<uint32_t>{16, 32, 64, 100}));
  EXPECT_EQ(default_grid_lengths(8, 8), (std::vector<uint32_t>{8}));
  o.length_grid = false;
  o.max_batch = 1;
  auto none = profile_model(kModels + "text_classifier.pt", o);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->grid_lengths.empty());
  EXPECT_FALSE(nlohmann::json::parse(profile_json(*none)).contains("length_grid"));
  o.length_grid = true;
  auto fixed = profile_model(kModels + "linear_128x64.pt", o);
  ASSERT_TRUE(fixed.ok());
  EXPECT_TRUE(fixed->grid_lengths.empty());
}

// A step is a cliff where some size's time grew more than twice as fast as
// the square of the length; its middle is measured next.
TEST(Profile, HalvesTheStepsWhereTheTimeJumps) {
  using Columns = std::map<uint32_t, std::vector<double>>;
  // 16 -> 32: x4 is the square, x8 twice it; just over x8 is a cliff.
  EXPECT_TRUE(cliff_middles(Columns{{16, {100, 200}}, {32, {800, 1600}}}).empty());
  EXPECT_EQ(cliff_middles(Columns{{16, {100, 200}}, {32, {800, 1601}}}),
            (std::vector<uint32_t>{24}));
  // Only the jumping step is halved; steps under 8 apart are left alone.
  EXPECT_EQ(cliff_middles(Columns{{16, {100}}, {64, {1000}}, {256, {500000}}}),
            (std::vector<uint32_t>{160}));
  EXPECT_TRUE(cliff_middles(Columns{{16, {100}}, {20, {100000}}}).empty());
  // A zero time (not measured) below is no evidence; one column is no step.
  EXPECT_TRUE(cliff_middles(Columns{{16, {0}}, {32, {100000}}}).empty());
  EXPECT_TRUE(cliff_middles(Columns{{16, {100}}}).empty());
}

// On the CPU too, t(b) is measured again with two copies running batches of
// the same size at once, each with its share of the BLAS threads, and
// written as the "lanes" curve the predictor reads for a two-lane engine.
TEST(Profile, MeasuresTwoLanesAtOnceOnTheCpu) {
  ProfileOptions o;
  o.max_batch = 4;
  o.seconds_per_point = 0.01;
  o.lanes = 2;
  auto r = profile_model(kModels + "linear_128x64.pt", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->lanes.size(), 1u);
  const LanesProfile& two = r->lanes.front();
  EXPECT_EQ(two.lanes, 2u);
  ASSERT_EQ(two.points.size(), r->points.size());  // 1, 2, 4
  for (size_t i = 0; i < two.points.size(); ++i) {
    EXPECT_EQ(two.points[i].batch, r->points[i].batch);
    EXPECT_GT(two.points[i].median_us, 0);
    EXPECT_GE(two.points[i].runs, o.min_runs);
  }
  const auto j = nlohmann::json::parse(profile_json(*r));
  ASSERT_TRUE(j.contains("lanes"));
  ASSERT_EQ(j["lanes"].size(), 1u);
  EXPECT_EQ(j["lanes"][0]["lanes"], 2);
  ASSERT_EQ(j["lanes"][0]["points"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["lanes"][0]["points"][2]["median_us"].get<double>(), two.points[2].median_us);
}

TEST(Profile, ReportsEachPointAsItIsMeasured) {
  std::vector<ProfilePoint> seen;
  ProfileOptions o;
  o.max_batch = 8;
  o.seconds_per_point = 0.01;
  o.on_point = [&seen](const ProfilePoint& p) { seen.push_back(p); };
  auto r = profile_model(kModels + "linear_128x64.pt", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(seen.size(), r->points.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].batch, r->points[i].batch);
    EXPECT_DOUBLE_EQ(seen[i].measured_us, r->points[i].measured_us);
    EXPECT_GT(seen[i].speedup, 0);  // known when reported
  }
}

TEST(Profile, StopsBetweenPointsOnceCancelled) {
  std::vector<uint32_t> seen;
  bool cancel = false;
  ProfileOptions o;
  o.max_batch = 8;
  o.seconds_per_point = 0.01;
  o.on_point = [&](const ProfilePoint& p) {
    seen.push_back(p.batch);
    cancel = true;  // as a window closing while b = 1 is measured would
  };
  o.cancelled = [&cancel] { return cancel; };
  auto r = profile_model(kModels + "linear_128x64.pt", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kCancelled);
  EXPECT_NE(r.error().message.find("cancelled"), std::string::npos) << r.error().message;
  EXPECT_EQ(seen, std::vector<uint32_t>{1});  // b = 2, 4, 8 never measured
}

TEST(Profile, RefusesABatchAboveTheModelsMaximum) {
  ProfileOptions o;
  o.max_batch = 100000;
  auto r = profile_model(kModels + "linear_128x64.pt", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("max_batch_size 256"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace batchscope

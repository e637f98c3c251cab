// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for the cost model t(b): interpolation and extrapolation, the spread
// and the measured overhead, building it from a run's batches, and reading
// what `batchscope profile` writes, with bad input refused by name.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "batching/synthetic_runner.h"
#include "tests/tuning/cost_points.h"
#include "tuning/cost_model.h"

namespace batchscope {
namespace {

using test::linear;
using test::points;

TEST(CostModelTest, InterpolatesLinearlyBetweenPoints) {
  const CostModel m = points({{1, 100}, {4, 400}, {8, 480}});
  EXPECT_DOUBLE_EQ(m.cost_us(1), 100);
  EXPECT_DOUBLE_EQ(m.cost_us(2), 200);
  EXPECT_DOUBLE_EQ(m.cost_us(4), 400);
  EXPECT_DOUBLE_EQ(m.cost_us(6), 440);
  EXPECT_DOUBLE_EQ(m.cost_us(8), 480);
  EXPECT_EQ(m.cost(6), microseconds(440));
}

TEST(CostModelTest, ExtrapolatesAlongTheEndPointsAndNeverBelowZero) {
  const CostModel m = points({{2, 300}, {4, 400}, {8, 480}});
  EXPECT_DOUBLE_EQ(m.cost_us(16), 640);  // 20 us per item beyond b = 8
  EXPECT_DOUBLE_EQ(m.cost_us(1), 250);   // 50 us per item below b = 2
  const CostModel falling = points({{1, 100}, {2, 40}});
  EXPECT_DOUBLE_EQ(falling.cost_us(3), 0);
  EXPECT_DOUBLE_EQ(falling.cost_us(10), 0);
}

TEST(CostModelTest, FromBatchesTakesEachSizesMedianAndReadsBack) {
  // Size 4 ran five times (300..700 us), size 8 six times, size 2 only twice,
  // and a failed batch and one that never ran are left out.
  std::vector<BatchRecord> batches;
  const TimePoint t0(std::chrono::seconds(5));
  auto add = [&](uint32_t size, int us, bool failed = false) {
    BatchRecord b;
    b.size = size;
    b.failed = failed;
    b.run_start = t0;
    b.run_end = t0 + microseconds(us);
    batches.push_back(b);
  };
  for (int us : {700, 300, 500, 400, 600}) add(4, us);
  for (int us : {800, 800, 800, 800, 800, 800}) add(8, us);
  add(8, 100'000, true);
  add(2, 100), add(2, 100);
  BatchRecord never;
  never.size = 8;
  batches.push_back(never);
  auto m = CostModel::from_batches(batches);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->points().size(), 2u);
  EXPECT_EQ(m->points()[0].batch, 4u);
  EXPECT_DOUBLE_EQ(m->points()[0].median_us, 500);
  EXPECT_NEAR(m->points()[0].spread, (700.0 - 300.0) / (1.6 * 500), 1e-12);
  EXPECT_DOUBLE_EQ(m->points()[1].median_us, 800);
  EXPECT_DOUBLE_EQ(m->points()[1].spread, 0);
  auto back = CostModel::from_profile_json(m->to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_DOUBLE_EQ(back->cost_us(6), 650);
  EXPECT_DOUBLE_EQ(back->spread(4), m->points()[0].spread);
  // Too few runs of any size is an error that says so.
  auto none = CostModel::from_batches(std::span<const BatchRecord>(batches).last(3));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no batch size ran 5 times"), std::string::npos);
}

TEST(CostModelTest, ASinglePointIsProportional) {
  const CostModel m = points({{4, 1000}});
  EXPECT_DOUBLE_EQ(m.cost_us(1), 250);
  EXPECT_DOUBLE_EQ(m.cost_us(4), 1000);
  EXPECT_DOUBLE_EQ(m.cost_us(10), 2500);
  EXPECT_DOUBLE_EQ(CostModel().cost_us(64), 0);
}

TEST(CostModelTest, SpreadIsInterpolatedAndHeldBeyondThePoints) {
  const CostModel m = points({{2, 100, 0.1}, {4, 200, 0.3}});
  EXPECT_TRUE(m.has_jitter());
  EXPECT_DOUBLE_EQ(m.spread(1), 0.1);
  EXPECT_DOUBLE_EQ(m.spread(3), 0.2);
  EXPECT_DOUBLE_EQ(m.spread(100), 0.3);
  EXPECT_FALSE(linear(10, 1).has_jitter());
}

TEST(CostModelTest, SyntheticCostIsExactAtEverySize) {
  SyntheticCost lin{.fixed_us = 500, .per_item_us = 20, .jitter = 0.05};
  const CostModel a = CostModel::from_synthetic(lin, 64);
  EXPECT_EQ(a.points().size(), 2u);
  for (size_t b : {1, 7, 64, 300}) EXPECT_DOUBLE_EQ(a.cost_us(b), lin.cost_us(b)) << b;
  EXPECT_DOUBLE_EQ(a.spread(9), 0.05);

  SyntheticCost bent{.fixed_us = 100, .per_item_us = 3, .log_us = 40};
  const CostModel c = CostModel::from_synthetic(bent, 64);
  for (size_t b = 1; b <= 64; ++b) EXPECT_DOUBLE_EQ(c.cost_us(b), bent.cost_us(b)) << b;
}

TEST(CostModelTest, ReadsWhatProfileWrites) {
  const char* json = R"({"model": "mlp", "device": "cpu",
    "points": [{"batch": 1, "median_us": 100.5, "per_item_us": 100.5, "speedup": 1, "runs": 9},
               {"batch": 2, "median_us": 150, "per_item_us": 75, "speedup": 1.34, "runs": 9,
                "spread": 0.05},
               {"batch": 4, "median_us": 250, "per_item_us": 62.5, "speedup": 1.6, "runs": 9}],
    "a_us": 50, "c_us": 50, "speedup_at": {"1": 1}})";
  Expected<CostModel> m = CostModel::from_profile_json(json);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->points().size(), 3u);
  EXPECT_DOUBLE_EQ(m->cost_us(1), 100.5);
  EXPECT_DOUBLE_EQ(m->cost_us(3), 200);
  EXPECT_DOUBLE_EQ(m->cost_us(8), 450);
  EXPECT_DOUBLE_EQ(m->points()[0].spread, 0);
  EXPECT_DOUBLE_EQ(m->points()[1].spread, 0.05);
}

TEST(CostModelTest, BadProfileJsonIsRefusedNamingTheField) {
  struct Case {
    const char* json;
    const char* message;  // a part of the expected message
  };
  const Case cases[] = {
      {"{\"points\": [", "not valid JSON"},
      {"[1, 2]", "the top level = [1,2] must be an object"},
      {"{\"model\": \"x\"}", "\"points\" is missing"},
      {"{\"points\": 3}", "points = 3 must be an array"},
      {"{\"points\": []}", "points is empty"},
      {"{\"points\": [7]}", "points[0] = 7 must be an object"},
      {"{\"points\": [{\"median_us\": 5}]}", "points[0].batch is missing"},
      {"{\"points\": [{\"batch\": \"4\", \"median_us\": 5}]}",
       "points[0].batch = \"4\" must be a number"},
      {"{\"points\": [{\"batch\": 0, \"median_us\": 5}]}",
       "points[0].batch = 0 must be a whole number"},
      {"{\"points\": [{\"batch\": 2.5, \"median_us\": 5}]}",
       "points[0].batch = 2.5 must be a whole number"},
      {"{\"points\": [{\"batch\": 4, \"median_us\": 5}, {\"batch\": 4, \"median_us\": 6}]}",
       "points[1].batch = 4 must be above points[0].batch = 4"},
      {"{\"points\": [{\"batch\": 1}]}", "points[0].median_us is missing"},
      {"{\"points\": [{\"batch\": 1, \"median_us\": null}]}",
       "points[0].median_us = null must be a number"},
      {"{\"points\": [{\"batch\": 1, \"median_us\": -3}]}",
       "points[0].median_us = -3 must be from 0 to 3.6e9 (an hour)"},
      {"{\"points\": [{\"batch\": 1, \"median_us\": 5, \"spread\": 1}]}",
       "points[0].spread = 1 must be in [0, 1)"},
      {"{\"points\": [{\"batch\": 1, \"median_us\": 5, \"spread\": -0.1}]}",
       "points[0].spread = -0.1 must be in [0, 1)"},
      {"{\"points\": [{\"batch\": 1, \"median_us\": 5, \"spread\": \"wide\"}]}",
       "points[0].spread = \"wide\" must be a number"},
  };
  for (const Case& c : cases) {
    Expected<CostModel> m = CostModel::from_profile_json(c.json);
    ASSERT_FALSE(m.ok()) << c.json;
    EXPECT_EQ(m.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(m.error().message.find(c.message), std::string::npos)
        << "for " << c.json << "\n got: " << m.error().message;
    EXPECT_EQ(m.error().message.rfind("profile JSON: ", 0), 0u) << m.error().message;
  }
}

TEST(CostModelTest, FromFileReadsAProfileAndRefusesBadFilesByName) {
  const auto dir = std::filesystem::temp_directory_path() / "batchscope_cost_file_test";
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.json").string();
  std::ofstream(good)
      << R"({"points": [{"batch": 1, "median_us": 100}, {"batch": 8, "median_us": 240}]})";
  auto m = CostModel::from_file(good);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_DOUBLE_EQ(m->cost_us(8), 240);

  auto missing = CostModel::from_file((dir / "none.json").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "cannot read " + (dir / "none.json").string());
  auto folder = CostModel::from_file(dir.string());
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.error().message.find("cannot read"), std::string::npos);

  const std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << R"({"points": []})";
  auto refused = CostModel::from_file(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message.find(bad + ": "), 0u) << refused.error().message;

  // Too big: refused by its size, before a byte of it is read (sparse here).
  const std::string huge = (dir / "huge.json").string();
  std::ofstream(huge) << "{";
  std::filesystem::resize_file(huge, CostModel::kMaxFileBytes + 1);
  auto big = CostModel::from_file(huge);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find(std::to_string(CostModel::kMaxFileBytes + 1) + " bytes"),
            std::string::npos)
      << big.error().message;
  std::filesystem::remove_all(dir);
}

TEST(CostModelTest, BadPointsAreRefusedNamingTheField) {
  auto message = [](std::vector<CostPoint> p) {
    Expected<CostModel> m = CostModel::from_points(std::move(p));
    return m.ok() ? std::string("ok") : m.error().message;
  };
  EXPECT_NE(message({}).find("points is empty"), std::string::npos);
  EXPECT_NE(message({{0, 5}}).find("points[0].batch = 0 must be at least 1"), std::string::npos);
  EXPECT_NE(message({{4, 5}, {2, 6}}).find("points[1].batch = 2 must be above points[0].batch = 4"),
            std::string::npos);
  EXPECT_NE(message({{1, std::nan("")}}).find("points[0].median_us = NaN"), std::string::npos);
  EXPECT_NE(message({{1, 5, 1.5}}).find("points[0].spread = 1.5"), std::string::npos);
  EXPECT_EQ(message({{1, 0}, {8, 0.5, 0.99}}), "ok");
}

TEST(CostModelTest, MeasuredOverheadInterpolatesAndReadsBack) {
  Expected<CostModel> m = linear(1000, 100).with_overhead({10, 20, 60});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_DOUBLE_EQ(m->overhead_us(0), 10);
  EXPECT_DOUBLE_EQ(m->overhead_us(0.25), 15);
  EXPECT_DOUBLE_EQ(m->overhead_us(0.5), 20);
  EXPECT_DOUBLE_EQ(m->overhead_us(0.75), 40);
  EXPECT_DOUBLE_EQ(m->overhead_us(1), 60);
  EXPECT_NE(m->describe().find("measured overhead (median 20 us)"), std::string::npos)
      << m->describe();
  auto back = CostModel::from_profile_json(m->to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->overheads_us(), (std::vector<double>{10, 20, 60}));
  EXPECT_DOUBLE_EQ(back->cost_us(3), 1300);
  // Without one: no overhead, and none written.
  EXPECT_DOUBLE_EQ(linear(1000, 100).overhead_us(0.9), 0);
  EXPECT_FALSE(linear(1000, 100).has_overhead());
  EXPECT_EQ(linear(1000, 100).to_json().find("overhead"), std::string::npos);
}

TEST(CostModelTest, BadMeasuredOverheadIsRefusedNamingTheValue) {
  const std::string p =
      "{\"points\": [{\"batch\": 1, \"median_us\": 5}], \"overhead_us_quantiles\": ";
  struct Case {
    std::string json;
    const char* message;
  };
  std::string big = p + "[0";
  for (int i = 0; i < 2000; ++i) big += ",1";
  big += "]}";
  const Case cases[] = {
      {p + "3}", "overhead_us_quantiles = 3 must be an array"},
      {p + "[1]}", "overhead_us_quantiles holds 1 values"},
      {p + "[1, \"x\"]}", "overhead_us_quantiles[1] = \"x\" must be a number"},
      {p + "[2, 1]}", "overhead_us_quantiles[1] = 1 is below overhead_us_quantiles[0] = 2"},
      {p + "[-1, 2]}", "overhead_us_quantiles[0] = -1 must be from 0 to"},
      {p + "[1, 1e300]}", "overhead_us_quantiles[1] = 1e+300 must be from 0 to"},
      {big, "overhead_us_quantiles holds 2001 values; it must hold 2 to 1025"},
  };
  for (const Case& c : cases) {
    Expected<CostModel> m = CostModel::from_profile_json(c.json);
    ASSERT_FALSE(m.ok()) << c.json;
    EXPECT_EQ(m.error().message.rfind("profile JSON: ", 0), 0u) << m.error().message;
    EXPECT_NE(m.error().message.find(c.message), std::string::npos)
        << "for " << c.json.substr(0, 120) << "\n got: " << m.error().message;
  }
  Expected<CostModel> nan = linear(1, 1).with_overhead({1, std::nan("")});
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.error().message.find("overhead_us_quantiles[1] = NaN"), std::string::npos);
}

TEST(CostModelTest, FromRunMeasuresEachRequestsTimeOutsideItsBatch) {
  // Five batches of 4 ran 700, 300, 500, 400, 600 us (median 500); each
  // carried one answered request sent 10 + k us late and answered 40 us after
  // its batch ended, and one that failed (left out).
  RunData run;
  const TimePoint t0(std::chrono::seconds(5));
  const int runs[] = {700, 300, 500, 400, 600};
  for (uint64_t k = 0; k < 5; ++k) {
    BatchRecord b;
    b.id = k + 1;
    b.size = 4;
    b.run_start = t0 + milliseconds(int64_t(k) * 10);
    b.run_end = b.run_start + microseconds(runs[k]);
    run.batches.push_back(b);
    RunRequest r;
    r.intended = b.run_start - microseconds(900);
    r.sent = r.intended + microseconds(10 + int64_t(k));
    r.done = b.run_end + microseconds(40);
    r.batch_id = b.id;
    run.requests.push_back(r);
    r.outcome = Outcome::kModelError;
    r.done = b.run_end + milliseconds(50);
    run.requests.push_back(r);
  }
  Expected<CostModel> m = CostModel::from_run(run);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_DOUBLE_EQ(m->cost_us(4), 500);
  // Its answer after the batch, the failed left out; how late each was sent
  // is measured apart (send_lag.h), from 50 requests on.
  ASSERT_EQ(m->overheads_us().size(), 65u);
  EXPECT_DOUBLE_EQ(m->overhead_us(0), 40);
  EXPECT_DOUBLE_EQ(m->overhead_us(1), 40);
  EXPECT_FALSE(m->has_send_lag());
  // What it writes, it reads back.
  auto back = CostModel::from_profile_json(m->to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->to_json(), m->to_json());
  // A run whose requests name no batch (over HTTP) measures none.
  for (RunRequest& r : run.requests) r.batch_id = 0;
  Expected<CostModel> http = CostModel::from_run(run);
  ASSERT_TRUE(http.ok());
  EXPECT_FALSE(http->has_overhead());
  EXPECT_FALSE(http->has_send_lag());
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for the cost file's versions 2 and 3: its format and version, each
// point's run-time quantiles, whether it settled, its weight and date, and
// how the predictor's jitter draws from them.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "tests/tuning/cost_points.h"
#include "tuning/cost_model.h"

namespace batchscope {
namespace {

using test::points;

TEST(CostFormatTest, WritesItsFormatAndVersionAndReadsThemBack) {
  CostPoint a{1, 100, 0.1, {0.8, 0.9, 1.0, 1.2, 2.0}, true, 420, "2026-11-29T10:21:37.123Z"};
  CostPoint b{4, 300, 0.05, {}, false};
  const CostModel m = points({a, b});
  const std::string json = m.to_json();
  EXPECT_EQ(json.rfind(R"({"format":"batchscope-cost","version":3,"points":)", 0), 0u) << json;
  auto back = CostModel::from_profile_json(json);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->points()[0].run_quantiles, a.run_quantiles);
  EXPECT_TRUE(back->points()[0].settled);
  EXPECT_FALSE(back->points()[1].settled);
  EXPECT_EQ(back->points()[0].batches, 420u);
  EXPECT_EQ(back->points()[0].measured_at, a.measured_at);
  EXPECT_EQ(back->points()[1].batches, 0u);
  EXPECT_EQ(back->points()[1].measured_at, "");
  EXPECT_EQ(back->to_json(), json);
  EXPECT_EQ(back->unsettled(), "b = 4");
}

TEST(CostFormatTest, AFileWithoutAVersionIsReadAsTheFirst) {
  // As profile wrote before versions: no format, no version, no quantiles.
  auto m = CostModel::from_profile_json(
      R"({"model": "mlp", "points": [{"batch": 1, "median_us": 100, "spread": 0.1}]})");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->points()[0].run_quantiles.empty());
  EXPECT_DOUBLE_EQ(m->jitter_factor(1, 0.0), 0.9);  // uniform over +-spread
  EXPECT_TRUE(m->unsettled().empty());
  EXPECT_TRUE(
      CostModel::from_profile_json(R"({"version": 1, "points": [{"batch": 1, "median_us": 100}]})")
          .ok());
}

// Every value the reader refuses, in one table: the message names the field
// and quotes the value.
TEST(CostFormatTest, ANewerVersionAnotherFormatOrAValueOutOfRangeIsRefusedByName) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"version": 4, "points": []})",
       "profile JSON: version = 4 is newer than this batchscope reads (1 to 3); update "
       "batchscope or profile the model again"},
      {R"({"points": [{"batch": 1, "median_us": 1, "batches": -2}]})",
       "points[0].batches = -2 must be a whole number from 0 to 1e15"},
      {R"({"points": [{"batch": 1, "median_us": 1, "batches": 1.5}]})",
       "points[0].batches = 1.5 must be a whole number"},
      {R"({"points": [{"batch": 1, "median_us": 1, "measured_at": 7}]})",
       "points[0].measured_at = 7 must be a date as text (UTC, ISO 8601)"},
      {R"({"version": "2", "points": []})", "version = \"2\" must be a whole number from 1"},
      {R"({"version": 0, "points": []})", "version = 0 must be a whole number from 1"},
      {R"({"format": "triton", "points": []})",
       "format = \"triton\" is not a cost file's (\"batchscope-cost\")"},
      {R"({"points": [{"batch": 1, "median_us": 1, "run_quantiles": [1, 0.5]}]})",
       "points[0].run_quantiles[1] = 0.5 is below points[0].run_quantiles[0] = 1"},
      {R"({"points": [{"batch": 1, "median_us": 1, "run_quantiles": [2]}]})",
       "points[0].run_quantiles holds 1 values; it must hold 2 to 1025"},
      {R"({"points": [{"batch": 1, "median_us": 1, "run_quantiles": [1, "x"]}]})",
       "points[0].run_quantiles[1] = \"x\" must be a number"},
      {R"({"points": [{"batch": 1, "median_us": 1, "run_quantiles": [1, 1e7]}]})",
       "points[0].run_quantiles[1] = 1e+07 must be from 0 to 1e+06"},
      {R"({"points": [{"batch": 1, "median_us": 1, "settled": "no"}]})",
       "points[0].settled = \"no\" must be true or false"},
      {R"({"points": [{"batch": 1, "median_us": 1}], "jitter_streak": {"weight": 2, "rho": 0.5}})",
       "jitter_streak = {\"rho\":0.5,\"weight\":2} must be"},
      {R"({"points": [{"batch": 1, "median_us": 1}], "jitter_streak": {"weight": 1, "rho": 0.5, "sigma": -1}})",
       "jitter_streak.sigma = -1 must be"},
      {R"({"points": [{"batch": 1, "median_us": 1}], "turnaround": {"fixed_us": -1, "per_answer_us": 2}})",
       "turnaround = {\"fixed_us\":-1,\"per_answer_us\":2} must be"},
  };
  for (const Case& c : cases) {
    auto m = CostModel::from_profile_json(c.json);
    ASSERT_FALSE(m.ok()) << c.json;
    EXPECT_NE(m.error().message.find(c.message), std::string::npos)
        << c.json << "\n  said: " << m.error().message;
  }
}

TEST(CostFormatTest, JitterFollowsTheQuantilesAndInterpolatesBetweenSizes) {
  // b = 2: quantiles 0.5, 1, 3 at u = 0, 0.5, 1; b = 4: uniform +-0.2.
  const CostModel m = points({{2, 100, 0.3, {0.5, 1.0, 3.0}}, {4, 200, 0.2}});
  EXPECT_TRUE(m.has_jitter());
  EXPECT_DOUBLE_EQ(m.jitter_factor(2, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(m.jitter_factor(2, 0.25), 0.75);
  EXPECT_DOUBLE_EQ(m.jitter_factor(2, 0.75), 2.0);
  EXPECT_DOUBLE_EQ(m.jitter_factor(1, 1.0), 3.0);  // held below the first size
  EXPECT_DOUBLE_EQ(m.jitter_factor(4, 1.0), 1.2);
  EXPECT_DOUBLE_EQ(m.jitter_factor(9, 0.0), 0.8);  // held beyond the last
  // b = 3, halfway: u = 1 gives (3 + 1.2) / 2, u = 0 gives (0.5 + 0.8) / 2.
  EXPECT_DOUBLE_EQ(m.jitter_factor(3, 1.0), 2.1);
  EXPECT_DOUBLE_EQ(m.jitter_factor(3, 0.0), 0.65);
  // Uniform again: the quantiles dropped, the spread kept.
  const CostModel uniform = m.uniform_jitter();
  EXPECT_DOUBLE_EQ(uniform.jitter_factor(2, 0.0), 0.7);
  EXPECT_DOUBLE_EQ(uniform.jitter_factor(2, 1.0), 1.3);
  EXPECT_TRUE(uniform.points()[0].run_quantiles.empty());
  // Flat quantiles are no jitter.
  EXPECT_FALSE(points({{1, 100, 0, {1.0, 1.0}}}).has_jitter());
}

TEST(CostFormatTest, ALiveRunKeepsEachSizesQuantiles) {
  std::vector<BatchRecord> batches;
  const TimePoint t0(std::chrono::seconds(5));
  // Size 4: 100..900 us in steps of 100 (median 500); the quantiles are
  // those times over the median.
  for (int us = 900; us >= 100; us -= 100) {
    BatchRecord b;
    b.size = 4;
    b.run_start = t0;
    b.run_end = t0 + microseconds(us);
    batches.push_back(b);
  }
  auto m = CostModel::from_batches(batches);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<double>& q = m->points()[0].run_quantiles;
  ASSERT_EQ(q.size(), 65u);
  EXPECT_DOUBLE_EQ(q.front(), 0.2);
  EXPECT_DOUBLE_EQ(q[32], 1.0);
  EXPECT_DOUBLE_EQ(q.back(), 1.8);
  EXPECT_DOUBLE_EQ(q[8], (100 + 8.0 * 100 / 8) / 500);  // rank 1 of 0..8: 200 us
}

TEST(CostFormatTest, ALiveRunMeasuresHowSlowBatchesComeInStreaks) {
  // 200 batches of size 4 that alternate 40 slow (1.5x) and 40 fast (0.5x):
  // the log ratios correlate strongly at lag 1 and less at lag 10. The same
  // times shuffled apart (slow, fast, slow, ...) correlate negatively: none.
  const TimePoint t0(std::chrono::seconds(1));
  auto batches_of = [&](auto slow_at) {
    std::vector<BatchRecord> out;
    for (int i = 0; i < 200; ++i) {
      BatchRecord b;
      b.id = static_cast<uint64_t>(i + 1);
      b.size = 4;
      b.run_start = t0 + microseconds(1000 * i);
      b.run_end = b.run_start + microseconds(slow_at(i) ? 150 : 50);
      out.push_back(b);
    }
    return out;
  };
  auto streaky = CostModel::from_batches(batches_of([](int i) { return (i / 40) % 2 == 0; }));
  ASSERT_TRUE(streaky.ok()) << streaky.error().message;
  const JitterStreak k = streaky->streak();
  // Square wave of period 80: corr(1) = 1 - 2/40 (about 0.95), corr(10) =
  // 1 - 20/40 = 0.5; rho = (0.5 / 0.95)^(1/9), weight = corr(1) / rho.
  EXPECT_NEAR(k.rho, std::pow(0.5 / 0.95, 1.0 / 9), 0.03);
  EXPECT_NEAR(k.weight * k.rho, 0.95, 0.03);
  auto apart = CostModel::from_batches(batches_of([](int i) { return i % 2 == 0; }));
  ASSERT_TRUE(apart.ok());
  EXPECT_EQ(apart->streak(), JitterStreak{});
  // It is written and read back (refused out of range: the table above).
  const std::string json = streaky->to_json();
  auto back = CostModel::from_profile_json(json);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->streak(), k);
  // Calibration takes a measured streak for its lane count, and keeps the
  // model's otherwise.
  EXPECT_EQ(points({{4, 100}}).calibrated(*streaky).streak(), k);
  EXPECT_EQ(streaky->calibrated(points({{4, 100}})).streak(), k);
  const CostModel two = points({{4, 100}}).calibrated(*streaky, 2);
  EXPECT_EQ(two.streak(1), JitterStreak{});
  EXPECT_EQ(two.streak(2), k);
  EXPECT_EQ(two.streak(3), k);
  auto two_back = CostModel::from_profile_json(two.to_json());
  ASSERT_TRUE(two_back.ok()) << two_back.error().message;
  EXPECT_EQ(two_back->streak(2), k);
  // Drawn apart, the slow state keeps its spread and loses its memory.
  EXPECT_EQ(two.independent_jitter().streak(2), (JitterStreak{1, 0, k.sigma}));
  EXPECT_EQ(points({{4, 100}}).independent_jitter().streak(), JitterStreak{});
}

TEST(CostFormatTest, ALiveRunMeasuresTheLanesTurnaround) {
  // One lane; batches of 2 and 6 that each start 10 us + 20 us per request
  // of the batch before after it ended, their oldest request having waited.
  // Every fifth batch found the queue empty and started 5 ms later: the
  // lane waited for work, not answered, so it is left out.
  const TimePoint t0(std::chrono::seconds(1));
  std::vector<BatchRecord> batches;
  TimePoint end = t0;
  for (int i = 0; i < 100; ++i) {
    BatchRecord b;
    b.id = static_cast<uint64_t>(i + 1);
    b.size = i % 2 ? 6 : 2;
    const bool idle = i % 5 == 4;
    const uint32_t before = batches.empty() ? 0 : batches.back().size;
    b.run_start = end + microseconds(idle ? 5000 : 10 + 20 * before);
    b.oldest_arrival = idle ? b.run_start - microseconds(1) : end - microseconds(100);
    b.run_end = b.run_start + microseconds(b.size * 100);
    end = b.run_end;
    batches.push_back(b);
  }
  auto m = CostModel::from_batches(batches);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_NEAR(m->turnaround().fixed_us, 10, 1e-6);
  EXPECT_NEAR(m->turnaround().per_answer_us, 20, 1e-6);
  EXPECT_DOUBLE_EQ(m->turnaround().us(4), 90);
  // Written, read back, taken by calibration for its lane count.
  auto back = CostModel::from_profile_json(m->to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->turnaround(), m->turnaround());
  EXPECT_EQ(points({{2, 100}}).calibrated(*m).turnaround(), m->turnaround());
  const CostModel two = points({{2, 100}}).calibrated(*m, 2);
  EXPECT_EQ(two.turnaround(1), Turnaround{});
  EXPECT_EQ(two.turnaround(2), m->turnaround());
  auto two_back = CostModel::from_profile_json(two.to_json());
  ASSERT_TRUE(two_back.ok()) << two_back.error().message;
  EXPECT_EQ(two_back->turnaround(3), m->turnaround());
  // Too few gaps measure nothing.
  auto few = CostModel::from_batches(std::span(batches).first(10));
  ASSERT_TRUE(few.ok());
  EXPECT_EQ(few->turnaround(), Turnaround{});
}

TEST(CostFormatTest, ASlowStateTheSizesFollowIsDividedOutOfTB) {
  // t(2) = 100 us and t(4) = 200 us, every run +-5% about that, on a machine
  // that is 1.5x slower for 50 batches, then as fast for 50, and so on.
  // Slow stretches queue more: there 60% of the batches are 4 (40% when
  // fast). Each size's own median reads t(4) = 300 (the slow 60%), t(2) =
  // 100 (the fast 60%): a ratio of 3. Dividing the state out gives 2.
  const TimePoint t0(std::chrono::seconds(1));
  std::vector<BatchRecord> batches;
  for (int i = 0; i < 1000; ++i) {
    const bool slow = (i / 50) % 2 == 1;
    const bool big = slow ? i % 5 < 3 : i % 5 >= 3;
    const double noise = 1.0 + 0.05 * std::sin(i * 2.399);  // deterministic, in +-5%
    BatchRecord b;
    b.id = static_cast<uint64_t>(i + 1);
    b.size = big ? 4 : 2;
    b.run_start = t0 + microseconds(1000 * i);
    b.run_end =
        b.run_start + microseconds(std::llround((big ? 200 : 100) * (slow ? 1.5 : 1.0) * noise));
    batches.push_back(b);
  }
  auto m = CostModel::from_batches(batches);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const double ratio = m->cost_us(4) / m->cost_us(2);
  EXPECT_NEAR(ratio, 2.0, 0.2) << m->cost_us(2) << " " << m->cost_us(4);
  // The state is kept apart: about log(1.5) / 2 = 0.2 either way of its
  // middle, and lasting.
  const JitterStreak k = m->streak();
  EXPECT_GT(k.sigma, 0.12);
  EXPECT_LT(k.sigma, 0.25);
  EXPECT_GT(k.rho, 0.8);
  // Each size's jitter is what is left: within the +-5% and the error of
  // the state's estimate at the stretches' edges, not the 1.5x between them.
  const auto& q = m->points().front().run_quantiles;
  ASSERT_EQ(q.size(), 65u);
  EXPECT_GT(q[6], 0.85);   // p10
  EXPECT_LT(q[58], 1.15);  // p90
}

}  // namespace
}  // namespace batchscope

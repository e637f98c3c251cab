// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for t(b, L): the length grid's reading, its JSON in a cost file, and
// a live run's t(b) read back at the reference length.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/tuning/cost_points.h"
#include "tuning/cost_model.h"
#include "tuning/length_grid.h"

namespace batchscope {
namespace {

using std::chrono::microseconds;

// t(b, L) = 100 b + L b: at b = 1, 116 us at 16 and 164 at 64.
LengthGrid grid() {
  LengthGrid g;
  g.reference = 16;
  g.batches = {1, 4};
  g.lengths = {16, 32, 64};
  for (uint32_t b : g.batches) {
    for (uint32_t l : g.lengths) g.median_us.push_back(100.0 * b + double(l) * b);
  }
  return g;
}

TEST(LengthGrid, AddsNothingAtTheReferenceAndWhatTheLengthAddsElsewhere) {
  const LengthGrid g = grid();
  ASSERT_TRUE(g.validate().ok());
  EXPECT_DOUBLE_EQ(g.extra_us(1, 16), 0.0);
  EXPECT_DOUBLE_EQ(g.extra_us(4, 16), 0.0);
  EXPECT_DOUBLE_EQ(g.extra_us(1, 64), 48.0);
  EXPECT_DOUBLE_EQ(g.extra_us(4, 64), 192.0);
  EXPECT_DOUBLE_EQ(g.extra_us(1, 48), 32.0);  // between 32 and 64
  // Beyond the longest: along the last two lengths' line.
  EXPECT_DOUBLE_EQ(g.us(1, 128), 228.0);
  // Below the shortest: held there.
  EXPECT_DOUBLE_EQ(g.extra_us(1, 4), 0.0);
  // Sizes outside the grid are held at the nearest; b = 2 is half way in log2.
  EXPECT_DOUBLE_EQ(g.us(8, 64), g.us(4, 64));
  EXPECT_DOUBLE_EQ(g.us(2, 16), (116.0 + 464.0) / 2);
  // No length, or no grid: nothing.
  EXPECT_DOUBLE_EQ(g.extra_us(4, 0), 0.0);
  EXPECT_DOUBLE_EQ(LengthGrid{}.extra_us(4, 64), 0.0);
}

TEST(LengthGrid, RefusesABadGridNamingTheField) {
  LengthGrid g = grid();
  g.lengths = {16, 64, 32};
  EXPECT_NE(g.validate().message().find("length_grid.lengths[2] = 32 must be above 64"),
            std::string::npos)
      << g.validate().message();
  g = grid();
  g.reference = 20;
  EXPECT_NE(g.validate().message().find("reference = 20"), std::string::npos);
  g = grid();
  g.median_us.pop_back();
  EXPECT_NE(g.validate().message().find("median_us holds 5 values"), std::string::npos);
  g = grid();
  g.median_us[1] = -1;
  EXPECT_NE(g.validate().message().find("median_us[0][1] = -1"), std::string::npos);
}

TEST(LengthGrid, RoundTripsThroughACostFile) {
  auto m = test::linear(100, 10).with_length_grid(grid());
  ASSERT_TRUE(m.ok());
  auto back = CostModel::from_profile_json(m->to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->length_grid(), grid());
  EXPECT_DOUBLE_EQ(back->length_extra_us(1, 64), 48.0);
  // A cost file without one reads as before: no grid.
  auto plain = CostModel::from_profile_json(test::linear(100, 10).to_json());
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->length_grid().empty());
}

TEST(LengthGrid, ABadGridInACostFileIsNamed) {
  const std::string json =
      R"({"points":[{"batch":1,"median_us":10}],"length_grid":{"reference":16,"batches":[1],)"
      R"("lengths":[16,32],"median_us":[[10,"x"]]}})";
  auto m = CostModel::from_profile_json(json);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("length_grid.median_us[0][1] = \"x\" must be a number"),
            std::string::npos)
      << m.error().message;
  auto rows = CostModel::from_profile_json(
      R"({"points":[{"batch":1,"median_us":10}],"length_grid":{"reference":16,"batches":[1,2],)"
      R"("lengths":[16],"median_us":[[10]]}})");
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.error().message.find("must hold 2 rows"), std::string::npos)
      << rows.error().message;
}

// A run of batches of 1 and 4 at lengths 16 and 64, each running its grid
// time t(b, L) exactly.
RunData run_at_lengths() {
  const LengthGrid g = grid();
  RunData run;
  run.start = TimePoint(std::chrono::seconds(1000));
  TimePoint t = run.start;
  uint64_t id = 1;
  for (int k = 0; k < 40; ++k) {
    for (uint32_t b : {1u, 4u}) {
      const uint32_t longest = k % 2 ? 64 : 16;
      BatchRecord r;
      r.id = id++;
      r.size = b;
      r.longest = longest;
      r.length_sum = uint64_t{longest} * b;
      r.oldest_arrival = r.batched = r.run_start = t;
      r.run_end = t + microseconds(static_cast<int64_t>(g.us(b, longest)));
      run.batches.push_back(r);
      t = r.run_end + microseconds(10);
    }
  }
  return run;
}

TEST(LengthGrid, ALiveRunIsReadAtTheReferenceLength) {
  const RunData run = run_at_lengths();
  auto m = CostModel::from_run(run, 5, 1, grid());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_NEAR(m->cost_us(1), 116.0, 0.5);
  EXPECT_NEAR(m->cost_us(4), 464.0, 0.5);
  EXPECT_EQ(m->length_grid(), grid());
  // Without a grid its t(b) would mix lengths: refused, saying why.
  auto refused = CostModel::from_run(run, 5, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("vary in length"), std::string::npos);
  // The run's own times are kept: only the starts move.
  const std::vector<BatchRecord> scaled = at_reference_length(run.batches, grid());
  ASSERT_EQ(scaled.size(), run.batches.size());
  EXPECT_EQ(scaled[2].run_end, run.batches[2].run_end);
  EXPECT_GT(scaled[2].run_start, run.batches[2].run_start);  // length 64: shortened
  EXPECT_EQ(scaled[0].run_start, run.batches[0].run_start);  // length 16: as it ran
}

}  // namespace
}  // namespace batchscope

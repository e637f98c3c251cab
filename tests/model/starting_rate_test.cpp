// SPDX-License-Identifier: GPL-3.0-or-later
// The rate a window starts a model's traffic at: half of what its load
// measured it can serve, worked out by hand for lanes alone, a preprocess
// pool and preparing in the lanes.

#include <gtest/gtest.h>

#include "model/model_load.h"

namespace batchscope {
namespace {

// t(1) = 1 ms, t(8) = 2 ms, t(64) = 8 ms: a lane's best is 8,000 items/s at
// b = 64, 4,000 at b = 8.
LoadedModel measured() {
  LoadedModel m;
  m.profile = {{1, 1000}, {8, 2000}, {64, 8000}};
  return m;
}

TEST(StartingRate, HalfTheLanesBestUpToTheLargestBatchAtMostTheCeiling) {
  Options o;
  o.max_batch_size = 64;
  o.num_lanes = 1;
  EXPECT_DOUBLE_EQ(starting_rate(measured(), o, 1500), 1500);
  EXPECT_DOUBLE_EQ(starting_rate(measured(), o, 1e6), 4000);
  o.max_batch_size = 8;  // batches of 64 are not cut
  EXPECT_DOUBLE_EQ(starting_rate(measured(), o, 1e6), 2000);
  o.num_lanes = 3;
  EXPECT_DOUBLE_EQ(starting_rate(measured(), o, 1e6), 6000);
}

TEST(StartingRate, APreprocessPoolOrTheLanesPreparingBoundIt) {
  LoadedModel m = measured();
  m.preprocess_us = 8000;  // 125 requests/s a process
  Options o;
  o.max_batch_size = 64;
  o.num_lanes = 1;
  o.preprocess_workers = 2;
  EXPECT_DOUBLE_EQ(starting_rate(m, o, 1500), 120);  // half of 250, two digits
  o.preprocess_workers = 0;  // a lane prepares each request: 1e6 / (125 + 8000) µs
  EXPECT_DOUBLE_EQ(starting_rate(m, o, 1500), 61);
}

TEST(StartingRate, ASlowModelStartsAtAWholeRateOfAtLeastOne) {
  LoadedModel m;
  m.profile = {{1, 150'000}};  // 6.7 requests a second
  Options o;
  EXPECT_DOUBLE_EQ(starting_rate(m, o, 1500), 3);
  m.profile = {{1, 5e6}};  // one every 5 s
  EXPECT_DOUBLE_EQ(starting_rate(m, o, 1500), 1);
}

TEST(StartingRate, NothingMeasuredKeepsTheCeiling) {
  EXPECT_DOUBLE_EQ(starting_rate(LoadedModel{}, Options{}, 1500), 1500);
  LoadedModel m;
  m.preprocess_us = 8000;  // a pool measured but no t(b): nothing to bound
  EXPECT_DOUBLE_EQ(starting_rate(m, Options{}, 1500), 1500);
}

}  // namespace
}  // namespace batchscope

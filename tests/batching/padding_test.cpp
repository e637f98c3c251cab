// SPDX-License-Identifier: GPL-3.0-or-later
// The padding policies on a manual clock, with requests of varying length:
// which requests each batch takes (longest, buckets, sorted), each bucket's
// own wait, draining, a live switch, and what each batch records of its
// lengths. Requests are told apart by their first value.

#include <gtest/gtest.h>

#include "tests/batching/test_support.h"

namespace batchscope::test {
namespace {

using std::chrono::microseconds;

ModelMetadata varied_model() {
  ModelMetadata m;
  m.name = "varied";
  m.max_batch_size = 64;
  m.inputs = {TensorSpec{"x", DType::kFloat32, {-1, -1}, false}};
  m.outputs = {TensorSpec{"y", DType::kFloat32, {-1, -1}, false}};
  return m;
}

class PaddingTest : public ::testing::Test {
 protected:
  void start(Options o, bool lengths = true) {
    engine_ = std::make_unique<Engine>(TestRunner::factory(control_), o, clock_);
    if (lengths) bind_model(*engine_, varied_model());
    ASSERT_TRUE(engine_->start().ok());
    settle(*engine_);
  }
  // Request `v` of length `len`.
  void submit(float v, int len) {
    auto id = engine_->submit(input_of(v, len), got_.callback());
    ASSERT_TRUE(id.ok()) << id.error().message;
  }
  std::vector<std::vector<float>> log() { return control_->log.snapshot(); }
  std::vector<BatchRecord> batches() {
    RecordBatch r;
    engine_->drain_records(r);
    return r.batches;
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::shared_ptr<TestRunner::Control> control_ = std::make_shared<TestRunner::Control>();
  Collector got_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(PaddingTest, LongestCutsInArrivalOrderAndRecordsTheLengths) {
  start(Options{.max_batch_size = 3, .max_wait_us = 1000});
  submit(0, 2);
  submit(1, 7);
  submit(2, 3);  // full: cut at once
  settle(*engine_);
  ASSERT_EQ(log().size(), 1u);
  EXPECT_EQ(log()[0], (std::vector<float>{0, 1, 2}));
  ASSERT_TRUE(got_.wait_for(3));
  const auto b = batches();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].longest, 7u);
  EXPECT_EQ(b[0].length_sum, 12u);
  EXPECT_NEAR(padding_waste(b[0]), 1.0 - 12.0 / 21.0, 1e-12);
  EXPECT_EQ(got_.at(2).result.value()[0].shape(), Shape{7});  // a request's own shape back
}

TEST_F(PaddingTest, BucketsNeverMixAndEachWaitsOnItsOwn) {
  Options o{.max_batch_size = 3, .max_wait_us = 1000, .padding = Padding::kBuckets};
  ASSERT_TRUE(parse_length_buckets("4,8", o).ok());
  start(o);
  const TimePoint t0 = clock_->now();
  submit(0, 2);
  submit(1, 6);
  submit(2, 3);
  submit(3, 7);
  submit(4, 1);   // the third of bucket <= 4: a full batch there, at once
  submit(5, 10);  // beyond the last bucket: one of its own
  settle(*engine_);
  ASSERT_EQ(log().size(), 1u);
  EXPECT_EQ(log()[0], (std::vector<float>{0, 2, 4}));
  // The other buckets wait for their own oldest's max_wait, not a batch's.
  EXPECT_TRUE(clock_->await_parked(t0 + microseconds(1000)));
  clock_->advance(microseconds(999));
  settle(*engine_);
  EXPECT_EQ(log().size(), 1u);
  clock_->advance(microseconds(1));
  settle(*engine_);
  ASSERT_EQ(log().size(), 3u);
  EXPECT_EQ(log()[1], (std::vector<float>{1, 3}));
  EXPECT_EQ(log()[2], (std::vector<float>{5}));
  ASSERT_TRUE(got_.wait_for(6));
  const auto b = batches();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].longest, 3u);
  EXPECT_EQ(b[1].longest, 7u);
  EXPECT_EQ(b[1].length_sum, 13u);
  EXPECT_EQ(b[1].reason, BatchReason::kTimeout);
  EXPECT_EQ(b[2].longest, 10u);
}

TEST_F(PaddingTest, ABucketFillingWakesTheLeaderWhileOthersWait) {
  Options o{.max_batch_size = 2, .max_wait_us = 5000, .padding = Padding::kBuckets};
  ASSERT_TRUE(parse_length_buckets("4", o).ok());
  start(o);
  submit(0, 9);  // bucket beyond: waits
  settle(*engine_);
  submit(1, 2);
  settle(*engine_);
  EXPECT_EQ(log().size(), 0u);
  submit(2, 3);  // bucket <= 4 holds two: full, though the queue held three
  settle(*engine_);
  ASSERT_EQ(log().size(), 1u);
  EXPECT_EQ(log()[0], (std::vector<float>{1, 2}));
}

TEST_F(PaddingTest, SortedTakesTheOldestAndThoseNearestItsLength) {
  control_->hold = true;
  start(Options{.max_batch_size = 3, .max_wait_us = 0, .padding = Padding::kSorted});
  submit(100, 1);  // takes the lane, which the test holds
  ASSERT_TRUE(control_->await_entered(1));
  submit(0, 10);
  submit(1, 2);
  submit(2, 9);
  submit(3, 3);
  submit(4, 11);
  control_->release(100);
  ASSERT_TRUE(got_.wait_for(6));
  settle(*engine_);
  const auto l = log();
  ASSERT_EQ(l.size(), 3u);
  // The oldest (10), then 9 and 11 (one away each; the older first).
  EXPECT_EQ(l[1], (std::vector<float>{0, 2, 4}));
  EXPECT_EQ(l[2], (std::vector<float>{1, 3}));
}

TEST_F(PaddingTest, WithoutLengthsEveryPolicyIsFirstComeFirstServed) {
  control_->hold = true;
  start(Options{.max_batch_size = 2, .max_wait_us = 0, .padding = Padding::kSorted},
        /*lengths=*/false);
  submit(100, 1);
  ASSERT_TRUE(control_->await_entered(1));
  submit(0, 10);
  submit(1, 2);
  submit(2, 9);
  control_->release(100);
  ASSERT_TRUE(got_.wait_for(4));
  settle(*engine_);
  EXPECT_EQ(log()[1], (std::vector<float>{0, 1}));
  for (const BatchRecord& b : batches()) EXPECT_EQ(b.longest, 0u);
}

TEST_F(PaddingTest, DrainingKeepsBucketsApartAndASwitchAppliesLive) {
  Options o{.max_batch_size = 8, .max_wait_us = 1'000'000};
  start(o);
  submit(0, 2);
  submit(1, 20);
  settle(*engine_);
  o.padding = Padding::kBuckets;  // 32, 64, ...: both in the first bucket
  ASSERT_TRUE(parse_length_buckets("4,64", o).ok());
  ASSERT_TRUE(engine_->set_options(o).ok());
  settle(*engine_);
  submit(2, 3);
  submit(3, 30);
  settle(*engine_);
  EXPECT_EQ(log().size(), 0u);
  engine_->stop(StopMode::kDrain);
  ASSERT_TRUE(got_.wait_for(4));
  const auto l = log();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0], (std::vector<float>{0, 2}));
  EXPECT_EQ(l[1], (std::vector<float>{1, 3}));
}

}  // namespace
}  // namespace batchscope::test

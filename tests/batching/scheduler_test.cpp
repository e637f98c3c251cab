// SPDX-License-Identifier: GPL-3.0-or-later
// The scheduler on a manual clock: deadlines, full batches, retuning, late
// binding, timeouts, cancellation, errors and shutdown. No test sleeps to show
// that something did not happen: it waits until the engine is parked, then
// checks, then moves time.

#include <gtest/gtest.h>

#include "tests/batching/test_support.h"

namespace batchscope::test {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

class SchedulerTest : public ::testing::Test {
 protected:
  void start(Options o) {
    engine_ = std::make_unique<Engine>(TestRunner::factory(control_), o, clock_);
    ASSERT_TRUE(engine_->start().ok());
    settle(*engine_);
  }
  RequestId submit(float v, SubmitOptions so = {}) {
    auto id = engine_->submit(input_of(v), got_.callback(), so);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
    return id.ok() ? *id : 0;
  }
  size_t batches() { return control_->log.snapshot().size(); }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::shared_ptr<TestRunner::Control> control_ = std::make_shared<TestRunner::Control>();
  Collector got_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(SchedulerTest, WaitsExactlyMaxWaitThenDispatchesWhatIsQueued) {
  start(Options{.max_batch_size = 8, .max_wait_us = 2000});
  const TimePoint t0 = clock_->now();
  submit(1);
  settle(*engine_);
  EXPECT_TRUE(clock_->await_parked(t0 + microseconds(2000)));
  clock_->advance(microseconds(1000));
  submit(2);
  settle(*engine_);
  clock_->advance(microseconds(999));  // one microsecond before the deadline
  settle(*engine_);
  EXPECT_EQ(batches(), 0u);
  clock_->advance(microseconds(1));  // exactly at the deadline
  settle(*engine_);
  ASSERT_EQ(batches(), 1u);
  EXPECT_EQ(control_->log.snapshot()[0], (std::vector<float>{1, 2}));
  ASSERT_TRUE(got_.wait_for(2));
  EXPECT_EQ(got_.at(1).batch_size, 2u);
  EXPECT_EQ(got_.at(1).times.batched, t0 + microseconds(2000));
  EXPECT_EQ(engine_->status().counters.batches_by_reason[int(BatchReason::kTimeout)], 1u);
}

TEST_F(SchedulerTest, FullBatchNeverWaitsForTheTimer) {
  start(Options{.max_batch_size = 4, .max_wait_us = 1'000'000});
  for (int i = 0; i < 4; ++i) submit(float(i));
  settle(*engine_);  // the clock has not moved at all
  ASSERT_EQ(batches(), 1u);
  EXPECT_EQ(control_->log.snapshot()[0].size(), 4u);
  EXPECT_EQ(engine_->status().counters.batches_by_reason[int(BatchReason::kFull)], 1u);
}

TEST_F(SchedulerTest, LongQueueIsCutIntoFullBatchesInOrder) {
  Options o{.max_batch_size = 3, .max_wait_us = 1000};
  control_->hold = true;
  start(o);
  for (int i = 0; i < 8; ++i) submit(float(i));
  // The first batch took 3; the rest queue behind the held lane.
  ASSERT_TRUE(control_->await_entered(1));
  control_->release(100);
  ASSERT_TRUE(control_->await_entered(2));
  clock_->advance(microseconds(1000));  // the leftover pair's deadline
  settle(*engine_);
  auto log = control_->log.snapshot();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0], (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(log[1], (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(log[2], (std::vector<float>{6, 7}));
}

TEST_F(SchedulerTest, ZeroWaitDispatchesAtOnce) {
  start(Options{.max_batch_size = 8, .max_wait_us = 0});
  submit(1);
  settle(*engine_);
  EXPECT_EQ(batches(), 1u);
}

TEST_F(SchedulerTest, RetuningRecomputesAPendingDeadlineAtOnce) {
  start(Options{.max_batch_size = 8, .max_wait_us = 10'000});
  const TimePoint t0 = clock_->now();
  submit(1);
  settle(*engine_);
  EXPECT_TRUE(clock_->await_parked(t0 + microseconds(10'000)));
  const uint64_t v0 = engine_->status().options_version;
  ASSERT_TRUE(engine_->set_options(Options{.max_batch_size = 8, .max_wait_us = 3000}).ok());
  settle(*engine_);
  EXPECT_TRUE(clock_->await_parked(t0 + microseconds(3000)));
  EXPECT_EQ(engine_->status().options_version, v0 + 1);
  EXPECT_EQ(engine_->status().options.max_wait_us, 3000);
  clock_->advance(microseconds(3000));
  settle(*engine_);
  EXPECT_EQ(batches(), 1u);
}

TEST_F(SchedulerTest, LoweringMaxBatchSizeCutsAFullBatchAtOnce) {
  start(Options{.max_batch_size = 16, .max_wait_us = 10'000});
  for (int i = 0; i < 5; ++i) submit(float(i));
  settle(*engine_);
  EXPECT_EQ(batches(), 0u);
  ASSERT_TRUE(engine_->set_options(Options{.max_batch_size = 2, .max_wait_us = 10'000}).ok());
  settle(*engine_);
  auto log = control_->log.snapshot();
  ASSERT_EQ(log.size(), 2u);  // two full pairs; the fifth waits for its deadline
  EXPECT_EQ(log[0].size(), 2u);
  EXPECT_EQ(log[1].size(), 2u);
}

TEST_F(SchedulerTest, InvalidOptionsAreRefusedAndTheOldOnesStay) {
  start(Options{});
  Status s = engine_->set_options(Options{.max_batch_size = 0});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("max_batch_size"), std::string::npos);
  EXPECT_EQ(engine_->status().options, Options{});
  EXPECT_EQ(engine_->status().options_version, 1u);
}

TEST_F(SchedulerTest, DeadlinePassingWhileTheLaneIsBusyCutsWhenItFrees) {
  control_->hold = true;
  start(Options{.max_batch_size = 8, .max_wait_us = 1000});
  submit(0);
  clock_->advance(microseconds(1000));
  ASSERT_TRUE(control_->await_entered(1));  // lane busy with [0]
  for (int i = 1; i <= 5; ++i) submit(float(i));
  clock_->advance(microseconds(5000));  // their deadline passes; no lane free
  EXPECT_EQ(control_->entered_count(), 1);
  control_->release(2);
  ASSERT_TRUE(control_->await_entered(2));
  auto log = control_->log.snapshot();
  EXPECT_EQ(log[1], (std::vector<float>{1, 2, 3, 4, 5}));  // grew while waiting
  settle(*engine_);
}

TEST_F(SchedulerTest, RequestTimingOutInTheQueueNeverReachesTheModel) {
  control_->hold = true;
  start(Options{.max_batch_size = 8, .max_wait_us = 0, .request_timeout_ms = 5});
  submit(0);
  ASSERT_TRUE(control_->await_entered(1));
  const RequestId late = submit(1);
  clock_->advance(milliseconds(5));
  ASSERT_TRUE(got_.wait_for(1));
  ASSERT_TRUE(got_.has(late));
  EXPECT_EQ(got_.at(late).result.error().code, ErrorCode::kTimedOut);
  EXPECT_NE(got_.at(late).result.error().message.find("timed out"), std::string::npos);
  control_->release(1);
  ASSERT_TRUE(got_.wait_for(2));
  settle(*engine_);
  ASSERT_EQ(batches(), 1u);  // only [0] ever ran
  EXPECT_EQ(engine_->status().counters.timed_out, 1u);
}

TEST_F(SchedulerTest, AnEarlierPerRequestDeadlineIsArmed) {
  start(Options{.max_batch_size = 8, .max_wait_us = 1'000'000});
  submit(0);
  settle(*engine_);
  const TimePoint soon = clock_->now() + microseconds(300);
  const RequestId id = submit(1, SubmitOptions{soon});
  settle(*engine_);
  EXPECT_TRUE(clock_->await_parked(soon));
  clock_->advance(microseconds(300));
  ASSERT_TRUE(got_.wait_for(1));
  EXPECT_EQ(got_.at(id).result.error().code, ErrorCode::kTimedOut);
}

// Deadlines out of queue order (an earlier per-request deadline, a shorter
// timeout after a retune) expire alone and in time order, before and after
// the queue empties; the rest run in FIFO order.
TEST_F(SchedulerTest, DeadlinesOutOfQueueOrderExpireAloneAndInTimeOrder) {
  control_->hold = true;
  start(Options{.max_batch_size = 8, .max_wait_us = 0, .request_timeout_ms = 100});
  submit(0);
  ASSERT_TRUE(control_->await_entered(1));  // the lane is busy; the rest queue
  const TimePoint t0 = clock_->now();
  const RequestId a = submit(1);
  const RequestId b = submit(2, SubmitOptions{t0 + microseconds(300)});
  const RequestId c = submit(3, SubmitOptions{t0 + microseconds(200)});
  const RequestId d = submit(4);
  clock_->advance(microseconds(200));
  ASSERT_TRUE(got_.wait_for(1));
  EXPECT_EQ(got_.at(c).result.error().code, ErrorCode::kTimedOut);
  EXPECT_FALSE(got_.has(b));
  clock_->advance(microseconds(100));
  ASSERT_TRUE(got_.wait_for(2));
  EXPECT_EQ(got_.at(b).result.error().code, ErrorCode::kTimedOut);
  control_->release(2);
  ASSERT_TRUE(got_.wait_for(5));
  EXPECT_TRUE(got_.at(a).result.ok());
  EXPECT_TRUE(got_.at(d).result.ok());
  EXPECT_EQ(control_->log.snapshot()[1], (std::vector<float>{1, 4}));

  // The queue emptied; again with a shorter timeout retuned in mid-queue.
  submit(5);
  ASSERT_TRUE(control_->await_entered(3));
  const TimePoint t1 = clock_->now();
  const RequestId e = submit(6);  // expires at t1 + 100 ms
  Options o = engine_->status().options;
  o.request_timeout_ms = 10;
  ASSERT_TRUE(engine_->set_options(o).ok());
  const RequestId f = submit(7);  // at t1 + 10 ms
  clock_->advance(milliseconds(10));
  ASSERT_TRUE(got_.wait_for(6));
  EXPECT_EQ(got_.at(f).result.error().code, ErrorCode::kTimedOut);
  EXPECT_FALSE(got_.has(e));
  clock_->advance(milliseconds(90));
  ASSERT_TRUE(got_.wait_for(7));
  EXPECT_EQ(got_.at(e).result.error().code, ErrorCode::kTimedOut);
  EXPECT_EQ(clock_->now(), t1 + milliseconds(100));
  control_->release(1);
  ASSERT_TRUE(got_.wait_for(8));
  settle(*engine_);
  EXPECT_EQ(batches(), 3u);
  EXPECT_EQ(engine_->status().counters.timed_out, 4u);
}

TEST_F(SchedulerTest, SubmitManyAdmitsWhatFitsInOrderAndAnswersTheRestAtOnce) {
  control_->hold = true;
  start(Options{.max_batch_size = 2, .max_wait_us = 0, .queue_capacity = 3});
  submit(0);
  ASSERT_TRUE(control_->await_entered(1));  // the lane is busy; the rest queue
  std::vector<Tensors> in;
  std::vector<Engine::Done> dones;
  for (int i = 1; i <= 5; ++i) {
    in.push_back(input_of(float(i)));
    dones.push_back(got_.callback());
  }
  EXPECT_EQ(engine_->submit_many(in, dones), (std::vector<RequestId>{2, 3, 4}));
  ASSERT_TRUE(got_.wait_for(2));  // the two beyond the capacity, at once
  ASSERT_EQ(got_.rejected().size(), 2u);
  EXPECT_EQ(got_.rejected()[0].code, ErrorCode::kQueueFull);
  EXPECT_EQ(engine_->status().queue_depth, 3u);
  control_->release(3);
  ASSERT_TRUE(got_.wait_for(6));
  for (RequestId id = 1; id <= 4; ++id) EXPECT_TRUE(got_.at(id).result.ok()) << id;
  const auto log = control_->log.snapshot();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[1], (std::vector<float>{1, 2}));  // consecutive, in input order
  EXPECT_EQ(log[2], (std::vector<float>{3}));

  // Counts that differ answer every callback and admit nothing.
  std::vector<Tensors> one;
  one.push_back(input_of(9));
  std::vector<Engine::Done> two;
  two.push_back(got_.callback());
  two.push_back(got_.callback());
  EXPECT_TRUE(engine_->submit_many(one, two).empty());
  ASSERT_EQ(got_.rejected().size(), 4u);
  EXPECT_EQ(got_.rejected()[3].code, ErrorCode::kInvalidArgument);
  EXPECT_NE(got_.rejected()[3].message.find("1 inputs and 2 callbacks"), std::string::npos);
  EXPECT_EQ(engine_->status().counters.admitted, 4u);
}

TEST_F(SchedulerTest, CancelFailsAQueuedRequestOnly) {
  control_->hold = true;
  start(Options{.max_batch_size = 8, .max_wait_us = 0});
  const RequestId running = submit(0);
  ASSERT_TRUE(control_->await_entered(1));
  const RequestId queued = submit(1);
  EXPECT_TRUE(engine_->cancel(queued));
  EXPECT_FALSE(engine_->cancel(queued));
  EXPECT_FALSE(engine_->cancel(running));
  EXPECT_FALSE(engine_->cancel(12345));
  EXPECT_EQ(got_.at(queued).result.error().code, ErrorCode::kCancelled);
  control_->release(1);
  ASSERT_TRUE(got_.wait_for(2));
  EXPECT_TRUE(got_.at(running).result.ok());
  settle(*engine_);
  EXPECT_EQ(batches(), 1u);
}

TEST_F(SchedulerTest, FullQueueRejectsAtOnceWithADistinctError) {
  control_->hold = true;
  start(Options{.max_batch_size = 1, .max_wait_us = 0, .queue_capacity = 2});
  submit(0);
  ASSERT_TRUE(control_->await_entered(1));
  submit(1);
  submit(2);
  auto r = engine_->submit(input_of(3), got_.callback());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kQueueFull);
  EXPECT_NE(r.error().message.find("queue_capacity 2"), std::string::npos);
  ASSERT_EQ(got_.rejected().size(), 1u);  // the callback ran once, too
  control_->release(10);
  ASSERT_TRUE(got_.wait_for(4));
  settle(*engine_);
  EXPECT_EQ(engine_->status().counters.rejected, 1u);
  EXPECT_EQ(engine_->status().counters.ok, 3u);
}

TEST_F(SchedulerTest, RunnerErrorFailsItsBatchAndServingGoesOn) {
  start(Options{.max_batch_size = 2, .max_wait_us = 0});
  control_->fail = true;
  const RequestId a = submit(1);
  ASSERT_TRUE(got_.wait_for(1));
  EXPECT_EQ(got_.at(a).result.error().code, ErrorCode::kModelError);
  EXPECT_EQ(got_.at(a).result.error().message, "test model failed");
  settle(*engine_);
  control_->fail = false;
  control_->throw_ = true;
  const RequestId b = submit(2);
  ASSERT_TRUE(got_.wait_for(2));
  EXPECT_NE(got_.at(b).result.error().message.find("boom"), std::string::npos);
  settle(*engine_);
  control_->throw_ = false;
  control_->wrong_count = 1;
  const RequestId c = submit(3);
  ASSERT_TRUE(got_.wait_for(3));
  EXPECT_NE(got_.at(c).result.error().message.find("2 outputs for a batch of 1"),
            std::string::npos);
  settle(*engine_);
  control_->wrong_count = 0;
  const RequestId d = submit(4);
  ASSERT_TRUE(got_.wait_for(4));
  ASSERT_TRUE(got_.at(d).result.ok());
  EXPECT_EQ(got_.at(d).result.value()[0], SyntheticRunner::expected_output(input_of(4)[0]));
  settle(*engine_);
  EXPECT_EQ(engine_->status().counters.failed_batches, 3u);
}

TEST_F(SchedulerTest, DrainingStopRunsEverythingAdmitted) {
  start(Options{.max_batch_size = 4, .max_wait_us = 1'000'000});
  for (int i = 0; i < 10; ++i) submit(float(i));
  settle(*engine_);
  engine_->stop(StopMode::kDrain);
  ASSERT_EQ(got_.size(), 10u);
  got_.for_each([](const TensorResponse& r) { EXPECT_TRUE(r.result.ok()); });
  const auto c = engine_->status().counters;
  EXPECT_EQ(c.ok, 10u);
  EXPECT_EQ(c.batches_by_reason[int(BatchReason::kFull)], 2u);
  EXPECT_EQ(c.batches_by_reason[int(BatchReason::kDrain)], 1u);
  auto late = engine_->submit(input_of(1), got_.callback());
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, ErrorCode::kShuttingDown);
}

TEST_F(SchedulerTest, FailingStopAnswersQueuedRequestsAndFinishesTheRunningBatch) {
  control_->hold = true;
  start(Options{.max_batch_size = 1, .max_wait_us = 0});
  const RequestId running = submit(0);
  ASSERT_TRUE(control_->await_entered(1));
  for (int i = 1; i <= 3; ++i) submit(float(i));
  std::thread stopper([&] { engine_->stop(StopMode::kFail); });
  const auto give_up = std::chrono::steady_clock::now() + kSafety;
  while (engine_->status().running) {  // stop() has begun before the lane frees
    ASSERT_LT(std::chrono::steady_clock::now(), give_up);
    std::this_thread::yield();
  }
  control_->release(1);
  stopper.join();
  ASSERT_EQ(got_.size(), 4u);
  EXPECT_TRUE(got_.at(running).result.ok());
  for (RequestId id = 2; id <= 4; ++id) {
    EXPECT_EQ(got_.at(id).result.error().code, ErrorCode::kShuttingDown);
  }
  for (auto [id, n] : got_.calls()) EXPECT_EQ(n, 1) << "request " << id;
}

TEST_F(SchedulerTest, EveryPreparedLaneIsLiveWhenStartReturns) {
  // A lane still on its way into its loop is live and not at rest, so a test
  // that waits for rest before moving the clock never moves it under one.
  engine_ = std::make_unique<Engine>(TestRunner::factory(control_),
                                     Options{.max_batch_size = 1, .num_lanes = 4}, clock_);
  ASSERT_TRUE(engine_->start().ok());
  EXPECT_EQ(engine_->status().live_lanes, 4u);
  settle(*engine_);
  const EngineStatus s = engine_->status();
  EXPECT_TRUE(s.at_rest);
  EXPECT_EQ(s.live_lanes, 4u);
}

TEST_F(SchedulerTest, LanesCanBeAddedAndRetiredLive) {
  control_->hold = true;
  start(Options{.max_batch_size = 1, .max_wait_us = 0, .num_lanes = 1});
  ASSERT_TRUE(
      engine_->set_options(Options{.max_batch_size = 1, .max_wait_us = 0, .num_lanes = 3}).ok());
  for (int i = 0; i < 3; ++i) submit(float(i));
  ASSERT_TRUE(control_->await_entered(3));  // three batches run at once
  control_->release(3);
  ASSERT_TRUE(got_.wait_for(3));
  settle(*engine_);
  EXPECT_EQ(engine_->status().live_lanes, 3u);
  ASSERT_TRUE(
      engine_->set_options(Options{.max_batch_size = 1, .max_wait_us = 0, .num_lanes = 1}).ok());
  const auto give_up = std::chrono::steady_clock::now() + kSafety;
  while (engine_->status().live_lanes != 1u) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up);
    std::this_thread::yield();
  }
  control_->hold = false;
  submit(9);
  ASSERT_TRUE(got_.wait_for(4));
}

TEST_F(SchedulerTest, ArrivalsWakeTheLeaderOnlyWhenItsDecisionChanges) {
  start(Options{.max_batch_size = 8, .max_wait_us = 1000});
  const uint64_t w0 = engine_->status().counters.wakeups;
  for (int i = 0; i < 7; ++i) submit(float(i));  // first one arms the deadline
  settle(*engine_);
  EXPECT_EQ(engine_->status().counters.wakeups - w0, 1u);
  submit(7);  // fills the batch
  settle(*engine_);
  EXPECT_EQ(engine_->status().counters.wakeups - w0, 2u);
  EXPECT_EQ(batches(), 1u);
}

TEST_F(SchedulerTest, RecordsBeyondTheirCapacityAreDroppedAndCounted) {
  start(Options{.max_batch_size = 1, .max_wait_us = 0});
  engine_->set_record_capacity(3);
  for (int i = 0; i < 5; ++i) {
    submit(float(i));
    settle(*engine_);
  }
  RecordBatch r;
  engine_->drain_records(r);
  EXPECT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.batches.size(), 3u);
  EXPECT_EQ(r.dropped, 4u);  // two requests and two batches
  EXPECT_EQ(engine_->status().counters.records_dropped, 4u);
  engine_->set_record_capacity(0);  // kept none, and none counted as lost
  submit(9);
  settle(*engine_);
  engine_->drain_records(r);
  EXPECT_TRUE(r.requests.empty());
  EXPECT_EQ(r.dropped, 0u);
}

TEST(EngineStart, AFailingRunnerFactoryIsReported) {
  Engine e(
      [](int lane) -> std::unique_ptr<Runner> {
        if (lane == 1) throw std::runtime_error("no such file");
        return std::make_unique<SyntheticRunner>(SyntheticCost{}, lane);
      },
      Options{.num_lanes = 2});
  Status s = e.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("lane 1: no such file"), std::string::npos);
}

TEST(EngineStart, InvalidOptionsAreReportedByStart) {
  Engine e(SyntheticRunner::factory({}), Options{.queue_capacity = 0});
  Status s = e.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("queue_capacity"), std::string::npos);
}

}  // namespace
}  // namespace batchscope::test

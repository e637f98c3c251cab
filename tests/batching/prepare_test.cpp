// SPDX-License-Identifier: GPL-3.0-or-later
// Runner::prepare: each lane prepares its runner on its own thread, the one
// that then runs its batches, before start() returns; a lane that cannot
// prepare is named and the others serve.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "tests/batching/test_support.h"

namespace batchscope {
namespace {

using test::Collector;
using test::input_of;

struct Seen {
  std::mutex mu;
  std::atomic<int> prepared{0};
  std::set<std::thread::id> prepare_threads;
  std::set<long> timer_slacks;  // each lane's, as it prepared
  int runs_off_their_thread = 0;
};

class PreparingRunner final : public Runner {
 public:
  PreparingRunner(std::shared_ptr<Seen> seen, bool fail) : seen_(std::move(seen)), fail_(fail) {}
  Status prepare() override {
    if (fail_) return invalid_argument("no plan for size 3");
    prepared_on_ = std::this_thread::get_id();
    std::lock_guard g(seen_->mu);
    seen_->prepare_threads.insert(prepared_on_);
    seen_->timer_slacks.insert(timer_slack_ns());
    ++seen_->prepared;
    return Status::Ok();
  }
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    if (std::this_thread::get_id() != prepared_on_) {
      std::lock_guard g(seen_->mu);
      ++seen_->runs_off_their_thread;
    }
    return std::vector<Tensors>(inputs.begin(), inputs.end());
  }

 private:
  std::shared_ptr<Seen> seen_;
  bool fail_;
  std::thread::id prepared_on_;
};

RunnerFactory factory(std::shared_ptr<Seen> seen, int failing_lane = -1) {
  return [seen, failing_lane](int lane) {
    return std::make_unique<PreparingRunner>(seen, lane == failing_lane);
  };
}

TEST(Prepare, EachLanePreparesOnTheThreadThatRunsItsBatchesBeforeStartReturns) {
  auto seen = std::make_shared<Seen>();
  Engine engine(factory(seen), Options{.max_batch_size = 4, .max_wait_us = 0, .num_lanes = 3});
  ASSERT_TRUE(engine.start().ok());
  EXPECT_EQ(seen->prepared.load(), 3);  // before any request
  {
    std::lock_guard g(seen->mu);
    EXPECT_EQ(seen->prepare_threads.size(), 3u);
    EXPECT_EQ(seen->prepare_threads.count(std::this_thread::get_id()), 0u);
  }
  Collector got;
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(engine.submit(input_of(float(i)), got.callback()).ok());
  ASSERT_TRUE(got.wait_for(200));
  engine.stop();
  EXPECT_EQ(got.size(), 200u);
  std::lock_guard g(seen->mu);
  EXPECT_EQ(seen->runs_off_their_thread, 0);
  EXPECT_EQ(engine.status().lane_error, "");
  // Each lane's waits end at their deadline, not Linux's default 50 us later.
  if (timer_slack_ns() > 0) EXPECT_EQ(seen->timer_slacks, (std::set<long>{1}));
}

TEST(Prepare, ALaneThatCannotPrepareIsNamedAndTheOthersServe) {
  auto seen = std::make_shared<Seen>();
  Engine engine(factory(seen, 1), Options{.max_batch_size = 4, .max_wait_us = 0, .num_lanes = 2});
  ASSERT_TRUE(engine.start().ok());
  EXPECT_EQ(engine.status().lane_error, "lane 1 could not prepare its runner: no plan for size 3");
  Collector got;
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(engine.submit(input_of(float(i)), got.callback()).ok());
  ASSERT_TRUE(got.wait_for(50));
  for (RequestId id = 1; id <= 50; ++id) {
    ASSERT_TRUE(got.has(id));
    EXPECT_TRUE(got.at(id).result.ok());
  }
  engine.stop();
}

TEST(Prepare, StartFailsNamingWhyWhenNoLaneCanPrepare) {
  auto seen = std::make_shared<Seen>();
  Engine engine(factory(seen, 0), Options{.max_batch_size = 4, .max_wait_us = 0, .num_lanes = 1});
  const Status s = engine.start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "lane 0 could not prepare its runner: no plan for size 3");
}

}  // namespace
}  // namespace batchscope

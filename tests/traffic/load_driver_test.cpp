// SPDX-License-Identifier: GPL-3.0-or-later
// The load driver on a manual clock: a stalled target raises measured
// latency instead of lowering offered load, and a closed loop keeps exactly N
// requests in flight. Plus short real runs against the in-process engine.

#include "traffic/load_driver.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "tests/batching/test_support.h"
#include "traffic/inproc_run.h"

namespace batchscope::test {
namespace {

// Holds every answer until the test releases it.
class HeldTarget final : public LoadTarget {
 public:
  explicit HeldTarget(Clock& clock) : clock_(clock) {}
  void send(uint64_t index, Done done) override {
    std::lock_guard g(mu_);
    sends_.push_back({index, clock_.now()});
    held_.push_back(std::move(done));
    max_in_flight_ = std::max(max_in_flight_, held_.size());
    cv_.notify_all();
  }
  bool await_sends(size_t n) {
    std::unique_lock g(mu_);
    return cv_.wait_for(g, kSafety, [&] { return sends_.size() >= n; });
  }
  void release(size_t n) {
    std::vector<Done> go;
    {
      std::lock_guard g(mu_);
      n = std::min(n, held_.size());
      go.assign(std::make_move_iterator(held_.begin()), std::make_move_iterator(held_.begin() + n));
      held_.erase(held_.begin(), held_.begin() + n);
    }
    for (Done& d : go) d(Result{});
  }
  size_t in_flight() {
    std::lock_guard g(mu_);
    return held_.size();
  }
  size_t max_in_flight() {
    std::lock_guard g(mu_);
    return max_in_flight_;
  }
  std::vector<std::pair<uint64_t, TimePoint>> sends() {
    std::lock_guard g(mu_);
    return sends_;
  }

 private:
  Clock& clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<uint64_t, TimePoint>> sends_;
  std::vector<Done> held_;
  size_t max_in_flight_ = 0;
};

TEST(LoadDriver, AStalledServerShowsAsLatencyNotAsLessLoad) {
  ManualClock clock;
  HeldTarget target(clock);
  ArrivalSpec spec;
  spec.pattern = Pattern::kConstant;
  spec.rate = 1000;  // one every millisecond, at 0, 1, ..., 9 ms
  spec.duration_s = 0.010;
  const TimePoint t0 = clock.now();
  RunData run;
  std::thread driver([&] { run = run_load(spec, target, RunConfig{}, clock); });
  // The target answers nothing, yet every request goes out on schedule.
  for (int i = 1; i < 10; ++i) {
    ASSERT_TRUE(target.await_sends(static_cast<size_t>(i)));
    ASSERT_TRUE(clock.await_parked(t0 + milliseconds(i))) << "the driver is not waiting for " << i;
    clock.advance_to(t0 + milliseconds(i));
  }
  ASSERT_TRUE(target.await_sends(10));
  EXPECT_EQ(target.in_flight(), 10u);
  clock.advance_to(t0 + milliseconds(50));  // the stall ends
  target.release(10);
  driver.join();

  ASSERT_EQ(run.requests.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    const RunRequest& r = run.requests[i];
    EXPECT_EQ(r.intended, t0 + milliseconds(static_cast<int64_t>(i)));
    EXPECT_EQ(r.sent, r.intended) << "request " << i << " went out late";
    EXPECT_EQ(r.done - r.intended, milliseconds(50 - static_cast<int64_t>(i)));  // the stall
    EXPECT_EQ(r.outcome, Outcome::kOk);
  }
}

TEST(LoadDriver, AClosedLoopKeepsExactlyNInFlight) {
  ManualClock clock;
  HeldTarget target(clock);
  ArrivalSpec spec;
  spec.pattern = Pattern::kClosed;
  spec.concurrency = 3;
  spec.duration_s = 1;
  spec.max_requests = 10;
  RunData run;
  std::thread driver([&] { run = run_load(spec, target, RunConfig{}, clock); });
  ASSERT_TRUE(target.await_sends(3));
  for (size_t sent = 3; sent < 10; ++sent) {
    EXPECT_EQ(target.in_flight(), 3u);
    target.release(1);  // one returns, the next goes
    ASSERT_TRUE(target.await_sends(sent + 1));
  }
  target.release(3);
  driver.join();
  EXPECT_EQ(run.requests.size(), 10u);
  EXPECT_EQ(target.max_in_flight(), 3u);
}

// What a history keeping the run as it goes is handed: an empty hand-over
// as the traffic starts, then every half second (on the run's clock) the
// requests answered since the last, in the order answered, each once.
TEST(LoadDriver, HandsOverWhatWasAnsweredEveryHalfSecond) {
  ManualClock clock;
  HeldTarget target(clock);
  ArrivalSpec spec;
  spec.pattern = Pattern::kConstant;
  spec.rate = 10;  // at 0, 100, ..., 1900 ms
  spec.duration_s = 2;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<RunProgress> handed;
  LoadOptions lo;
  lo.progress = [&](RunProgress&& p) {
    std::lock_guard g(mu);
    handed.push_back(std::move(p));
    cv.notify_all();
  };
  auto await_handed = [&](size_t n) {
    std::unique_lock g(mu);
    return cv.wait_for(g, kSafety, [&] { return handed.size() >= n; });
  };
  const TimePoint t0 = clock.now();
  RunData run;
  std::thread driver([&] { run = run_load(spec, target, RunConfig{}, clock, lo); });
  ASSERT_TRUE(await_handed(1));
  for (int i = 0; i < 7; ++i) {  // up to 600 ms: requests 0..5 answered as sent, 6 held
    ASSERT_TRUE(target.await_sends(static_cast<size_t>(i + 1)));
    if (i < 6) target.release(1);
    ASSERT_TRUE(clock.await_parked(t0 + milliseconds(100 * (i + 1))));
    if (i == 4) ASSERT_TRUE(clock.await_parked(t0 + milliseconds(500)));  // the feeder
    clock.advance_to(t0 + milliseconds(100 * (i + 1)));
    if (i == 4) ASSERT_TRUE(await_handed(2));
  }
  {
    std::lock_guard g(mu);
    EXPECT_EQ(handed[0].start, t0);
    EXPECT_TRUE(handed[0].requests.empty());
    ASSERT_EQ(handed[1].requests.size(), 5u);  // 0..4; 5 was answered at 500 ms, maybe after
    for (size_t k = 0; k < 5; ++k) EXPECT_EQ(handed[1].requests[k].index, k);
  }
  // The rest of the run answered at once; the last hand-over and the run
  // together hold each request once.
  for (int i = 7; i < 20; ++i) {
    clock.advance_to(t0 + milliseconds(100 * i));
    ASSERT_TRUE(target.await_sends(static_cast<size_t>(i + 1)));
    target.release(20);
  }
  driver.join();
  ASSERT_EQ(run.requests.size(), 20u);
  std::vector<int> seen(20, 0);
  for (const RunProgress& p : handed) {
    for (const RunRequest& r : p.requests) {
      ASSERT_LT(r.index, 20u);
      ++seen[r.index];
      EXPECT_NE(r.done, TimePoint{}) << "request " << r.index << " handed over unanswered";
    }
  }
  for (int n : seen) EXPECT_LE(n, 1);
  EXPECT_GE(handed.size(), 2u);
}

TEST(LoadDriver, RunsAgainstTheInProcessEngine) {
  Engine engine(SyntheticRunner::factory({.fixed_us = 50, .per_item_us = 5}),
                Options{.max_batch_size = 16, .max_wait_us = 500});
  ASSERT_TRUE(engine.start().ok());
  EngineTarget target(engine, [](uint64_t i) { return input_of(static_cast<float>(i)); });
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 2000;
  spec.duration_s = 0.25;
  spec.seed = 3;
  SteadyClock clock;
  RunData run = run_load(spec, target, RunConfig{}, clock);
  engine.stop();
  ASSERT_GT(run.requests.size(), 100u);
  for (const RunRequest& r : run.requests) {
    EXPECT_EQ(r.outcome, Outcome::kOk);
    EXPECT_GT(r.batch_id, 0u);
    EXPECT_GE(r.batch_size, 1u);
    EXPECT_GE(r.done, r.sent);
    EXPECT_GE(r.sent, r.intended);
  }
}

// What a history keeps as a run goes: each progress report carries the
// batches new since the last, and the run at its end holds every batch once,
// those handed over and the rest.
TEST(LoadDriver, EngineRecordsHandEachBatchOnceAndJoinThemAll) {
  Engine engine(SyntheticRunner::factory({.fixed_us = 200, .per_item_us = 5}),
                Options{.max_batch_size = 8, .max_wait_us = 500});
  ASSERT_TRUE(engine.start().ok());
  EngineTarget target(engine, [](uint64_t i) { return input_of(static_cast<float>(i)); });
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 2000;
  spec.duration_s = 0.3;
  spec.seed = 5;
  SteadyClock clock;
  EngineRecords records(engine);
  std::vector<uint64_t> handed;
  size_t reports = 0;
  LoadOptions lo;
  lo.progress_every = milliseconds(20);
  lo.progress = [&](RunProgress&& p) {
    records.hand(p);
    for (const BatchRecord& b : p.batches) handed.push_back(b.id);
    ++reports;
  };
  RunData run = run_load(spec, target, RunConfig{}, clock, lo);
  engine.stop(StopMode::kDrain);
  records.join(run);
  ASSERT_GT(run.requests.size(), 100u);
  EXPECT_GE(reports, 3u);
  EXPECT_FALSE(handed.empty());
  std::map<uint64_t, int> in_run;
  for (const BatchRecord& b : run.batches) ++in_run[b.id];
  for (const auto& [id, n] : in_run) EXPECT_EQ(n, 1) << "batch " << id;
  std::map<uint64_t, int> in_reports;
  for (uint64_t id : handed) ++in_reports[id];
  for (const auto& [id, n] : in_reports) {
    EXPECT_EQ(n, 1) << "batch " << id << " handed over " << n << " times";
    EXPECT_EQ(in_run.count(id), 1u) << "batch " << id << " handed over but not in the run";
  }
  for (const RunRequest& r : run.requests) {
    EXPECT_EQ(in_run.count(r.batch_id), 1u) << "request " << r.index << "'s batch";
  }
  EXPECT_FALSE(run.depth.empty());
}

}  // namespace
}  // namespace batchscope::test

namespace batchscope::test {
namespace {

TEST(LoadDriver, AStopWakesTheDriverDuringALongGap) {
  ManualClock clock;
  HeldTarget target(clock);
  ArrivalSpec spec;
  spec.pattern = Pattern::kConstant;
  spec.rate = 0.001;  // one at 0 s, the next 1000 s later
  spec.duration_s = 5000;
  std::atomic<bool> stop{false};
  LoadOptions lo;
  lo.stop = &stop;
  lo.drain_timeout = std::chrono::milliseconds(0);
  const TimePoint t0 = clock.now();
  std::thread driver([&] { run_load(spec, target, RunConfig{}, clock, lo); });
  ASSERT_TRUE(target.await_sends(1));
  // Waiting for the 1000 s arrival, it looks at the stop flag every 20 ms.
  ASSERT_TRUE(clock.await_parked(t0 + milliseconds(20)));
  stop = true;
  clock.advance_to(t0 + milliseconds(20));
  driver.join();  // returns without the clock reaching 1000 s
  EXPECT_EQ(target.sends().size(), 1u);
  target.release(1);
}

TEST(LoadDriver, AnswersAfterTheDrainGaveUpAreIgnoredSafely) {
  ManualClock clock;
  auto target = std::make_unique<HeldTarget>(clock);
  ArrivalSpec spec;
  spec.pattern = Pattern::kConstant;
  spec.rate = 1000;
  spec.duration_s = 0.003;  // three requests, at 0, 1 and 2 ms
  LoadCounters counters;
  LoadOptions lo;
  lo.drain_timeout = std::chrono::milliseconds(0);
  lo.counters = &counters;
  const TimePoint t0 = clock.now();
  RunData run;
  std::thread driver([&] { run = run_load(spec, *target, RunConfig{}, clock, lo); });
  for (int i = 1; i < 3; ++i) {
    ASSERT_TRUE(target->await_sends(static_cast<size_t>(i)));
    ASSERT_TRUE(clock.await_parked(t0 + milliseconds(i)));
    clock.advance_to(t0 + milliseconds(i));
  }
  ASSERT_TRUE(target->await_sends(3));
  driver.join();  // the drain gave up at once: all three are failures
  EXPECT_EQ(counters.failed.load(), 3u);
  ASSERT_EQ(run.requests.size(), 3u);
  for (const RunRequest& r : run.requests) EXPECT_EQ(r.outcome, Outcome::kModelError);
  target->release(3);  // the run is over and its ledger is gone from run_load
  EXPECT_EQ(counters.ok.load(), 0u);
  EXPECT_EQ(counters.failed.load(), 3u);
}

}  // namespace
}  // namespace batchscope::test

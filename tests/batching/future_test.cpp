// SPDX-License-Identifier: GPL-3.0-or-later
// The future a BatchedFn call returns and its promise: a value set before or
// after get(), timeouts, broken and dropped promises, the std::future
// adapter, and many answers across threads each arriving once.

#include "batching/future.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace batchscope {
namespace {

using namespace std::chrono_literals;

// The error get() throws; nullopt when it returns instead.
template <class T>
std::optional<std::error_code> get_error(Future<T>& f) {
  try {
    f.get();
  } catch (const std::future_error& e) {
    return e.code();
  }
  return std::nullopt;
}

TEST(Future, AValueSetBeforeGetIsReadyAndTakenOnce) {
  Promise<std::string> p;
  Future<std::string> f = p.get_future();
  EXPECT_TRUE(f.valid());
  EXPECT_FALSE(f.ready());
  p.set_value("answer");
  EXPECT_TRUE(f.ready());
  EXPECT_EQ(f.get(), "answer");
  EXPECT_FALSE(f.valid());
  EXPECT_EQ(get_error(f), std::make_error_code(std::future_errc::no_state));
}

TEST(Future, GetSleepsUntilAnotherThreadSetsTheValue) {
  for (int round = 0; round < 200; ++round) {
    Promise<std::unique_ptr<int>> p;
    Future<std::unique_ptr<int>> f = p.get_future();
    std::atomic<bool> go{false};
    std::thread setter([&go, p = std::move(p), round]() mutable {
      while (!go.load()) std::this_thread::yield();
      // Half the rounds late enough that the getter has gone to sleep.
      if (round % 2) std::this_thread::sleep_for(200us);
      p.set_value(std::make_unique<int>(round));
    });
    go = true;
    std::unique_ptr<int> v = f.get();
    setter.join();
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, round);
  }
}

TEST(Future, WaitForGivesUpAtItsTimeoutAndTheValueStillArrives) {
  Promise<int> p;
  Future<int> f = p.get_future();
  EXPECT_FALSE(f.wait_for(1ms));
  EXPECT_FALSE(f.ready());
  std::thread setter([p = std::move(p)]() mutable { p.set_value(7); });
  EXPECT_TRUE(f.wait_for(10s));
  EXPECT_EQ(f.get(), 7);
  setter.join();
}

TEST(Future, APromiseDroppedWithoutAValueBreaksItsFuture) {
  Future<int> f;
  {
    Promise<int> p;
    f = p.get_future();
  }
  ASSERT_TRUE(f.ready());
  EXPECT_EQ(get_error(f), std::make_error_code(std::future_errc::broken_promise));
}

TEST(Future, ThePromiseRefusesASecondFutureAndAnEmptyPromiseRefusesAValue) {
  Promise<int> p;
  Future<int> f = p.get_future();
  EXPECT_THROW(p.get_future(), std::future_error);
  Promise<int> moved = std::move(p);
  EXPECT_THROW(p.set_value(1), std::future_error);  // NOLINT: use after move is the case
  moved.set_value(2);
  EXPECT_EQ(f.get(), 2);
}

TEST(Future, AFutureDroppedBeforeTheValueLeavesTheSetterSafe) {
  // The value is destroyed once, by whichever side lets go last.
  auto counted = std::make_shared<int>(0);
  {
    Promise<std::shared_ptr<int>> p;
    { Future<std::shared_ptr<int>> f = p.get_future(); }
    p.set_value(counted);
  }
  EXPECT_EQ(counted.use_count(), 1);
  {
    Promise<std::shared_ptr<int>> p;
    Future<std::shared_ptr<int>> f = p.get_future();
    p.set_value(counted);
    EXPECT_EQ(counted.use_count(), 2);
  }
  EXPECT_EQ(counted.use_count(), 1);
  {
    Promise<std::shared_ptr<int>> p;  // no future taken
    p.set_value(counted);
  }
  EXPECT_EQ(counted.use_count(), 1);
}

TEST(Future, TheStdFutureAdapterGetsTheValueSetBeforeOrAfterIt) {
  Promise<int> early;
  Future<int> fe = early.get_future();
  early.set_value(1);
  std::future<int> se = std::move(fe);
  EXPECT_FALSE(fe.valid());  // NOLINT: the adapter leaves it empty
  EXPECT_EQ(se.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(se.get(), 1);

  Promise<int> late;
  std::future<int> sl = late.get_future();  // implicit, as code written for std::future does
  EXPECT_EQ(sl.wait_for(0s), std::future_status::timeout);
  std::thread setter([p = std::move(late)]() mutable { p.set_value(2); });
  EXPECT_EQ(sl.get(), 2);
  setter.join();
}

TEST(Future, TheStdFutureAdapterSeesABrokenPromiseAsStdDoes) {
  std::future<int> before, after;
  {
    Promise<int> p1, p2;
    before = p1.get_future();  // converted while the promise lives
    Future<int> f2 = p2.get_future();
    p2 = Promise<int>();  // breaks f2's promise
    after = std::move(f2);
  }
  EXPECT_THROW(before.get(), std::future_error);
  EXPECT_THROW(after.get(), std::future_error);
}

TEST(Future, ManyAnswersAcrossThreadsEachArriveOnce) {
  // Slots go back to the cache of whichever thread lets go last, and are
  // taken again by the producer: every value must still arrive intact.
  constexpr int kN = 20000;
  std::vector<Promise<int>> promises(kN);
  std::vector<Future<int>> futures;
  futures.reserve(kN);
  for (auto& p : promises) futures.push_back(p.get_future());
  std::thread setter([&] {
    for (int i = 0; i < kN; ++i) promises[static_cast<size_t>(i)].set_value(i);
  });
  long sum = 0;
  for (int i = 0; i < kN; ++i) {
    int v = futures[static_cast<size_t>(i)].get();
    EXPECT_EQ(v, i);
    sum += v;
  }
  setter.join();
  EXPECT_EQ(sum, static_cast<long>(kN) * (kN - 1) / 2);
  // A second round reuses the slots let go of above.
  Promise<int> again;
  Future<int> f = again.get_future();
  again.set_value(-1);
  EXPECT_EQ(f.get(), -1);
}

}  // namespace
}  // namespace batchscope

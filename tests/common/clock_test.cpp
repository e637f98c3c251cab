#include <gtest/gtest.h>

#include <thread>

#include "common/clock.h"
#include "common/doorbell.h"

namespace batchscope {
namespace {

TEST(ManualClock, WakesAWaiterOnlyWhenItsDeadlineComes) {
  ManualClock clock;
  const TimePoint deadline = clock.now() + std::chrono::milliseconds(5);
  std::mutex mu;
  std::condition_variable cv;
  bool woke = false;
  std::thread waiter([&] {
    std::unique_lock lk(mu);
    while (clock.now() < deadline) clock.wait_until(lk, cv, deadline);
    woke = true;
  });
  ASSERT_TRUE(clock.await_parked(deadline));
  clock.advance(std::chrono::milliseconds(4));
  ASSERT_TRUE(clock.await_parked(deadline));  // still parked at the same deadline
  {
    std::lock_guard g(mu);
    EXPECT_FALSE(woke);
  }
  clock.advance(std::chrono::milliseconds(1));
  waiter.join();
  EXPECT_TRUE(woke);
  EXPECT_TRUE(clock.parked().empty());
}

TEST(ManualClock, WaitForAPastDeadlineReturnsAtOnce) {
  ManualClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lk(mu);
  clock.wait_until(lk, cv, clock.now());
  SUCCEED();
}

TEST(ManualClock, AwaitParkedGivesUpAfterItsSafetyTimeout) {
  ManualClock clock;
  EXPECT_FALSE(clock.await_parked(clock.now(), std::chrono::milliseconds(10)));
}

TEST(ManualClock, WakesADoorbellWaiterWhenItsDeadlineComes) {
  ManualClock clock;
  const TimePoint deadline = clock.now() + std::chrono::milliseconds(5);
  std::mutex mu;
  Doorbell bell;
  bool woke = false;
  std::thread waiter([&] {
    std::unique_lock lk(mu);
    while (clock.now() < deadline) clock.wait_until(lk, bell, deadline);
    woke = true;
  });
  ASSERT_TRUE(clock.await_parked(deadline));
  clock.advance(std::chrono::milliseconds(4));
  ASSERT_TRUE(clock.await_parked(deadline));
  {
    std::lock_guard g(mu);
    EXPECT_FALSE(woke);
  }
  clock.advance(std::chrono::milliseconds(1));
  waiter.join();
  EXPECT_TRUE(woke);
  EXPECT_TRUE(clock.parked().empty());
}

// The waiter checks `rung` under the lock and parks; the ringer sets it
// under the lock and rings after letting go, as the engine's producers do.
// A ring that lands before the sleep still wakes it (the count moved).
TEST(ManualClock, ARingWakesADoorbellWaiterWithNoDeadline) {
  for (int round = 0; round < 200; ++round) {
    ManualClock clock;
    std::mutex mu;
    Doorbell bell;
    bool rung = false;
    std::thread waiter([&] {
      std::unique_lock lk(mu);
      while (!rung) clock.wait_until(lk, bell, kNever);
    });
    if (round % 2 == 0) ASSERT_TRUE(clock.await_parked(kNever));
    {
      std::lock_guard g(mu);
      rung = true;
    }
    bell.ring();
    waiter.join();
    EXPECT_TRUE(clock.parked().empty());
  }
}

TEST(ManualClock, DoorbellWaitForAPastDeadlineKeepsTheLock) {
  ManualClock clock;
  std::mutex mu;
  Doorbell bell;
  std::unique_lock lk(mu);
  clock.wait_until(lk, bell, clock.now());
  EXPECT_TRUE(lk.owns_lock());
  EXPECT_EQ(bell.rings(), 0u);
}

TEST(SteadyClock, ARingWakesADoorbellWaiter) {
  for (int round = 0; round < 200; ++round) {
    SteadyClock clock;
    std::mutex mu;
    Doorbell bell;
    bool rung = false;
    std::thread waiter([&] {
      std::unique_lock lk(mu);
      while (!rung) clock.wait_until(lk, bell, kNever);
      EXPECT_TRUE(lk.owns_lock());
    });
    {
      std::lock_guard g(mu);
      rung = true;
    }
    bell.ring();
    waiter.join();
  }
}

// A deadline already behind the steady clock returns from the sleep at
// once; so does one on the clock's epoch, which the futex cannot be given.
TEST(SteadyClock, DoorbellWaitForAPastDeadlineReturns) {
  SteadyClock clock;
  Doorbell bell;
  bell.wait_until(bell.rings(), clock.now() - std::chrono::milliseconds(1));
  bell.wait_until(bell.rings(), TimePoint{});
  std::mutex mu;
  std::unique_lock lk(mu);
  clock.wait_until(lk, bell, clock.now());
  EXPECT_TRUE(lk.owns_lock());
}

TEST(SteadyClock, IsMonotonic) {
  SteadyClock c;
  const TimePoint a = c.now();
  EXPECT_LE(a, c.now());
}

}  // namespace
}  // namespace batchscope

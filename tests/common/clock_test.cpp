// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "common/clock.h"
#include "common/doorbell.h"

namespace batchscope {
namespace {

// A thread waits, through `Signal` (a condition variable or a doorbell),
// until the manual clock reaches its deadline; advancing short of it leaves
// the thread parked, and reaching it wakes it.
template <class Signal>
void expect_woken_only_at_deadline() {
  ManualClock clock;
  const TimePoint deadline = clock.now() + std::chrono::milliseconds(5);
  std::mutex mu;
  Signal signal;
  bool woke = false;
  std::thread waiter([&] {
    std::unique_lock lk(mu);
    while (clock.now() < deadline) clock.wait_until(lk, signal, deadline);
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

TEST(ManualClock, WakesAWaiterOnlyWhenItsDeadlineComes) {
  expect_woken_only_at_deadline<std::condition_variable>();
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

TEST(ManualClock, WakesADoorbellWaiterOnlyWhenItsDeadlineComes) {
  expect_woken_only_at_deadline<Doorbell>();
}

// The waiter checks `rung` under the lock and parks; the ringer sets it
// under the lock and rings after letting go, as the engine's producers do.
// A ring that lands before the sleep still wakes it (the count moved).
// `before_ring` runs between the thread's start and the ring.
template <class C>
void expect_a_ring_wakes_the_waiter(const std::function<void(C&, int round)>& before_ring) {
  for (int round = 0; round < 200; ++round) {
    C clock;
    std::mutex mu;
    Doorbell bell;
    bool rung = false;
    std::thread waiter([&] {
      std::unique_lock lk(mu);
      while (!rung) clock.wait_until(lk, bell, kNever);
      EXPECT_TRUE(lk.owns_lock());
    });
    before_ring(clock, round);
    {
      std::lock_guard g(mu);
      rung = true;
    }
    bell.ring();
    waiter.join();
  }
}

TEST(ManualClock, ARingWakesADoorbellWaiterWithNoDeadline) {
  expect_a_ring_wakes_the_waiter<ManualClock>([](ManualClock& clock, int round) {
    if (round % 2 == 0) EXPECT_TRUE(clock.await_parked(kNever));  // parked, or not yet
  });
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
  expect_a_ring_wakes_the_waiter<SteadyClock>([](SteadyClock&, int) {});
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

TEST(TightTimerSlack, SetsTheThreadsSlackToANanosecondAndPutsItBack) {
  const long before = timer_slack_ns();
  if (before < 0) GTEST_SKIP() << "no timer slack on this system";
  {
    const TightTimerSlack tight;
    EXPECT_EQ(timer_slack_ns(), 1);
  }
  EXPECT_EQ(timer_slack_ns(), before);
}

}  // namespace
}  // namespace batchscope

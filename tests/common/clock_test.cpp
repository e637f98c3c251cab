#include <gtest/gtest.h>

#include <thread>

#include "common/clock.h"

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

TEST(SteadyClock, IsMonotonic) {
  SteadyClock c;
  const TimePoint a = c.now();
  EXPECT_LE(a, c.now());
}

}  // namespace
}  // namespace batchscope

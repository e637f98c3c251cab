// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Time for the engine. Every component reads time through a Clock so that tests
// can drive time by hand (ManualClock) instead of sleeping.
//
// Thread-safety: all methods of both clocks are thread-safe.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace batchscope {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;
using std::chrono::microseconds;
using std::chrono::milliseconds;

class Doorbell;

inline constexpr TimePoint kNever = TimePoint::max();

inline double to_us(Duration d) { return std::chrono::duration<double, std::micro>(d).count(); }
inline double to_ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;

  // Blocks the caller, which holds `lock`, until `cv` is notified or the clock
  // reaches `deadline` (kNever: no deadline). Like condition_variable waits it
  // may return early; callers re-check their state.
  virtual void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          TimePoint deadline) = 0;

  // The same wait on a doorbell (common/doorbell.h): lets go of `lock`, sleeps
  // until `bell` rings or the clock reaches `deadline`, and takes `lock` back.
  // Whoever rings must decide to under `lock`, after the caller's check.
  virtual void wait_until(std::unique_lock<std::mutex>& lock, Doorbell& bell,
                          TimePoint deadline) = 0;
};

// Within its scope, the calling thread's timed waits end within about a
// microsecond of their deadline rather than Linux's default timer slack of
// 50 us later, and the thread's own slack is put back after; elsewhere it
// does nothing. Batching waits are that short: a leader parked for a 500 us
// window woke 40-90 us late without it (docs/engine.md). Held by each lane,
// the generation engine's step thread and the load driver.
class TightTimerSlack {
 public:
  TightTimerSlack();
  ~TightTimerSlack();
  TightTimerSlack(const TightTimerSlack&) = delete;
  TightTimerSlack& operator=(const TightTimerSlack&) = delete;

 private:
  long saved_ = -1;
};

// The calling thread's timer slack in nanoseconds, or -1 where not known.
long timer_slack_ns();

// The process's monotonic clock.
class SteadyClock final : public Clock {
 public:
  TimePoint now() const override;
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  TimePoint deadline) override;
  void wait_until(std::unique_lock<std::mutex>& lock, Doorbell& bell, TimePoint deadline) override;
};

// A clock that only moves when a test moves it. Threads blocked in
// wait_until() are woken when advance() reaches their deadline. A test can
// wait (with a real-time safety timeout) until some thread is parked at a
// given deadline, which proves the scheduler armed exactly that deadline.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint(std::chrono::seconds(1000)));

  TimePoint now() const override;
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  TimePoint deadline) override;
  void wait_until(std::unique_lock<std::mutex>& lock, Doorbell& bell, TimePoint deadline) override;

  // Moves time forward and wakes every waiter whose deadline has come.
  void advance(Duration d);
  void advance_to(TimePoint t);

  // Deadlines of the threads parked in wait_until() right now (kNever for an
  // untimed wait).
  std::vector<TimePoint> parked() const;

  // Waits in real time until a thread is parked at exactly `deadline`.
  // Returns false after `safety` real time so a broken test fails fast.
  bool await_parked(TimePoint deadline,
                    std::chrono::milliseconds safety = std::chrono::seconds(10));

 private:
  struct Waiter {
    std::mutex* mutex;
    // What the waiter sleeps on: exactly one of the two is set.
    std::condition_variable* cv;
    Doorbell* bell;
    TimePoint deadline;
  };

  void leave(Waiter* self);

  mutable std::mutex mu_;
  std::condition_variable changed_;  // signalled when the set of waiters changes
  TimePoint now_;
  std::vector<Waiter*> waiters_;
};

}  // namespace batchscope

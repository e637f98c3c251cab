// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/clock.h"

#include <algorithm>

#include "common/doorbell.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace batchscope {

long timer_slack_ns() {
#ifdef __linux__
  const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  return slack < 0 ? -1 : slack;
#else
  return -1;
#endif
}

TightTimerSlack::TightTimerSlack() : saved_(timer_slack_ns()) {
#ifdef __linux__
  if (saved_ > 1) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
}

TightTimerSlack::~TightTimerSlack() {
#ifdef __linux__
  if (saved_ > 1) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(saved_), 0, 0, 0);
#endif
}

TimePoint SteadyClock::now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

void SteadyClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                             TimePoint deadline) {
  if (deadline == kNever) {
    cv.wait(lock);
  } else {
    cv.wait_until(lock, deadline);
  }
}

void SteadyClock::wait_until(std::unique_lock<std::mutex>& lock, Doorbell& bell,
                             TimePoint deadline) {
  const uint32_t seen = bell.rings();
  lock.unlock();
  bell.wait_until(seen, deadline);
  lock.lock();
}

ManualClock::ManualClock(TimePoint start) : now_(start) {}

TimePoint ManualClock::now() const {
  std::lock_guard g(mu_);
  return now_;
}

void ManualClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                             TimePoint deadline) {
  // The waiter registers while the caller still holds `lock`; advance() takes
  // that same mutex before notifying, so a wake-up cannot slip in between the
  // registration and cv.wait() releasing the lock.
  Waiter self{lock.mutex(), &cv, nullptr, deadline};
  {
    std::lock_guard g(mu_);
    if (now_ >= deadline) return;
    waiters_.push_back(&self);
  }
  changed_.notify_all();
  cv.wait(lock);
  leave(&self);
}

void ManualClock::wait_until(std::unique_lock<std::mutex>& lock, Doorbell& bell,
                             TimePoint deadline) {
  // The count is read before registering: a ring from advance() after that
  // changes it, so the sleep below cannot miss it.
  const uint32_t seen = bell.rings();
  Waiter self{nullptr, nullptr, &bell, deadline};
  {
    std::lock_guard g(mu_);
    if (now_ >= deadline) return;
    waiters_.push_back(&self);
  }
  changed_.notify_all();
  lock.unlock();
  bell.wait_until(seen, kNever);
  lock.lock();
  leave(&self);
}

void ManualClock::leave(Waiter* self) {
  {
    std::lock_guard g(mu_);
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), self));
  }
  changed_.notify_all();
}

void ManualClock::advance(Duration d) {
  TimePoint target;
  {
    std::lock_guard g(mu_);
    target = now_ + d;
  }
  advance_to(target);
}

void ManualClock::advance_to(TimePoint t) {
  std::vector<Waiter> due;
  {
    std::lock_guard g(mu_);
    if (t > now_) now_ = t;
    for (Waiter* w : waiters_) {
      if (w->deadline <= now_) due.push_back(*w);
    }
  }
  // The mutex and condition variable belong to the waiting object, which
  // outlives its waits; holding its mutex orders this notify after its wait.
  for (const Waiter& w : due) {
    if (w.bell != nullptr) {
      w.bell->ring();
      continue;
    }
    std::lock_guard g(*w.mutex);
    w.cv->notify_all();
  }
}

std::vector<TimePoint> ManualClock::parked() const {
  std::lock_guard g(mu_);
  std::vector<TimePoint> out;
  for (const Waiter* w : waiters_) out.push_back(w->deadline);
  return out;
}

bool ManualClock::await_parked(TimePoint deadline, std::chrono::milliseconds safety) {
  std::unique_lock g(mu_);
  return changed_.wait_for(g, safety, [&] {
    return std::any_of(waiters_.begin(), waiters_.end(),
                       [&](const Waiter* w) { return w->deadline == deadline; });
  });
}

}  // namespace batchscope

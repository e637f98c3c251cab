// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Calls `tick` from a thread of its own on a fixed beat from `start` (start
// + every, start + 2 * every, ...) on the run's clock, however late the
// thread began, until it is destroyed; the load drivers hand a run's
// progress over with it.
// Thread-safety: construct and destroy on one thread; `tick` runs on the
// beat's thread.

#include <condition_variable>
#include <functional>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"

namespace batchscope {

class ProgressBeat {
 public:
  ProgressBeat(Clock& clock, TimePoint start, Duration every, std::function<void()> tick)
      : clock_(clock), start_(start), every_(every), tick_(std::move(tick)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~ProgressBeat() {
    {
      MutexLock g(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  ProgressBeat(const ProgressBeat&) = delete;
  ProgressBeat& operator=(const ProgressBeat&) = delete;

 private:
  void loop() {
    MutexLock lk(mu_);
    for (TimePoint next = start_ + every_; !quit_; next += every_) {
      while (!quit_ && clock_.now() < next) clock_.wait_until(lk.unique(), cv_, next);
      if (quit_) break;
      lk.unlock();
      tick_();
      lk.lock();
    }
  }

  Clock& clock_;
  const TimePoint start_;
  const Duration every_;
  const std::function<void()> tick_;
  Mutex mu_;
  std::condition_variable cv_;
  bool quit_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace batchscope

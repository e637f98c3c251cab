// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A word one thread sleeps on until another rings it (a Linux futex). The
// engine's leader parks on one instead of a condition variable: a ring costs
// the ringer one system call, and the sleeper takes its lock back the plain
// way, where a condition variable leaves the lock marked contended and its
// next unlock makes a third call for nobody.
//
// Thread-safety: every method may be called from any thread.

#include <atomic>
#include <cstdint>

#include "common/clock.h"

namespace batchscope {

class Doorbell {
 public:
  // The count of rings so far; a waiter reads it before it lets go of the
  // state it checked, and sleeps only while the count is still that.
  uint32_t rings() const { return rings_.load(std::memory_order_acquire); }

  // Counts one ring and wakes every sleeper (one system call).
  void ring();

  // Sleeps while the count is `seen`, until `deadline` on the steady clock
  // (kNever: no deadline). May return early; callers re-check their state.
  void wait_until(uint32_t seen, TimePoint deadline);

 private:
  std::atomic<uint32_t> rings_{0};
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/doorbell.h"

#include <ctime>

#include "common/futex.h"

namespace batchscope {

void Doorbell::ring() {
  rings_.fetch_add(1, std::memory_order_release);
  futex::wake_all(rings_);
}

void Doorbell::wait_until(uint32_t seen, TimePoint deadline) {
  // FUTEX_WAIT_BITSET takes an absolute time on CLOCK_MONOTONIC, the clock
  // std::chrono::steady_clock reads on Linux.
  timespec at{};
  const timespec* timeout = nullptr;
  if (deadline != kNever) {
    const int64_t ns = deadline.time_since_epoch().count();
    if (ns <= 0) return;
    at.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    at.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    timeout = &at;
  }
  futex::wait_until(rings_, seen, timeout);
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The futex system calls on a 32-bit atomic word (Linux), shared by the
// doorbell (common/doorbell.h) and batching's Future (batching/future.h).
// Thread-safety: any thread may wait on or wake a word.

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

namespace batchscope::futex {

// Sleeps while `word` holds `expected`, for at most `relative` (null: no
// limit). Returns early on a wake, a signal, or a word already changed.
inline void wait(std::atomic<uint32_t>& word, uint32_t expected, const timespec* relative) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, relative,
          nullptr, 0);
}

// The same until an absolute time on CLOCK_MONOTONIC (null: no limit).
inline void wait_until(std::atomic<uint32_t>& word, uint32_t expected, const timespec* absolute) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_BITSET_PRIVATE, expected,
          absolute, nullptr, FUTEX_BITSET_MATCH_ANY);
}

// Wakes every thread sleeping on `word`.
inline void wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

}  // namespace batchscope::futex

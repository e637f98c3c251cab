// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// std::mutex with the capability attribute that libstdc++'s lacks, so that
// members can be GUARDED_BY it (common/thread_annotations.h), and the scoped
// lock that goes with it. A MutexLock hands its std::unique_lock to a
// condition variable or a Clock::wait_until, which let go of the mutex while
// they sleep and hold it again when they return, as the analysis assumes.
//
// Thread-safety: a Mutex is what makes other state thread-safe; a MutexLock
// belongs to the thread that made it.

#include <mutex>

#include "common/thread_annotations.h"

namespace batchscope {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // Tells the analysis that the caller holds this mutex, where a lock taken
  // elsewhere cannot be seen (a callback run under the caller's lock).
  void assert_held() const ASSERT_CAPABILITY(this) {}

  // The std::mutex underneath, for a std::unique_lock made by MutexLock.
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  struct TryFirst {};

  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.native()) {}
  // Tries the mutex first, so that waited() tells a lock that found it free
  // from one that waited for another thread (the engine times an admission
  // that waited from when it got the lock, not from its arrival).
  MutexLock(Mutex& mu, TryFirst) ACQUIRE(mu)
      : lock_(mu.native(), std::try_to_lock), waited_(!lock_.owns_lock()) {
    if (waited_) lock_.lock();
  }
  ~MutexLock() RELEASE() {}

  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Lets go of the mutex early, or takes it again after unlock().
  void unlock() RELEASE() { lock_.unlock(); }
  void lock() ACQUIRE() { lock_.lock(); }

  // For std::condition_variable::wait and Clock::wait_until: they release
  // and retake the mutex inside, and hold it when they return.
  std::unique_lock<std::mutex>& unique() { return lock_; }

  // Made with TryFirst: whether the mutex was held by another thread then.
  bool waited() const { return waited_; }

 private:
  std::unique_lock<std::mutex> lock_;
  bool waited_ = false;
};

}  // namespace batchscope

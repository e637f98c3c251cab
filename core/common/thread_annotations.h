// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Lock contracts the compiler checks: Clang's thread-safety analysis
// (-Wthread-safety), which every clang build of the project turns into
// errors (CMakeLists.txt; the fuzz preset is the clang build CI runs). Under
// GCC the macros are empty and the contracts are documentation.
//
//   Mutex mu_;                                   (common/mutex.h)
//   int depth_ GUARDED_BY(mu_);                  read or written only under mu_
//   void cut_locked() REQUIRES(mu_);             called with mu_ held
//   void submit() EXCLUDES(mu_);                 takes mu_ itself
//
// The analysis is per function and sees only what is written: it follows a
// MutexLock through its scope, but not a lock taken in another function, so
// a helper that runs under the lock says so with REQUIRES. The names follow
// Clang's documentation (and Abseil's, which TensorFlow's TF_* mirror).
// NO_THREAD_SAFETY_ANALYSIS marks a function the analysis cannot follow
// (a lock handed over between threads); each use says why.

#if defined(__clang__)
#define BATCHSCOPE_THREAD_ATTR(x) __attribute__((x))
#else
#define BATCHSCOPE_THREAD_ATTR(x)
#endif

#define CAPABILITY(x) BATCHSCOPE_THREAD_ATTR(capability(x))
#define SCOPED_CAPABILITY BATCHSCOPE_THREAD_ATTR(scoped_lockable)
#define GUARDED_BY(x) BATCHSCOPE_THREAD_ATTR(guarded_by(x))
#define PT_GUARDED_BY(x) BATCHSCOPE_THREAD_ATTR(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) BATCHSCOPE_THREAD_ATTR(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) BATCHSCOPE_THREAD_ATTR(acquired_after(__VA_ARGS__))
#define REQUIRES(...) BATCHSCOPE_THREAD_ATTR(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) BATCHSCOPE_THREAD_ATTR(acquire_capability(__VA_ARGS__))
#define RELEASE(...) BATCHSCOPE_THREAD_ATTR(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) BATCHSCOPE_THREAD_ATTR(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) BATCHSCOPE_THREAD_ATTR(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) BATCHSCOPE_THREAD_ATTR(assert_capability(x))
#define RETURN_CAPABILITY(x) BATCHSCOPE_THREAD_ATTR(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS BATCHSCOPE_THREAD_ATTR(no_thread_safety_analysis)

// SPDX-License-Identifier: GPL-3.0-or-later
// The helper types of BasicEngine (basic_engine.h): a queued request, a
// request deadline in the heap, a lane's scratch space for the batch it
// runs, and two small helpers (the stage times of a request answered at
// once; an adaptive mutex for the engine's short-held locks).
// Thread-safety: plain values, guarded by the engine that holds them.

#pragma once

#include <pthread.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "batching/engine_types.h"
#include "batching/ring_queue.h"
#include "common/clock.h"
#include "runs/records.h"

namespace batchscope {

namespace engine_detail {

// A request admitted and not yet cut into a batch.
template <class In, class Done>
struct Pending {
  RequestId id;
  In input;
  Done done;
  StageTimes times;
  TimePoint expires;
  uint32_t length = 0;  // LengthOf's, at admission
};

// A queued request's deadline, in the engine's min-heap.
struct Expiry {
  TimePoint expires;
  RequestId id;
  bool operator>(const Expiry& o) const { return expires > o.expires; }
};

// What a lane reuses from batch to batch.
template <class In, class Pending>
struct LaneScratch {
  // The batch cut: moved out of the queue under the lock (the whole ring is
  // swapped when the batch takes every queued request); its inputs are
  // moved to `inputs` after the lock is released.
  RingQueue<Pending> batch;
  std::vector<In> inputs;
  std::vector<Pending> unrun;
  std::vector<RequestRecord> records;
  std::vector<uint32_t> lengths;  // the records' lengths, where they vary
  std::vector<size_t> picked;     // queue positions a padding policy picks
};

// The stage times of a request answered at once, never queued.
inline StageTimes refused_at(TimePoint t) { return StageTimes{t, t, {}, {}, {}, t}; }
// Makes a new, never locked std::mutex spin briefly before sleeping (glibc's
// adaptive mutex), for locks held for well under a microsecond by several
// threads at once: waiting in the kernel costs far more than the hold.
inline void make_adaptive(std::mutex& m) {
#if defined(__GLIBC__) && defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
  pthread_mutex_init(m.native_handle(), &a);
  pthread_mutexattr_destroy(&a);
#else
  (void)m;
#endif
}
}  // namespace engine_detail

}  // namespace batchscope

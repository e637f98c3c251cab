// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The parts of Future and Promise (future.h) below the API: the one-shot
// slot they share (a futex word, common/futex.h) and the per-thread cache of
// free slots. Linux only. Thread-safety: a slot is shared by one Promise and one
// Future; a cache belongs to its thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <future>
#include <new>
#include <utility>

#include "common/futex.h"

namespace batchscope {

namespace future_detail {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Checks made before a waiter sleeps, a pause apart: a few microseconds,
// short against a batch, long against a lane's answer loop. On 2 cores, 0
// to 256 gave the same req/s within the runs' spread, 256 the fewest futex
// calls (0.41-0.45 per request at B = 8, P = 8 against 0.52-0.55 with none),
// and 2048 lost half the throughput with 8 producers spinning.
inline constexpr int kSpins = 256;

enum : uint32_t {
  kReady = 1,    // the answer (or the broken promise) is in
  kWaiter = 2,   // the future's owner sleeps on the state, or is about to
  kForward = 4,  // the future became a std::future: the answer goes to `forward`
  kBroken = 8,   // the promise went without a value
};

template <class T>
struct Slot {
  std::atomic<uint32_t> state{0};
  std::atomic<uint32_t> refs{0};
  bool has_value = false;              // written before kReady is published
  std::promise<T>* forward = nullptr;  // written before kForward is published
  Slot* next = nullptr;                // in a cache
  alignas(T) unsigned char buf[sizeof(T)];

  T& value() { return *std::launder(reinterpret_cast<T*>(buf)); }
  void drop_value() {
    if (has_value) value().~T();
    has_value = false;
  }
};

// Free slots kept per thread, up to kKeep; a slot goes back to the cache of
// the thread that lets go of it last (usually the future's owner, after get).
template <class T>
class SlotCache {
 public:
  static Slot<T>* take() {
    List& l = list_;
    if (Slot<T>* s = l.head) {
      l.head = s->next;
      --l.count;
      return s;
    }
    return new Slot<T>;
  }
  static void give(Slot<T>* s) {
    List& l = list_;
    if (l.closed || l.count >= kKeep) {
      delete s;
      return;
    }
    if (l.count == 0) owner_.arm();  // its destructor frees the list at thread exit
    s->state.store(0, std::memory_order_relaxed);
    s->forward = nullptr;
    s->next = l.head;
    l.head = s;
    ++l.count;
  }

 private:
  static constexpr uint32_t kKeep = 4096;
  // Trivially destructible, so it stays usable while the thread exits.
  struct List {
    Slot<T>* head = nullptr;
    uint32_t count = 0;
    bool closed = false;
  };
  struct Owner {
    void arm() {}
    ~Owner() {
      List& l = list_;
      l.closed = true;
      while (Slot<T>* s = l.head) {
        l.head = s->next;
        delete s;
      }
      l.count = 0;
    }
  };
  static inline thread_local List list_;
  static inline thread_local Owner owner_;
};

template <class T>
void release(Slot<T>* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  s->drop_value();
  SlotCache<T>::give(s);
}

}  // namespace future_detail

}  // namespace batchscope

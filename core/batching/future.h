// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Future<T> and Promise<T>: one answer handed from one thread to another,
// as std::future and std::promise, without their system calls.
//
// std::promise::set_value goes through call_once, and glibc's pthread_once
// wakes a futex whether anyone waits or not: a system call per answer, and a
// std::future::get that finds no answer yet sleeps at once (a second) and is
// woken (a third). Here:
//   - set_value makes no system call unless the owner is asleep on it;
//   - get() on an answer that is there makes none;
//   - get() on one that is not spins briefly, then sleeps on a futex.
// The shared state is a slot from a per-thread cache, so a call allocates
// nothing once the cache is warm.
//
//   Promise<int> p;
//   Future<int> f = p.get_future();
//   std::thread t([p = std::move(p)]() mutable { p.set_value(42); });
//   int v = f.get();
//
// A promise dropped without a value breaks its future: get() throws
// std::future_error(broken_promise), as std's does. A Future converts to a
// std::future (move it: `std::future<T> s = std::move(f);`) for code that
// wants one; that std::future behaves as std's in every way, and costs what
// std's costs.
//
// Linux only (futex). Thread-safety: a Promise and its Future may be used
// from two threads at once; each one from one thread at a time.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <future>
#include <utility>

#include "batching/future_slot.h"

namespace batchscope {

template <class T>
class Promise;

template <class T>
class Future {
 public:
  Future() noexcept = default;
  Future(Future&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Future& operator=(Future&& o) noexcept {
    if (this != &o) {
      reset();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  Future(const Future&) = delete;
  Future& operator=(const Future&) = delete;
  ~Future() { reset(); }

  // False once get() has run, after a move, and when default-made.
  bool valid() const noexcept { return s_ != nullptr; }
  // The answer is in; get() will not wait. Needs valid().
  bool ready() const noexcept { return s_->state.load(std::memory_order_acquire) & kReady; }

  // Waits for the answer. Needs valid().
  void wait() const {
    if (spin()) return;
    uint32_t expected = 0;
    if (!s_->state.compare_exchange_strong(expected, kWaiter, std::memory_order_acq_rel)) return;
    while (!(s_->state.load(std::memory_order_acquire) & kReady))
      futex::wait(s_->state, kWaiter, nullptr);
  }

  // Waits at most `timeout` on the steady clock; as std::future::wait_for,
  // but gives a bool: true when ready. Needs valid().
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    using std::chrono::steady_clock;
    if (spin()) return true;
    const auto until = steady_clock::now() + timeout;
    uint32_t expected = 0;
    if (!s_->state.compare_exchange_strong(expected, kWaiter, std::memory_order_acq_rel))
      return true;
    while (!(s_->state.load(std::memory_order_acquire) & kReady)) {
      const auto left = until - steady_clock::now();
      if (left <= steady_clock::duration::zero()) {
        expected = kWaiter;  // stop asking to be woken, unless the answer came meanwhile
        return !s_->state.compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
      }
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      const timespec rel{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
      futex::wait(s_->state, kWaiter, &rel);
    }
    return true;
  }

  // Waits, then moves the answer out; the future is then not valid().
  // Throws std::future_error(broken_promise) when the promise went without
  // a value, and (no_state) when not valid().
  T get() {
    if (!s_) throw std::future_error(std::future_errc::no_state);
    wait();
    future_detail::Slot<T>* s = std::exchange(s_, nullptr);
    if (s->state.load(std::memory_order_acquire) & kBroken) {
      future_detail::release(s);
      throw std::future_error(std::future_errc::broken_promise);
    }
    T v = std::move(s->value());
    future_detail::release(s);
    return v;
  }

  // The std::future adapter: the answer, when it comes, goes to it. Leaves
  // this future not valid().
  operator std::future<T>() && {  // NOLINT: implicit, so std::future code keeps compiling
    if (!s_) throw std::future_error(std::future_errc::no_state);
    future_detail::Slot<T>* s = std::exchange(s_, nullptr);
    auto* p = new std::promise<T>;
    std::future<T> f = p->get_future();
    s->forward = p;
    uint32_t expected = 0;
    if (!s->state.compare_exchange_strong(expected, kForward, std::memory_order_acq_rel)) {
      // Already in: hand it over here.
      if (!(expected & kBroken)) p->set_value(std::move(s->value()));
      delete p;  // a promise without a value breaks its future
    }
    future_detail::release(s);
    return f;
  }

 private:
  static constexpr uint32_t kReady = future_detail::kReady;
  static constexpr uint32_t kWaiter = future_detail::kWaiter;
  static constexpr uint32_t kForward = future_detail::kForward;
  static constexpr uint32_t kBroken = future_detail::kBroken;

  friend class Promise<T>;
  explicit Future(future_detail::Slot<T>* s) noexcept : s_(s) {}

  bool spin() const {
    for (int i = 0; i < future_detail::kSpins; ++i) {
      if (ready()) return true;
      future_detail::cpu_relax();
    }
    return ready();
  }
  void reset() noexcept {
    if (s_) future_detail::release(std::exchange(s_, nullptr));
  }

  future_detail::Slot<T>* s_ = nullptr;
};

template <class T>
class Promise {
 public:
  Promise() : s_(future_detail::SlotCache<T>::take()) {
    s_->refs.store(2, std::memory_order_relaxed);
  }
  Promise(Promise&& o) noexcept : s_(std::exchange(o.s_, nullptr)), taken_(o.taken_) {}
  Promise& operator=(Promise&& o) noexcept {
    if (this != &o) {
      reset();
      s_ = std::exchange(o.s_, nullptr);
      taken_ = o.taken_;
    }
    return *this;
  }
  Promise(const Promise&) = delete;
  Promise& operator=(const Promise&) = delete;
  ~Promise() { reset(); }

  // Once; throws std::future_error(future_already_retrieved) the second time.
  Future<T> get_future() {
    if (!s_) throw std::future_error(std::future_errc::no_state);
    if (taken_) throw std::future_error(std::future_errc::future_already_retrieved);
    taken_ = true;
    return Future<T>(s_);
  }

  // Once; the promise is then empty. Throws std::future_error(no_state) on
  // an empty promise.
  void set_value(T v) {
    if (!s_) throw std::future_error(std::future_errc::no_state);
    future_detail::Slot<T>* s = std::exchange(s_, nullptr);
    if (!taken_) s->refs.fetch_sub(1, std::memory_order_relaxed);  // nobody will read it
    ::new (static_cast<void*>(s->buf)) T(std::move(v));
    s->has_value = true;
    publish(s, future_detail::kReady);
  }

 private:
  void reset() noexcept {
    if (!s_) return;
    future_detail::Slot<T>* s = std::exchange(s_, nullptr);
    if (!taken_) s->refs.fetch_sub(1, std::memory_order_relaxed);
    publish(s, future_detail::kReady | future_detail::kBroken);
  }

  static void publish(future_detail::Slot<T>* s, uint32_t bits) noexcept {
    const uint32_t before = s->state.fetch_or(bits, std::memory_order_acq_rel);
    if (before & future_detail::kForward) {
      if (s->has_value) {
        try {
          s->forward->set_value(std::move(s->value()));
        } catch (...) {  // only a throwing move of T: the std::future sees a broken promise
        }
      }
      delete s->forward;  // without a value, its future gets broken_promise
      s->forward = nullptr;
    }
    if (before & future_detail::kWaiter) futex::wake_all(s->state);
    future_detail::release(s);
  }

  future_detail::Slot<T>* s_ = nullptr;
  bool taken_ = false;
};

}  // namespace batchscope

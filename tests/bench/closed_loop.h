// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A closed-loop load for benchmarks: keeps up to `window` requests in flight
// against an engine, topping up whenever completions bring it down to
// `refill_at`, until `total` requests have completed.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "batching/engine.h"

namespace batchscope::bench {

class ClosedLoop {
 public:
  using MakeInput = std::function<Tensors(size_t i)>;

  ClosedLoop(Engine& e, size_t window, size_t refill_at, MakeInput make)
      : e_(e), window_(window), refill_(refill_at), make_(std::move(make)) {}

  // Submits each top-up with one submit_many() call instead of a submit()
  // per request.
  void use_submit_many() { many_ = true; }

  // Returns how many completed with an error.
  size_t run(size_t total) {
    size_t sent = 0;
    std::vector<Tensors> inputs;
    std::vector<Engine::Done> dones;
    while (sent < total) {
      {
        std::unique_lock g(mu_);
        cv_.wait(g, [&] { return in_flight_ <= refill_; });
      }
      while (sent < total && in_flight_.load() < window_) {
        Tensors in = make_(sent);
        ++in_flight_;
        ++sent;
        if (many_) {
          inputs.push_back(std::move(in));
          dones.push_back(callback());
        } else {
          e_.submit(std::move(in), callback());
        }
      }
      if (many_) {
        e_.submit_many(inputs, dones);
        inputs.clear();
        dones.clear();
      }
    }
    std::unique_lock g(mu_);
    cv_.wait(g, [&] { return in_flight_ == 0; });
    return errors_;
  }

 private:
  Engine::Done callback() {
    return [this](TensorResponse&& r) {
      if (!r.result.ok()) ++errors_;
      const size_t n = --in_flight_;
      if (n == refill_ || n == 0) {
        std::lock_guard g(mu_);
        cv_.notify_one();
      }
    };
  }

  Engine& e_;
  bool many_ = false;
  size_t window_, refill_;
  MakeInput make_;
  std::atomic<size_t> in_flight_{0};
  std::atomic<size_t> errors_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace batchscope::bench

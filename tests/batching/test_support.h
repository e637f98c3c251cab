// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers shared by the engine tests: waiting for the engine to settle under a
// manual clock, collecting responses, and runners a test can hold or break.
// Every wait has a real-time safety timeout so a bug fails fast, not hangs.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "batching/engine.h"
#include "batching/synthetic_runner.h"

namespace batchscope::test {

inline constexpr auto kSafety = std::chrono::seconds(20);

// Waits until the engine has nothing left to do at the clock's current time:
// no lane busy, the leader parked at a future deadline, no wake-up in flight.
// It looks again at once a few times (settling usually takes microseconds),
// then sleeps between looks, doubling from 50 us up to 2 ms, so that a slow
// settle does not spin a core the engine's threads need.
inline void settle(const Engine& engine) {
  const auto give_up = std::chrono::steady_clock::now() + kSafety;
  auto pause = std::chrono::microseconds(50);
  for (int looks = 0; !engine.status().quiescent; ++looks) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "engine did not settle";
    if (looks < 16) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
  }
}

inline Tensors input_of(float v, int n = 4) {
  std::vector<float> x(static_cast<size_t>(n), v);
  Tensors t;
  t.push_back(Tensor::from_floats(x));
  return t;
}

// Collects every response, keyed by request id, and counts callbacks per id.
class Collector {
 public:
  Engine::Done callback() {
    return [this](TensorResponse&& r) {
      std::lock_guard g(mu_);
      if (r.id == 0) {
        rejected_.push_back(r.result.error());
      } else {
        ++calls_[r.id];
        responses_.emplace(r.id, std::move(r));
      }
      cv_.notify_all();
    };
  }
  bool wait_for(size_t n) {
    std::unique_lock g(mu_);
    return cv_.wait_for(g, kSafety, [&] { return responses_.size() + rejected_.size() >= n; });
  }
  size_t size() const {
    std::lock_guard g(mu_);
    return responses_.size();
  }
  const TensorResponse& at(RequestId id) const {
    std::lock_guard g(mu_);
    return responses_.at(id);
  }
  bool has(RequestId id) const {
    std::lock_guard g(mu_);
    return responses_.count(id) > 0;
  }
  std::map<RequestId, int> calls() const {
    std::lock_guard g(mu_);
    return calls_;
  }
  std::vector<Error> rejected() const {
    std::lock_guard g(mu_);
    return rejected_;
  }
  template <class F>
  void for_each(F f) const {
    std::lock_guard g(mu_);
    for (const auto& [id, r] : responses_) f(r);
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<RequestId, TensorResponse> responses_;
  std::map<RequestId, int> calls_;
  std::vector<Error> rejected_;
};

// What every runner in a test saw: the first input value of each request of
// each batch, in order.
struct BatchLog {
  std::mutex mu;
  std::vector<std::vector<float>> batches;
  void add(std::span<Tensors> in) {
    std::vector<float> firsts;
    for (const Tensors& t : in) firsts.push_back(t.at(0).as<float>()[0]);
    std::lock_guard g(mu);
    batches.push_back(std::move(firsts));
  }
  std::vector<std::vector<float>> snapshot() {
    std::lock_guard g(mu);
    return batches;
  }
};

// A runner that logs its batches, can be told to fail, and can be held at
// the start of a batch until the test releases it.
class TestRunner final : public Runner {
 public:
  struct Control {
    std::mutex mu;
    std::condition_variable cv;
    bool hold = false;    // batches block until released
    int entered = 0;      // batches that have started
    int released = 0;     // batches allowed to finish
    bool fail = false;    // return an error
    bool throw_ = false;  // throw
    int wrong_count = 0;  // return this many extra outputs
    BatchLog log;

    void release(int n = 1) {
      std::lock_guard g(mu);
      released += n;
      cv.notify_all();
    }
    int entered_count() {
      std::lock_guard g(mu);
      return entered;
    }
    bool await_entered(int n) {
      std::unique_lock g(mu);
      return cv.wait_for(g, kSafety, [&] { return entered >= n; });
    }
  };

  explicit TestRunner(std::shared_ptr<Control> c) : c_(std::move(c)) {}

  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    c_->log.add(inputs);
    {
      std::unique_lock g(c_->mu);
      const int me = c_->entered++;
      c_->cv.notify_all();
      if (c_->hold) c_->cv.wait_for(g, kSafety, [&] { return c_->released > me; });
      if (c_->throw_) throw std::runtime_error("boom");
      if (c_->fail) return Error{ErrorCode::kModelError, "test model failed"};
    }
    std::vector<Tensors> out;
    for (const Tensors& in : inputs) {
      Tensors o;
      o.push_back(SyntheticRunner::expected_output(in.at(0)));
      out.push_back(std::move(o));
    }
    for (int i = 0; i < c_->wrong_count; ++i) out.push_back({});
    return out;
  }

  static RunnerFactory factory(std::shared_ptr<Control> c) {
    return [c](int) { return std::make_unique<TestRunner>(c); };
  }

 private:
  std::shared_ptr<Control> c_;
};

}  // namespace batchscope::test

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Batching for any function, for library users: give it a handler that maps
// a batch of inputs to a batch of outputs, then call it one input at a time
// from any thread; calls are grouped into batches behind the scenes under
// the same options, strategies and guarantees as the tensor engine.
//
//   BatchedFn<std::string, size_t> lengths(
//       [](std::span<std::string> in) {
//         std::vector<size_t> out;
//         for (auto& s : in) out.push_back(s.size());
//         return out;
//       },
//       Options{.max_batch_size = 16, .max_wait_us = 500});
//   Expected<size_t> n = lengths.call("hello").get();  // a batchscope::Future
//   if (!n && n.error().code == ErrorCode::kQueueFull) { /* shed load */ }
//
// call() answers with a Future (batching/future.h): no system call to hand
// over an answer nobody is waiting for yet, or to take one that is there. It
// converts to a std::future for code that wants one, at std::future's cost.
//
// The handler runs on lane threads (concurrently when num_lanes > 1) and
// must return one output per input, in order; an exception fails that batch.
// Thread-safety: call() and set_options() are thread-safe.

#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "batching/basic_engine_impl.h"
#include "batching/future.h"

namespace batchscope {

template <class In, class Out>
class BatchedFn {
 public:
  using Handler = std::function<std::vector<Out>(std::span<In>)>;

  // Throws std::invalid_argument if the options are invalid (strategy =
  // adaptive needs `planner`: core/tuning's make_adaptive_plan).
  BatchedFn(Handler handler, Options options = {}, std::shared_ptr<Clock> clock = nullptr,
            AdaptivePlanner planner = nullptr)
      : engine_(make_factory(std::move(handler)), options, std::move(clock)) {
    engine_.set_record_capacity(0);  // nobody drains them here
    engine_.set_adaptive_planner(planner);
    if (Status s = engine_.start(); !s) throw std::invalid_argument(s.message());
  }
  ~BatchedFn() { engine_.stop(StopMode::kDrain); }

  // Resolves to the output, or to an Error: kQueueFull (at once, when the
  // queue is full), kTimedOut, kModelError (the handler threw), kShuttingDown.
  Future<Expected<Out>> call(In input) {
    Promise<Expected<Out>> promise;
    Future<Expected<Out>> f = promise.get_future();
    engine_.submit(std::move(input), [p = std::move(promise)](Response<Out>&& r) mutable {
      p.set_value(std::move(r.result));
    });
    return f;
  }

  // Several calls at once, admitted under one lock: one future per input, in
  // order; each resolves as call()'s does.
  std::vector<Future<Expected<Out>>> call_many(std::vector<In> inputs) {
    std::vector<Future<Expected<Out>>> futures;
    std::vector<Done> dones;
    futures.reserve(inputs.size());
    dones.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      Promise<Expected<Out>> promise;
      futures.push_back(promise.get_future());
      dones.emplace_back([p = std::move(promise)](Response<Out>&& r) mutable {
        p.set_value(std::move(r.result));
      });
    }
    engine_.submit_many(std::span<In>(inputs), std::span<Done>(dones));
    return futures;
  }

  // Callback form: `done` runs exactly once, on a lane thread or (for an
  // immediate rejection) on the caller's.
  void call(In input, std::function<void(Expected<Out>)> done) {
    engine_.submit(std::move(input),
                   [done = std::move(done)](Response<Out>&& r) { done(std::move(r.result)); });
  }

  Status set_options(const Options& o) { return engine_.set_options(o); }
  EngineStatus status() const { return engine_.status(); }

 private:
  using Done = typename BasicEngine<In, Out>::Done;

  class HandlerRunner final : public BasicRunner<In, Out> {
   public:
    explicit HandlerRunner(std::shared_ptr<Handler> h) : handler_(std::move(h)) {}
    Expected<std::vector<Out>> run(std::span<In> inputs) override { return (*handler_)(inputs); }

   private:
    std::shared_ptr<Handler> handler_;
  };

  static BasicRunnerFactory<In, Out> make_factory(Handler handler) {
    auto shared = std::make_shared<Handler>(std::move(handler));
    return [shared](int) { return std::make_unique<HandlerRunner>(shared); };
  }

  BasicEngine<In, Out> engine_;
};

}  // namespace batchscope

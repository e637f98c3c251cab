// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A runner executes one batch on one model instance. The engine gives each
// lane its own runner, made by a RunnerFactory on that lane's thread.
//
// Contract: run() returns exactly one output per input, in input order, or an
// Error that fails the whole batch. An exception thrown by run() is caught by
// the engine and fails the batch with its message; the lane keeps serving.
// Thread-safety: one lane thread calls a given runner; never concurrently.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "batching/callback.h"
#include "common/clock.h"
#include "common/options.h"
#include "common/status.h"

namespace batchscope {

template <class In, class Out>
class BasicRunner {
 public:
  virtual ~BasicRunner() = default;
  // `inputs` may be moved from.
  virtual Expected<std::vector<Out>> run(std::span<In> inputs) = 0;
  // Called once on the lane's own thread before its first batch; the engine's
  // start() returns once every lane has been through it. A library that keeps
  // state per thread warms it here: PyTorch keeps cuDNN's plans per thread,
  // and a plan missing costs a GPU batch about 5 ms. An error means the lane
  // cannot serve.
  virtual Status prepare() { return Status::Ok(); }
  // A runner whose model instance is lost (a worker process that died or
  // was killed for running too long) says so here after the failed batch;
  // the lane then calls recover() instead of taking another batch, so the
  // requests still queued wait for a lane that can run them. recover()
  // makes one attempt (it may wait a backoff first) and is called again,
  // between checks for the engine stopping, until needs_recovery() is false;
  // a stopping engine calls it no more.
  virtual bool needs_recovery() const { return false; }
  virtual void recover() {}
  // A runner that may fail single requests of a batch it ran (a Python
  // model's preprocess or postprocess, run on the lane) says which after
  // run() returned: faults[i] not ok answers request i with its error (the
  // output run() gave for it is dropped). Empty: none failed.
  virtual std::span<const Status> request_faults() const { return {}; }
  // After a run() that answered: how long of it went to work after the
  // model, for each request one after another (a Python model's
  // postprocess); zero where there is none.
  virtual Duration last_postprocess() const { return Duration::zero(); }
  // After a run() that answered: how long of it went to preparing its
  // requests before the model, at its start (a Python model's lane
  // preprocessing at preprocess_workers 0); zero where there was none.
  virtual Duration last_preprocess() const { return Duration::zero(); }
  // After such a run: each request's length as it was prepared, where the
  // prepared inputs vary in size (0 for one whose preparing failed); empty
  // where the runner prepared nothing or nothing varies.
  virtual std::span<const uint32_t> last_lengths() const { return {}; }
};

// A stage every request goes through before it is admitted to the queue (a
// Python model's preprocess, run in a pool of processes), so that batches
// form from requests it has prepared while the lanes run earlier batches.
// prepare() takes the request's input and calls `next` exactly once, on any
// thread, with the input to queue or the error that answers the request;
// it must call it even while the stage is being reconfigured or torn down.
// configure() is called by the engine's start() (which fails with its
// error) and set_options() (which applies the rest and returns it), from
// the thread that calls them.
// What a prepare stage calls with a request it was given: the input to
// queue, or the error that answers it. started() says when the stage began
// the request's own work (a process took it; on the steady clock, the
// engine's), so the time before is the stage's queue; not called, the
// request's records keep no start (StageTimes::prepare_start).
template <class In>
class PrepareNext {
 public:
  using Timed = Callback<void(Expected<In>&&, TimePoint started)>;
  PrepareNext() = default;
  explicit PrepareNext(Timed done) : done_(std::move(done)) {}
  // Any callable taking the result alone (its start is not wanted).
  template <class F>
  requires(!std::is_same_v<std::decay_t<F>, PrepareNext> &&
           !std::is_same_v<std::decay_t<F>, Timed> && std::is_invocable_v<F&, Expected<In>&&>)
      PrepareNext(F&& f)  // NOLINT: as a Callback
      : done_([f = std::forward<F>(f)](Expected<In>&& got, TimePoint) mutable {
          f(std::move(got));
        }) {}
  void started(TimePoint t) { started_ = t; }
  void operator()(Expected<In>&& got) { done_(std::move(got), started_); }
  explicit operator bool() const { return static_cast<bool>(done_); }

 private:
  Timed done_;
  TimePoint started_{};
};

template <class In>
class BasicPrepareStage {
 public:
  using Next = PrepareNext<In>;
  virtual ~BasicPrepareStage() = default;
  virtual void prepare(In&& input, Next next) = 0;
  virtual Status configure(const Options& options) = 0;
  // A request it prepared: its length where the prepared inputs vary in
  // size (request_length() of what the lanes take), which its batch's
  // padding record counts; 0 otherwise. Any thread.
  virtual uint32_t length(const In& /*input*/) const { return 0; }
};

// How a model whose instances are processes of their own fares (a Python
// model's workers): /health, /metrics and the window show it.
struct WorkerHealth {
  int ready = 0;          // workers started and not lost
  uint64_t restarts = 0;  // started again after a loss
  uint64_t deaths = 0;    // died with a batch or while idle
  uint64_t timeouts = 0;  // killed for running past the time limit
};

// Makes the runner for lane `lane` (0-based). Returning nullptr or throwing
// means the lane cannot serve; the engine reports it.
template <class In, class Out>
using BasicRunnerFactory = std::function<std::unique_ptr<BasicRunner<In, Out>>(int lane)>;

}  // namespace batchscope

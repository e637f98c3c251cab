// SPDX-License-Identifier: GPL-3.0-or-later
// A Python model's preprocess pool: preprocess_workers processes, each
// running the handler's class, that take each request as it arrives,
// before the batcher, and give back what predict takes. Batches then form
// from prepared requests while the lanes run earlier ones: the engine's
// prepare stage (batching/runner.h's BasicPrepareStage).
//
//   - Each request goes to the first free process, in arrival order, as
//     one command through its region (worker_client.h); a BYTES input
//     arrives in Python as bytes.
//   - What comes back is checked against predict's inputs and marked
//     prepared (python_runner.h), so a lane does not prepare it again.
//   - preprocess raised or gave the wrong arrays: that request alone is
//     answered 500 with the message. A process that dies or runs past
//     worker_timeout_ms: its request is answered 503 or 504, and it is
//     restarted with a capped backoff while the others serve.
//   - preprocess_workers changes live (Options): processes are added or
//     retired; at 0 the pool hands each request on as it came, and the
//     lane prepares it.
// Thread-safety: prepare() and configure() from any thread; one thread a
// process runs the commands; `next` is called on those threads (or on the
// caller's, at 0 processes).

#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "batching/engine.h"
#include "python/worker_client.h"

namespace batchscope {

class PreprocessPool final : public BasicPrepareStage<Tensors> {
 public:
  // `setup`: the model's, with counts of the pool's own.
  explicit PreprocessPool(WorkerSetup setup);
  ~PreprocessPool() override;  // retires every process; a request still queued is answered

  void prepare(Tensors&& input, Next next) override;
  // The first call starts options.preprocess_workers processes and waits
  // until they are ready (a handler that fails is its error); later calls
  // add or retire processes and return at once.
  Status configure(const Options& options) override;
  // A request a process prepared, where predict's inputs vary in size.
  uint32_t length(const Tensors& input) const override;

  // The pool's processes: ready, restarts, deaths, timeouts.
  WorkerHealth health() const { return setup_.counts->health(); }
  int size() const;

 private:
  struct Item {
    Tensors input;
    Next next;
  };
  void process_loop(int index);
  // One request through `client`; its answer goes to item.next.
  void run_one(WorkerClient& client, Item& item);
  // Hands every queued request on unprepared (no process is left).
  void pass_all(std::unique_lock<std::mutex>& lk);

  WorkerSetup setup_;
  ModelMetadata prepared_;  // preprocess's answer: predict's inputs, as outputs
  uint64_t answer_bytes_ = 0;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable ready_cv_;
  std::deque<Item> queue_;
  std::vector<std::thread> threads_;  // index i runs while i < target_
  std::vector<bool> running_;         // thread i has not ended
  int target_ = 0;
  bool configured_ = false;
  bool stopping_ = false;
  int starting_ = 0;         // processes of the first configure() not yet ready or failed
  std::string start_error_;  // the first that failed
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// A lane of a Python model: one worker process running the handler's class,
// fed whole batches through a shared-memory region (worker_protocol.h).
//
// prepare() starts the worker on the lane's own thread and waits until it
// has imported the file, constructed the class and warmed it; a handler
// that fails there fails the lane with its traceback. run() stacks the
// batch's inputs into the region once (padding variable dimensions to the
// batch's longest), rings the worker, waits, and splits the outputs it
// wrote into one result per request (a variable dimension that came back
// as long as the padding is cut to the request's own length).
//
// Faults stay with the batch that met them:
//   - predict raised, or returned the wrong outputs: the batch fails
//     (kModelError) with the worker's message; the worker stays;
//   - the worker died (a signal, an exit, the out-of-memory killer): the
//     batch fails with kUnavailable, naming how it ended and quoting its
//     last lines; the lane then restarts it (needs_recovery()), waiting
//     100 ms, 200 ms, ... up to 5 s between failed attempts;
//   - predict ran past worker_timeout_ms: the worker is killed, the batch
//     fails with kModelTimedOut, and the lane restarts it.
// Thread-safety: one lane's thread uses a runner; WorkerCounts are shared.

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "batching/engine.h"
#include "common/model_metadata.h"
#include "python/python_handler.h"
#include "python/worker_protocol.h"

namespace batchscope {

// What a Python model's lanes report together (/health, /metrics, the window).
struct WorkerCounts {
  std::atomic<int> ready{0};          // workers started and not lost
  std::atomic<uint64_t> restarts{0};  // workers started again after a loss
  std::atomic<uint64_t> deaths{0};    // workers that died with a batch or while idle
  std::atomic<uint64_t> timeouts{0};  // workers killed for running past the timeout
  WorkerHealth health() const {
    return {ready.load(), restarts.load(), deaths.load(), timeouts.load()};
  }
};

struct WorkerSetup {
  PythonSpec spec;
  ModelMetadata metadata;
  uint32_t warm_batch = 1;  // warm-up runs predict at 1 and at this batch size
  // OMP/MKL/OpenBLAS threads in each worker, where the environment does not
  // set them; 0: the cores over the lanes.
  int threads = 0;
  int lanes = 1;
  std::shared_ptr<WorkerCounts> counts = std::make_shared<WorkerCounts>();
};

class PythonRunner final : public Runner {
 public:
  PythonRunner(WorkerSetup setup, int lane);
  ~PythonRunner() override;  // asks the worker to quit, then kills it if it lingers

  Status prepare() override;
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override;
  bool needs_recovery() const override { return lost_; }
  void recover() override;

  // The worker's process id; -1 when none runs.
  int pid() const;
  // predict's own time in the last batch, as the worker measured it.
  uint64_t last_predict_ns() const { return last_predict_ns_; }
  // The region's size now.
  size_t region_bytes() const;

 private:
  struct Worker;
  Status start();
  void stop_worker();
  Expected<std::vector<Tensors>> exchange(std::span<Tensors> inputs);
  // Waits until the worker answers this batch's latest command (its
  // sequence), dies, or `deadline_ms` (steady clock) passes; `answered`: the
  // answer was already seen. The reply, or the batch's error.
  Expected<worker::Reply> await_answer(int64_t deadline_ms, uint32_t batch, bool answered);
  Error lose(ErrorCode code, std::string message);

  WorkerSetup setup_;
  int lane_ = 0;
  std::string label_;  // "scoring.py lane 0"
  std::unique_ptr<Worker> worker_;
  bool lost_ = false;
  int failed_starts_ = 0;
  uint64_t seq_ = 0;
  uint64_t last_predict_ns_ = 0;
};

// The factory an engine's lanes make their runners with.
RunnerFactory python_runner_factory(WorkerSetup setup);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// One worker process running a Python model's class, seen from Batchscope:
// its shared-memory region and eventfds, starting it (import, construct,
// warm), sending it a command and waiting for the answer, and what happens
// when it is lost. A lane's runner (python_runner.h) and each process of a
// preprocess pool (preprocess_pool.h) drive one.
//
//   - A worker that dies (a signal, an exit, the out-of-memory killer) or
//     runs past the time limit is lost: the command's error names how it
//     ended and quotes its last lines; recover() starts it again, waiting
//     100 ms, 200 ms, ... up to 5 s between failed attempts.
//   - A region too small for an answer grows when the worker asks, up to
//     the spec's limit; past it the worker lets go of the answer.
// Thread-safety: one thread drives a client; WorkerCounts are shared.

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "batching/runner.h"
#include "common/model_metadata.h"
#include "common/status.h"
#include "python/python_handler.h"
#include "python/worker_protocol.h"

namespace batchscope {

// What a set of workers (a model's lanes, or its preprocess pool) report
// together (/health, /metrics, the window).
struct WorkerCounts {
  std::atomic<int> ready{0};          // workers started and not lost
  std::atomic<uint64_t> restarts{0};  // workers started again after a loss
  std::atomic<uint64_t> deaths{0};    // workers that died with work or while idle
  std::atomic<uint64_t> timeouts{0};  // workers killed for running past the timeout
  WorkerHealth health() const {
    return {ready.load(), restarts.load(), deaths.load(), timeouts.load()};
  }
};

struct WorkerSetup {
  PythonSpec spec;
  // What predict takes and gives (the class's inputs and outputs).
  ModelMetadata metadata;
  // What requests send and get: the class's request_inputs and
  // response_outputs where it has preprocess or postprocess, else metadata.
  ModelMetadata served;
  bool has_preprocess = false;
  bool has_postprocess = false;
  uint32_t warm_batch = 1;  // warm-up runs predict at 1 and at this batch size
  // OMP/MKL/OpenBLAS threads in each worker, where the environment does not
  // set them; 0: the cores over the lanes.
  int threads = 0;
  int lanes = 1;
  std::shared_ptr<WorkerCounts> counts = std::make_shared<WorkerCounts>();
};

class WorkerClient {
 public:
  // `label` names the worker in messages and in its output's prefix
  // ("scoring.py lane 0").
  WorkerClient(const WorkerSetup& setup, std::string label);
  ~WorkerClient();  // asks the worker to quit, then kills it if it lingers
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  // Starts the worker and waits until it is ready; the handler's traceback
  // where it fails to import, construct or warm up.
  Status start();
  bool lost() const { return lost_; }
  // One attempt to start a lost worker again, after its backoff.
  void recover();
  // A worker that died while idle: its error (it is then lost).
  Status check_alive();

  // The region, to write a command's inputs into; valid until grow().
  std::byte* region();
  size_t region_size() const;
  // Grows the region to at least `bytes` and tells the worker its size.
  Status grow(size_t bytes);

  // Writes one request's tensors (declared by `specs`) into the table from
  // slot 0 with a batch dimension of 1 (a BYTES tensor as its bytes),
  // growing the region to hold them and `answer_bytes` after them; where
  // the answer may start. Every size is checked against the limit first.
  Expected<uint64_t> write_request(const Tensors& request, const std::vector<TensorSpec>& specs,
                                   uint64_t answer_bytes);

  // Sends `command` with `flags` for `batch` requests whose inputs are in
  // the region, and waits for its answer until `deadline_ms` (steady
  // clock), growing the region when the worker asks for room. `what` names
  // the work in a timeout's message ("predict", "preprocess"). A lost
  // worker's error (kUnavailable, kModelTimedOut), or one refusing room.
  Expected<worker::Reply> call(worker::Command command, uint32_t flags, uint32_t batch,
                               int64_t deadline_ms, const char* what);
  // The worker's own time for the last command's handler call.
  uint64_t last_ns() const { return last_ns_; }
  // postprocess's own time in the last predict's answer; 0 without.
  uint64_t last_post_ns() const { return last_post_ns_; }
  int pid() const;
  const std::string& label() const { return label_; }
  // Marks the worker lost and returns the error that says so.
  Error lose(ErrorCode code, std::string message);

 private:
  struct Worker;
  void stop();
  Expected<worker::Reply> await_answer(int64_t deadline_ms, uint32_t batch, bool answered,
                                       const char* what);

  const WorkerSetup& setup_;
  std::string label_;
  std::unique_ptr<Worker> worker_;
  bool lost_ = false;
  int failed_starts_ = 0;
  uint64_t seq_ = 0;
  uint64_t last_ns_ = 0;
  uint64_t last_post_ns_ = 0;
};

// The JSON a worker reads its metadata from: {"model": ..., "served": ...}.
std::string region_metadata_json(const WorkerSetup& setup);

}  // namespace batchscope

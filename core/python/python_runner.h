// SPDX-License-Identifier: GPL-3.0-or-later
// A lane of a Python model: one worker process running the handler's class
// (worker_client.h), fed whole batches through its shared-memory region.
//
// prepare() starts the worker on the lane's own thread and waits until it
// has imported the file, constructed the class and warmed it; a handler
// that fails there fails the lane with its traceback. run() stacks the
// batch's inputs into the region once (padding variable dimensions to the
// batch's longest), rings the worker, waits, and splits the outputs it
// wrote into one result per request (a variable dimension that came back
// as long as the padding is cut to the request's own length).
//
// A class with preprocess: requests its pool prepared (preprocess_pool.h)
// arrive marked so; where any request of a batch is not (the pool has no
// workers), the lane sends each request through the worker's preprocess
// one at a time, the worker keeping the results, and then predicts on those
// it kept. A class with postprocess: the worker runs it on each row after
// predict and answers what requests get. A request whose preprocess or
// postprocess fails gets its own error (request_faults()); the rest of the
// batch is answered.
//
// Faults stay with the batch that met them:
//   - predict raised, or returned the wrong outputs: the batch fails
//     (kModelError) with the worker's message; the worker stays;
//   - the worker died or ran past worker_timeout_ms: the batch fails with
//     kUnavailable or kModelTimedOut; the lane then restarts it
//     (needs_recovery()).
// Thread-safety: one lane's thread uses a runner; WorkerCounts are shared.

#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "batching/engine.h"
#include "python/worker_client.h"

namespace batchscope {

class PythonRunner final : public Runner {
 public:
  PythonRunner(WorkerSetup setup, int lane);

  Status prepare() override { return client_.start(); }
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override;
  bool needs_recovery() const override { return client_.lost(); }
  void recover() override { client_.recover(); }
  std::span<const Status> request_faults() const override { return faults_; }
  Duration last_postprocess() const override { return Duration(client_.last_post_ns()); }
  Duration last_preprocess() const override { return last_pre_; }
  std::span<const uint32_t> last_lengths() const override { return last_lengths_; }

  // The worker's process id; -1 when none runs.
  int pid() const { return client_.pid(); }
  // predict's own time in the last batch, as the worker measured it.
  uint64_t last_predict_ns() const { return client_.last_ns(); }
  // The region's size now.
  size_t region_bytes() const { return client_.region_size(); }

 private:
  // Stacks prepared requests into the region and predicts on them.
  Expected<std::vector<Tensors>> predict(std::span<Tensors> reqs, int64_t deadline);
  // Sends each request through the worker's preprocess, then predicts on
  // those it kept; a request that failed there has its fault.
  Expected<std::vector<Tensors>> prepare_then_predict(std::span<Tensors> reqs, int64_t deadline);
  // Reads the answer to a predict on `batch` rows into one result per row.
  // `lengths`: each row's length where its inputs vary (empty: unknown,
  // nothing is cut); faults of postprocess go to faults_[rows[i]].
  Expected<std::vector<Tensors>> read_answer(uint32_t batch, worker::Reply reply,
                                             const std::vector<int64_t>& lengths,
                                             const std::vector<size_t>& rows);
  uint32_t predict_flags() const;

  WorkerSetup setup_;
  WorkerClient client_;
  ModelMetadata answer_;  // what a predict's answer holds in the region
  std::vector<Status> faults_;
  std::vector<bool> prepared_;          // which requests of the batch the pool prepared
  Duration last_pre_{0};                // the last batch's preparing on this lane
  std::vector<uint32_t> last_lengths_;  // its requests' prepared lengths
};

// The factory an engine's lanes make their runners with.
RunnerFactory python_runner_factory(WorkerSetup setup);

// A request its preprocess pool prepared carries this mark after its
// inputs, so that a lane does not prepare it again.
void mark_prepared(Tensors& request);
// Whether `request` has the mark; takes it off if so.
bool take_prepared_mark(Tensors& request);
bool has_prepared_mark(const Tensors& request);

// A request's preprocess failed: raised (its input could not be read:
// kInvalidArgument, 422 over HTTP) or gave arrays that do not fit predict
// (the handler's fault: kModelError, 500).
Error preprocess_fault(worker::Reply reply, std::string message);

// What a predict with postprocess answers in the region: each served output
// (a BYTES one as UINT8 rows padded to the longest), then, where any is
// BYTES, an INT64 entry of every row's lengths.
ModelMetadata answer_layout(const ModelMetadata& served);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Turns the engine's record stream (what EngineMonitor::last_records() hands
// out on each poll) into a RunData, the same value `batchscope bench` records,
// so that summarize_run() and the run exports work on a stretch of live
// traffic in the workbench.
//
// A run spans [start, end): it keeps the requests that arrived in that span,
// the batches cut in it and the depth samples taken in it. The engine has no
// separate intended and actual send time, so both are the arrival time; a
// request is done when its callback ran, or at the latest stage it reached.
// A request is reported by the engine only once it has finished, so one still
// in flight when the run finishes is not in the run. Each request's stage
// times count in the run's stages as it is kept (finish() is given an end no
// earlier than the arrivals already reported, so none is counted that the
// run then drops).
//
// Pure: every time comes from the records and the arguments, never a clock.
// Memory grows with the run (about 64 bytes a request); add() costs time
// proportional to the records it is given, finish() sorts once.
// Thread-safety: owner thread only.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/clock.h"
#include "runs/records.h"
#include "runs/run_record.h"

namespace batchscope {

class RunRecorder {
 public:
  // Begins a run at `start`, under `config`; a run under way is dropped.
  void start(RunConfig config, TimePoint start);
  // Keeps what falls in the run; does nothing when no run is under way.
  void add(const RecordBatch& records);
  // Ends the run at `end` and returns it: requests sorted by arrival and
  // indexed 0, 1, 2, ... in that order, batches by cut time, depth samples by
  // time; config.duration_s is end - start. Without a run under way, returns
  // an empty RunData starting at `end`.
  RunData finish(TimePoint end);

  bool recording() const { return recording_; }
  TimePoint start_time() const { return run_.start; }
  // Requests kept so far (some may still fall after the end given to finish()).
  size_t requests() const { return run_.requests.size(); }
  size_t batches() const { return run_.batches.size(); }
  // What has been kept so far, in the order add() kept it (requests are
  // not yet sorted or indexed); a history appends from it as it grows.
  const RunData& so_far() const { return run_; }
  // Records the engine lost while this run was under way because its buffer
  // was full; a run with any is incomplete.
  uint64_t dropped() const { return dropped_; }

 private:
  bool recording_ = false;
  RunData run_;
  uint64_t dropped_ = 0;
};

// The RunRequest that the engine's record of a request stands for.
RunRequest run_request_of(const RequestRecord& r);

}  // namespace batchscope

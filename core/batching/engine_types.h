// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Values the engine hands out: per-request responses, submit options, and the
// status snapshot. Thread-safety: plain values.

#include <cstdint>
#include <optional>
#include <string>

#include "batching/strategy.h"
#include "common/clock.h"
#include "common/options.h"
#include "common/status.h"
#include "runs/records.h"

namespace batchscope {

// What a request's callback receives, exactly once.
template <class Out>
struct Response {
  RequestId id = 0;
  Expected<Out> result;
  StageTimes times;
  uint64_t batch_id = 0;    // 0 when it never rode in a batch
  uint32_t batch_size = 0;  // size of that batch
};

struct SubmitOptions {
  // Absolute deadline; the earlier of this and arrival + request_timeout_ms
  // applies. A request still queued then fails with kTimedOut.
  std::optional<TimePoint> deadline;
};

enum class StopMode {
  kDrain,  // run everything already admitted, then stop
  kFail,   // fail what is queued with kShuttingDown; let running batches finish
};

// Cumulative, exact counts since start.
struct EngineCounters {
  uint64_t submitted = 0;
  uint64_t admitted = 0;
  uint64_t rejected = 0;  // queue full, or submitted while stopping
  uint64_t invalid = 0;   // refused by the validator: the input does not fit the model
  uint64_t ok = 0;
  uint64_t timed_out = 0;
  uint64_t cancelled = 0;
  uint64_t model_errors = 0;
  uint64_t shutdown = 0;  // admitted, then failed because the engine stopped
  uint64_t batches = 0;
  uint64_t batches_by_reason[kBatchReasonCount] = {};
  uint64_t failed_batches = 0;
  uint64_t wakeups = 0;  // notifications sent to a sleeping engine thread
  uint64_t callback_exceptions = 0;
  uint64_t records_dropped = 0;
  uint64_t plans = 0;  // the strategy's slow work done (adaptive plans)

  uint64_t completed() const { return ok + timed_out + cancelled + model_errors + shutdown; }
};

struct EngineStatus {
  Options options;               // in force
  uint64_t options_version = 0;  // bumped by every accepted set_options()
  Limits limits;                 // what the strategy applies now
  size_t queue_depth = 0;
  // Requests handed to the prepare stage and not yet given back (a Python
  // model's preprocess pool); they count against queue_capacity.
  size_t preparing = 0;
  uint32_t busy_lanes = 0;  // lanes running a batch or its callbacks
  uint32_t live_lanes = 0;
  double arrival_rate_per_s = 0;
  bool running = false;  // started and not stopping
  // True when every lane not running a batch waits on the clock (the
  // leader) or for its turn, and nothing else is pending. Then `idle_until`
  // is the next deadline not a batch's end.
  bool at_rest = false;
  // `at_rest` with no batch running and a lane leading: the engine has
  // nothing to do until a new submit, an options change, or the clock
  // reaching `idle_until`; tests wait for this.
  bool quiescent = false;
  TimePoint idle_until = kNever;
  std::string lane_error;  // why a lane could not start, if one could not
  EngineCounters counters;
};

}  // namespace batchscope

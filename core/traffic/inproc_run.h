// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One run of an arrival pattern against an in-process engine: what `bench
// --target inproc` does, shared with the tuner's live confirmation (`tune`
// and the window's Tuner panel). The engine is made for the run from the
// model's runner factory and `options`, started, driven open loop (or
// closed, for the closed pattern) on the steady clock, drained, and its
// batch and queue-depth records joined to the run.
// Under load: the run lasts the pattern's duration (or its request limit);
// `stop`, when given and set, ends it at the next send (within 20 ms), and
// what was in flight is drained before the function returns.
// `progress`, when given, is handed what was answered and run every half
// second while the run lasts (requests, batches and depth samples; see
// LoadOptions::progress), as a history that keeps the run as it goes needs.
// Thread-safety: runs on the calling thread (the engine's lanes are its
// own); `stop` may be set from any thread.

#include <atomic>
#include <vector>

#include "batching/engine.h"
#include "common/model_metadata.h"
#include "runs/run_record.h"
#include "traffic/arrivals.h"
#include "traffic/load_driver.h"

namespace batchscope {

// An engine's batch and queue-depth records, and its requests' stage times,
// gathered over a run: hand()
// drains what is new into a progress report and keeps it; join() drains the
// rest, after the engine stopped, and moves them all into the run.
// Thread-safety: one thread at a time (the load's feeder, then the caller).
class EngineRecords {
 public:
  explicit EngineRecords(Engine& engine) : engine_(engine) {}
  void hand(RunProgress& p);
  void join(RunData& run);

 private:
  void drain();

  Engine& engine_;
  RecordBatch records_;  // the last drain's
  std::vector<BatchRecord> batches_;
  std::vector<DepthSample> depth_;
  RunStages stages_;
  std::vector<PrepareSpan> prepared_;
};

// `inputs` are sent in turn; empty: 64 seeded inputs built from `metadata`
// (seeds spec.seed, spec.seed + 1, ...). `planner` makes the adaptive
// strategy's plans (core/tuning's make_adaptive_plan); strategy = adaptive
// fails without one.
Expected<RunData> run_inproc(const RunnerFactory& factory, const ModelMetadata& metadata,
                             const Options& options, AdaptivePlanner planner,
                             const ArrivalSpec& spec, const RunConfig& config,
                             std::vector<Tensors> inputs = {},
                             const std::atomic<bool>* stop = nullptr, ProgressFn progress = {},
                             const StageMaker& stage = {});

}  // namespace batchscope

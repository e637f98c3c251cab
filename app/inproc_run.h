#pragma once
// One run of an arrival pattern against an in-process engine: what `bench
// --target inproc` does, shared with `tune`'s live confirmation. The engine
// is made for the run from `model` and `options`, started, driven open loop
// (or closed, for the closed pattern) on the steady clock, drained, and its
// batch and queue-depth records joined to the run.
// Thread-safety: runs on the calling thread (the engine's lanes are its own).

#include <vector>

#include "arrivals.h"
#include "model_setup.h"
#include "run_record.h"

namespace batchscope {

// `inputs` are sent in turn; empty: 64 seeded inputs built from the model's
// metadata (seeds spec.seed, spec.seed + 1, ...).
Expected<RunData> run_inproc(const ModelSetup& model, const Options& options,
                             const ArrivalSpec& spec, const RunConfig& config,
                             std::vector<Tensors> inputs = {});

}  // namespace batchscope

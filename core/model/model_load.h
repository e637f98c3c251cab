// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Loading a model for the workbench: what the user asks for (ModelRequest,
// with a CancelToken), the loader the window runs off the GUI thread
// (ModelLoader, reporting LoadProgress), and what it gives (LoadedModel: the
// runner factory and what was measured on the model).
// Thread-safety: the structs are values; a CancelToken is thread-safe.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "batching/engine.h"
#include "batching/synthetic_runner.h"
#include "common/model_metadata.h"
#include "common/options.h"
#include "common/status.h"
#include "model/history_keeping.h"
#include "model/local_model.h"
#include "python/python_runner.h"
#include "tuning/cost_cache.h"
#include "tuning/cost_model.h"

namespace batchscope {

// A model ready for the engine, with what was measured on it.
struct LoadedModel {
  ModelMetadata metadata;  // what requests send and get
  // What its lanes run: a Python class's predict's inputs and outputs
  // (LocalModel::lane_metadata()); the same as `metadata` for any other.
  ModelMetadata lane_metadata;
  RunnerFactory factory;
  StageMaker stage;  // what its engines bind before batching (LocalModel::prepare_stage)
  std::string path;  // the .pt or .py file, or "synthetic:A,C[,L]" for the stand-in
  std::string device = "cpu";
  std::string runtime = "TorchScript";  // or "Python" (worker processes), "synthetic"
  // A Python model's workers, as they fare now (ready, restarts); null for any other.
  std::shared_ptr<WorkerCounts> workers;
  // Its preprocess pool's processes, where the class has preprocess; else null.
  std::shared_ptr<WorkerCounts> preprocess;
  // What a run of a Python model keeps of it (run_context_json); none for any other.
  std::optional<PythonContext> python;
  std::string blas;                // which BLAS serves the matrix products
  std::string threads;             // intra-op, inter-op and BLAS threads per lane
  std::vector<CostPoint> profile;  // t(b) for b = 1, 2, 4, ..., with its jitter where measured
  double a_us = 0;                 // fit t(b) ≈ a + c·b: fixed cost per batch
  double c_us = 0;                 // cost per item
  double asymptotic_speedup = 0;   // 1 + a/c; 0 unless a > 0 and c > 0
  // The sizes whose profile did not settle and why ("b = 16, 32: the
  // measuring thread had a core ..."); empty when all did. The fit is
  // through the settled sizes alone.
  std::string unsettled;
  // The synthetic stand-in's cost formula, of which the profile is a sample.
  std::optional<SyntheticCost> synthetic;
  // The kept cost's key for this model on this machine (tuning/cost_cache.h);
  // none in a build that keeps no costs.
  std::optional<CostKey> cost_key;
  // The kept cost as it was when the model loaded; none when there was none
  // yet, or it was refused (kept_note says why).
  std::optional<CostModel> kept;
  std::string kept_note;
  // A class with preprocess and examples: the median time one pool process
  // takes to prepare a request, measured as the model loads; 0 unmeasured.
  double preprocess_us = 0;
};

// The requests per second a window starts its traffic at for `m` under
// `o`: half of what the model can serve, as far as the load measured it
// (the lanes' best b / t(b) for b up to max_batch_size; with a measured
// preprocess, the pool's processes or, at preprocess_workers 0, the lanes
// preparing each request too), at most `most`, rounded to two significant
// digits. `most` where nothing was measured.
double starting_rate(const LoadedModel& m, const Options& o, double most);

// Progress of a load: percent 0..100 and what is being done. May be called
// from any thread.
using LoadProgress = std::function<void(int percent, const std::string& what)>;

// Asks a load to stop at its next step (a lane, a warm-up batch size, a run
// of the profile) instead of at its end, so that closing the window need not
// wait for a large model. Copies share one flag: the window keeps one and the
// loader sees the other. Cancelling cannot be undone.
// Thread-safety: thread-safe.
class CancelToken {
 public:
  CancelToken();
  void cancel() const;
  bool cancelled() const;
  // Blocks until cancelled or `timeout` passes: true if cancelled. For a
  // step that waits on something else, so that it wakes at once.
  bool wait_for(std::chrono::milliseconds timeout) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// What the user asked to load. `path` "" or "synthetic:A,C[,L]" is the
// synthetic model. `options` gives the lanes to load and the largest batch to
// warm up for; the panel leaves it default and the window fills it. The
// loader checks `cancel` between its steps and, once it is set, returns
// kCancelled; the window gives each load a token of its own.
struct ModelRequest {
  std::string path;
  std::string device = "cpu";
  PythonChoice python;  // a Python model's class, interpreter, options and timeout
  Options options;
  CancelToken cancel;
};

// Loads a model with its profile; runs off the GUI thread and may take seconds.
using ModelLoader = std::function<Expected<LoadedModel>(const ModelRequest&, const LoadProgress&)>;

// Makes the sidecar of a TorchScript model that has none (`batchscope
// describe`). `arguments`: the names and TorchScript types of its forward()
// arguments, in order, those with a default left out. `write`: one forward
// pass on zeros of `inputs` (shapes with -1 first), and the sidecar written;
// the path it went to, or the error (a failed forward pass quotes LibTorch).
// Both load the module, so both run off the GUI thread.
struct ModelDescriber {
  std::function<Expected<std::vector<std::pair<std::string, std::string>>>(const std::string& path)>
      arguments;
  std::function<Expected<std::string>(const std::string& path,
                                      const std::vector<TensorSpec>& inputs, uint32_t max_batch)>
      write;
};

}  // namespace batchscope

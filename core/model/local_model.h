// SPDX-License-Identifier: GPL-3.0-or-later
// A model on this machine, of any kind, opened from what a command or the
// window asks for (ModelChoice): a TorchScript file whose sidecar says what
// it takes (a tensor model) or that it generates text (a language model),
// or one of the weightless synthetic models. Opening reads the sidecar, not
// the weights. The model then says what it is (its kind, name, metadata or
// language-model description, device) and makes what an engine's lanes
// run, one runner per lane. Each kind is an implementation of ModelKind
// (model_kinds.h); a new kind of model is one more implementation.
// Thread-safety: a LocalModel is a value and may be copied to any thread;
// the factories it makes may be called from any thread, one lane a call.

#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batching/engine.h"
#include "batching/synthetic_runner.h"
#include "common/model_metadata.h"
#include "common/options.h"
#include "common/status.h"
#include "generation/gen_engine.h"
#include "generation/lm_runner.h"
#include "python/python_runner.h"

namespace batchscope {

// The synthetic language model's cost: each step costs step_us, plus
// token_us for every token it processes (--synthetic-lm S,T).
struct SyntheticLmCost {
  double step_us = 0;
  double token_us = 0;
};

// Which model: a file, or a synthetic stand-in, and where it runs.
// How a Python model runs: which class (--class; empty: the file's one class
// with a predict), the interpreter its workers run (--python), the options
// its constructor takes (--model-option KEY=VALUE) and how long a predict may
// run before its worker is killed (--worker-timeout-ms).
struct PythonChoice {
  std::string class_name;
  std::string interpreter = "/usr/bin/python3";
  std::vector<std::pair<std::string, std::string>> options;
  int worker_timeout_ms = 30000;
};

struct ModelChoice {
  std::string path;                             // the model file (model_paths.h finds it)
  std::optional<SyntheticCost> synthetic;       // --synthetic A,C[,L]: the tensor stand-in
  std::optional<SyntheticLmCost> synthetic_lm;  // --synthetic-lm S,T: the generative one
  std::string device = "cpu";
  // A tensor model's warm-up sizes: 1, 2, 4, ... or every size up to the
  // largest; auto: every size on a GPU (each size's cuDNN plan), doubling
  // on a CPU.
  std::string warmup = "auto";
  // A language model's key/value cache in token positions; 0: its default.
  int cache_tokens = 0;
  PythonChoice python;  // a Python model's (a path ending in .py)

  bool warmup_every_size() const {
    return warmup == "every" || (warmup == "auto" && device.starts_with("cuda"));
  }
  bool is_synthetic() const { return synthetic || synthetic_lm; }
  // The file a run records and the cost cache fingerprints; "" for a
  // synthetic model.
  std::string file() const { return is_synthetic() ? std::string() : path; }
};

enum class ModelKind { kTensor, kGenerative };

// How a tensor model's runners load, for the window's progress and cancel.
// `blas_threads` 0 lets the runner pick (the lane's share of the cores).
// `on_warmup` is called by the factory after each warm-up batch size, and
// `cancelled` asked before it loads and between warm-up sizes (once it says
// true the factory stops there and throws, naming the cancellation); both
// on the thread that calls the factory.
struct LoadHooks {
  int blas_threads = 0;
  // A Python model's workers report here (ready, restarts); null: nowhere.
  std::shared_ptr<WorkerCounts> workers;
  std::function<void(uint32_t batch, uint32_t max_batch)> on_warmup;
  std::function<bool()> cancelled;
};

// A language model made ready: the first lane's runner, and the factory
// the engine makes its lanes past the first with (each loads the model
// again, with a cache of its own; a lane's failure is thrown as its message).
struct LmSetup {
  std::unique_ptr<LmRunner> runner;
  LmFactory more_lanes;
  std::string device = "cpu";
};

class ModelKindImpl;

class LocalModel {
 public:
  // Reads what the model is: a synthetic model's description, or the
  // sidecar beside the file (a tensor model's inputs and outputs, or a
  // language model's context and cache layout). Errors name the file and
  // what is wrong; a build without LibTorch refuses a file.
  static Expected<LocalModel> open(const ModelChoice& choice);

  ModelKind kind() const;
  bool generative() const { return kind() == ModelKind::kGenerative; }
  // What runs it: "TorchScript", "Python" (worker processes) or "synthetic".
  const char* runtime() const;
  const ModelChoice& choice() const { return choice_; }
  const std::string& name() const;
  // Where it runs: the choice's device, "cpu" for a synthetic model.
  const std::string& device() const;
  // A tensor model's inputs, outputs and largest batch.
  const ModelMetadata& metadata() const;
  // What a lane's batch holds: a Python model's predict inputs and outputs
  // where its class has preprocess or postprocess; else metadata().
  const ModelMetadata& lane_metadata() const;
  // A Python model's class as its file declares it (its name, whether it
  // has preprocess and postprocess, what it takes and gives); null for any
  // other model.
  const PythonHandler* python_handler() const;
  // A language model's description, its cache blocks as choice().cache_tokens asks.
  const LmInfo& lm_info() const;

  // A tensor model: the factory an engine with `options` makes its lanes'
  // runners with (loading and warming each up to options.max_batch_size).
  // Refuses a max_batch_size above the model's, naming both.
  Expected<RunnerFactory> runners(const Options& options, const LoadHooks& hooks = {}) const;
  // What every engine of this model binds (bind_model) for a stage its
  // requests go through before batching: a Python model's preprocess pool
  // where the class has preprocess; empty for any other model.
  // `counts`: where its processes report (ready, restarts); null: nowhere.
  StageMaker prepare_stage(const Options& options,
                           std::shared_ptr<WorkerCounts> counts = nullptr) const;
  // A language model: its first runner, loaded now with `lanes` lanes
  // sharing the cores (a TorchScript model's OpenBLAS threads are the cores
  // over the lanes), and the factory for the lanes past it (lane i counts
  // at least i + 1 lanes sharing the cores).
  Expected<LmSetup> lm(int lanes = 1) const;

 private:
  LocalModel(ModelChoice choice, std::shared_ptr<const ModelKindImpl> impl);
  ModelChoice choice_;
  std::shared_ptr<const ModelKindImpl> impl_;
};

// True when `path` names a language model (its sidecar says "kind":
// "generative"); false for anything else, unreadable files included.
bool is_generative_file(const std::string& path);

// The synthetic tensor model: 128 FP32 inputs, each answered 2x + 1.
ModelMetadata synthetic_metadata();

// Where max_batch_size was not asked for and the default is above the
// model's, lowers it to the model's, so a model that takes at most 16 runs
// without a flag. A model that cannot be opened is left for the caller's
// open() to report.
void fit_default_batch(const ModelChoice& choice, Options& options);

// "synthetic:A,C[,L]": how the window and the loader name the synthetic model.
std::string synthetic_path(const SyntheticCost& cost);
// "A_US,C_US[,L_US]" (as --synthetic takes it) -> the synthetic runner's cost
// a + c*b + l*ln(b+1); each from 0 to 1e7 microseconds. Errors quote the text.
Expected<SyntheticCost> parse_synthetic(const std::string& text);

}  // namespace batchscope

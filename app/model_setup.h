// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The model a command serves or loads: a TorchScript file with its sidecar,
// or the synthetic stand-in, as metadata plus the runner factory for the
// engine. Shared by `serve` and `bench`.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "batching/engine.h"
#include "batching/synthetic_runner.h"
#include "common/model_metadata.h"
#include "traffic/gen_workload.h"
#include "tuning/cost_model.h"

namespace batchscope {

struct ModelSetup {
  ModelMetadata metadata;
  RunnerFactory factory;  // empty when only the metadata was asked for
  std::string device = "cpu";
};

// Which model a command was asked for: --model PATH, --synthetic A,C[,L],
// --device, --warmup auto|doubling|every. take_model_flags() removes these
// from `flags`.
struct ModelChoice {
  std::string path;
  std::optional<SyntheticCost> synthetic;
  std::string device = "cpu";
  // The warm-up's sizes: 1, 2, 4, ... or every size up to the largest;
  // auto: every size on a GPU (each size's cuDNN plan), doubling on a CPU.
  std::string warmup = "auto";
  bool warmup_every_size() const {
    return warmup == "every" || (warmup == "auto" && device.starts_with("cuda"));
  }
};
Expected<ModelChoice> take_model_flags(std::map<std::string, std::string>& flags,
                                       std::string default_path);

// The synthetic model: 128 FP32 inputs, each answered 2x + 1.
ModelMetadata synthetic_metadata();

// With `load` false only the metadata is read (for a remote target).
// `blas_threads` 0 lets the runner pick (the lane's share of the cores).
// `on_warmup`, if set, is called by the factory after each warm-up batch
// size of a TorchScript model (on the thread that calls the factory).
// `cancelled`, if set, is asked by the factory before it loads a TorchScript
// model and between warm-up sizes (on the same thread); once it says true the
// factory stops there and throws, naming the cancellation.
using WarmupCallback = std::function<void(uint32_t batch, uint32_t max_batch)>;
using CancelCheck = std::function<bool()>;
Expected<ModelSetup> make_model(const ModelChoice& choice, const Options& options, bool load = true,
                                int blas_threads = 0, WarmupCallback on_warmup = {},
                                CancelCheck cancelled = {});

// Where --max-batch-size was not given and the default is above the model's
// max_batch_size, lowers it to the model's, so a model that takes at most 16
// runs without a flag. Reads only the metadata; a missing sidecar is left for
// make_model() to report.
void fit_default_batch(const ModelChoice& choice, Options& options);

// For a prediction on a model whose inputs vary in length: each request's
// length in turn, as bench sends them (varied_lengths() of --seq-len, or of
// the default lengths, from `seed`), and on stderr a note when the cost has
// no t(b, L) to price them with. Empty for a model whose inputs do not vary.
std::vector<uint32_t> prediction_lengths(const ModelMetadata& model,
                                         const std::optional<LengthDist>& seq_len, uint64_t seed,
                                         const CostModel& cost, const std::string& command);

}  // namespace batchscope

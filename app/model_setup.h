#pragma once
// The model a command serves or loads: a TorchScript file with its sidecar,
// or the synthetic stand-in, as metadata plus the runner factory for the
// engine. Shared by `serve` and `bench`.

#include <optional>
#include <string>

#include "engine.h"
#include "model_metadata.h"
#include "synthetic_runner.h"

namespace batchscope {

struct ModelSetup {
  ModelMetadata metadata;
  RunnerFactory factory;  // empty when only the metadata was asked for
  std::string device = "cpu";
};

// The synthetic model: 128 FP32 inputs, each answered 2x + 1.
ModelMetadata synthetic_metadata();

// With `load` false only the metadata is read (for a remote target).
// `blas_threads` 0 lets the runner pick (the lane's share of the cores).
Expected<ModelSetup> make_model(const std::optional<SyntheticCost>& synthetic,
                                const std::string& model_path, const std::string& device,
                                const Options& options, bool load = true, int blas_threads = 0);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The kinds of model a LocalModel can be (local_model.h), each behind the
// same few calls: what it is, and the runners it makes. The synthetic
// models are always built; the TorchScript ones with LibTorch. Opening a
// kind reads its description only.
// Thread-safety: an opened kind is immutable; its calls may run on any thread.

#pragma once

#include <memory>
#include <string>

#include "model/local_model.h"

namespace batchscope {

class ModelKindImpl {
 public:
  virtual ~ModelKindImpl() = default;
  virtual ModelKind kind() const = 0;
  virtual const char* runtime() const = 0;
  virtual const std::string& name() const = 0;
  virtual const std::string& device() const = 0;
  // A tensor model's; a language model's carries its name alone.
  virtual const ModelMetadata& metadata() const = 0;
  virtual const ModelMetadata& lane_metadata() const { return metadata(); }
  // A Python model's; null for any other.
  virtual const PythonHandler* python_handler() const { return nullptr; }
  // A language model's; a tensor model's is empty.
  virtual const LmInfo& lm_info() const = 0;
  // Called only for the kind that has them (LocalModel checks).
  virtual Expected<RunnerFactory> runners(const Options& options, const LoadHooks& hooks) const = 0;
  virtual Expected<LmSetup> lm(int lanes) const = 0;
  virtual StageMaker prepare_stage(const Options&, std::shared_ptr<WorkerCounts>) const {
    return {};
  }
};

std::shared_ptr<const ModelKindImpl> open_synthetic_tensor(const SyntheticCost& cost);
std::shared_ptr<const ModelKindImpl> open_synthetic_lm(const SyntheticLmCost& cost,
                                                       int cache_tokens);
// A Python file: a class run by worker processes (python_kinds.cpp).
Expected<std::shared_ptr<const ModelKindImpl>> open_python(const ModelChoice& choice);
// A TorchScript file: tensor or generative, as its sidecar says.
Expected<std::shared_ptr<const ModelKindImpl>> open_torchscript(const ModelChoice& choice);

}  // namespace batchscope

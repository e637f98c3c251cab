// SPDX-License-Identifier: GPL-3.0-or-later
// TorchScript files through LibTorch: a tensor model (torch/torch_model.h)
// or a language model (torch/torch_lm.h), as the sidecar beside the file
// says. A build without LibTorch refuses a file by name.
#include <algorithm>
#include <stdexcept>

#include "common/sidecar_path.h"
#include "model/model_kinds.h"

#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/describe.h"
#include "torch/torch_lm.h"
#include "torch/torch_model.h"
#endif

namespace batchscope {

#ifdef BATCHSCOPE_WITH_TORCH
namespace {

class TorchScriptTensor final : public ModelKindImpl {
 public:
  TorchScriptTensor(ModelChoice choice, ModelMetadata metadata)
      : choice_(std::move(choice)), metadata_(std::move(metadata)) {}
  ModelKind kind() const override { return ModelKind::kTensor; }
  const char* runtime() const override { return "TorchScript"; }
  const std::string& name() const override { return metadata_.name; }
  const std::string& device() const override { return choice_.device; }
  const ModelMetadata& metadata() const override { return metadata_; }
  const LmInfo& lm_info() const override { return none_; }
  Expected<RunnerFactory> runners(const Options& options, const LoadHooks& hooks) const override {
    TorchOptions to;
    to.device = choice_.device;
    to.lanes = static_cast<int>(options.num_lanes);
    to.warmup_max_batch = options.max_batch_size;
    to.warmup_every_size = choice_.warmup_every_size();
    to.blas_threads = hooks.blas_threads;
    to.on_warmup = hooks.on_warmup;
    to.cancelled = hooks.cancelled;
    return torch_runner_factory(choice_.path, to);
  }
  Expected<LmSetup> lm(int) const override { return invalid_argument("not a language model"); }

 private:
  ModelChoice choice_;
  ModelMetadata metadata_;
  LmInfo none_;
};

class TorchScriptLanguage final : public ModelKindImpl {
 public:
  TorchScriptLanguage(ModelChoice choice, LmInfo info)
      : choice_(std::move(choice)), info_(std::move(info)) {
    metadata_.name = info_.name;
  }
  ModelKind kind() const override { return ModelKind::kGenerative; }
  const char* runtime() const override { return "TorchScript"; }
  const std::string& name() const override { return info_.name; }
  const std::string& device() const override { return choice_.device; }
  const ModelMetadata& metadata() const override { return metadata_; }
  const LmInfo& lm_info() const override { return info_; }
  Expected<RunnerFactory> runners(const Options&, const LoadHooks&) const override {
    return invalid_argument("a language model");
  }
  Expected<LmSetup> lm(int lanes) const override {
    auto first = load(choice_, lanes);
    if (!first) return first.error();
    LmSetup s;
    s.runner = std::move(*first);
    s.device = choice_.device;
    s.more_lanes = [c = choice_, lanes](int lane) -> std::unique_ptr<LmRunner> {
      auto lm = load(c, std::max(lanes, lane + 1));
      if (!lm) throw std::runtime_error(lm.error().message);
      return std::move(*lm);
    };
    return s;
  }

 private:
  static Expected<std::unique_ptr<TorchLm>> load(const ModelChoice& c, int lanes) {
    TorchOptions to;
    to.device = c.device;
    to.lanes = std::max(1, lanes);
    return TorchLm::load(c.path, to, c.cache_tokens);
  }

  ModelChoice choice_;
  LmInfo info_;
  ModelMetadata metadata_;
};

}  // namespace

Expected<std::shared_ptr<const ModelKindImpl>> open_torchscript(const ModelChoice& choice) {
  if (is_generative_sidecar(choice.path)) {
    auto info = TorchLm::read_lm_sidecar(sidecar_path(choice.path));
    if (!info) return info.error();
    const int tokens = choice.cache_tokens > 0 ? choice.cache_tokens : TorchLm::kDefaultCacheTokens;
    const int block = std::max(1, info->block_size);
    info->num_blocks = (tokens + block - 1) / block;
    return std::shared_ptr<const ModelKindImpl>(
        std::make_shared<TorchScriptLanguage>(choice, std::move(*info)));
  }
  auto meta = load_model_metadata(choice.path);
  if (!meta) return meta.error();
  return std::shared_ptr<const ModelKindImpl>(
      std::make_shared<TorchScriptTensor>(choice, std::move(*meta)));
}

#else

Expected<std::shared_ptr<const ModelKindImpl>> open_torchscript(const ModelChoice& choice) {
  return invalid_argument("this build has no LibTorch, so it cannot open " + choice.path +
                          "; use --synthetic A_US,C_US (or --synthetic-lm STEP_US,TOKEN_US)");
}

#endif

}  // namespace batchscope

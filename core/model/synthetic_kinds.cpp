// SPDX-License-Identifier: GPL-3.0-or-later
// The weightless models: a tensor runner whose batch costs a + c*b + l*ln(b+1)
// (batching/synthetic_runner.h), and a language model whose step costs
// step_us + token_us per token (generation/synthetic_lm.h).
#include <thread>

#include "generation/synthetic_lm.h"
#include "model/model_kinds.h"

namespace batchscope {
namespace {

const std::string kCpu = "cpu";

class SyntheticTensor final : public ModelKindImpl {
 public:
  explicit SyntheticTensor(const SyntheticCost& cost)
      : cost_(cost), metadata_(SyntheticRunner::metadata()) {}
  ModelKind kind() const override { return ModelKind::kTensor; }
  const char* runtime() const override { return "synthetic"; }
  const std::string& name() const override { return metadata_.name; }
  const std::string& device() const override { return kCpu; }
  const ModelMetadata& metadata() const override { return metadata_; }
  const LmInfo& lm_info() const override { return none_; }
  Expected<RunnerFactory> runners(const Options&, const LoadHooks&) const override {
    return SyntheticRunner::factory(cost_);
  }
  Expected<LmSetup> lm(int) const override { return invalid_argument("not a language model"); }

 private:
  SyntheticCost cost_;
  ModelMetadata metadata_;
  LmInfo none_;
};

class SyntheticLanguage final : public ModelKindImpl {
 public:
  SyntheticLanguage(const SyntheticLmCost& cost, int cache_tokens) {
    options_.step_us = cost.step_us;
    options_.token_us = cost.token_us;
    if (cache_tokens > 0)
      options_.num_blocks = (cache_tokens + options_.block_size - 1) / options_.block_size;
    if (options_.step_us > 0 || options_.token_us > 0)
      options_.spend = [](Duration d) { std::this_thread::sleep_for(d); };
    info_.name = "synthetic_lm";
    info_.context_length = options_.context_length;
    info_.block_size = options_.block_size;
    info_.num_blocks = options_.num_blocks;
    metadata_.name = info_.name;
  }
  ModelKind kind() const override { return ModelKind::kGenerative; }
  const char* runtime() const override { return "synthetic"; }
  const std::string& name() const override { return info_.name; }
  const std::string& device() const override { return kCpu; }
  const ModelMetadata& metadata() const override { return metadata_; }
  const LmInfo& lm_info() const override { return info_; }
  Expected<RunnerFactory> runners(const Options&, const LoadHooks&) const override {
    return invalid_argument("a language model");
  }
  Expected<LmSetup> lm(int) const override {
    LmSetup s;
    s.runner = std::make_unique<SyntheticLm>(options_);
    s.more_lanes = [o = options_](int) -> std::unique_ptr<LmRunner> {
      return std::make_unique<SyntheticLm>(o);
    };
    return s;
  }

 private:
  SyntheticLmOptions options_;
  LmInfo info_;
  ModelMetadata metadata_;
};

}  // namespace

std::shared_ptr<const ModelKindImpl> open_synthetic_tensor(const SyntheticCost& cost) {
  return std::make_shared<SyntheticTensor>(cost);
}

std::shared_ptr<const ModelKindImpl> open_synthetic_lm(const SyntheticLmCost& cost,
                                                       int cache_tokens) {
  return std::make_shared<SyntheticLanguage>(cost, cache_tokens);
}

}  // namespace batchscope

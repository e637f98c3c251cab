// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/local_model.h"

#include <charconv>
#include <cmath>

#include "common/text_out.h"
#include "model/model_kinds.h"

#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/torch_lm.h"
#endif

namespace batchscope {

LocalModel::LocalModel(ModelChoice choice, std::shared_ptr<const ModelKindImpl> impl)
    : choice_(std::move(choice)), impl_(std::move(impl)) {}

Expected<LocalModel> LocalModel::open(const ModelChoice& choice) {
  if (choice.synthetic && choice.synthetic_lm) {
    return invalid_argument("--synthetic and --synthetic-lm exclude each other");
  }
  if (choice.synthetic) return LocalModel(choice, open_synthetic_tensor(*choice.synthetic));
  if (choice.synthetic_lm) {
    return LocalModel(choice, open_synthetic_lm(*choice.synthetic_lm, choice.cache_tokens));
  }
  auto kind = is_python_file(choice.path) ? open_python(choice) : open_torchscript(choice);
  if (!kind) return kind.error();
  return LocalModel(choice, std::move(*kind));
}

ModelKind LocalModel::kind() const { return impl_->kind(); }
const char* LocalModel::runtime() const { return impl_->runtime(); }
const std::string& LocalModel::name() const { return impl_->name(); }
const std::string& LocalModel::device() const { return impl_->device(); }
const ModelMetadata& LocalModel::metadata() const { return impl_->metadata(); }
const LmInfo& LocalModel::lm_info() const { return impl_->lm_info(); }

const ModelMetadata& LocalModel::lane_metadata() const { return impl_->lane_metadata(); }
const PythonHandler* LocalModel::python_handler() const { return impl_->python_handler(); }

StageMaker LocalModel::prepare_stage(const Options& options,
                                     std::shared_ptr<WorkerCounts> counts) const {
  return impl_->prepare_stage(options, std::move(counts));
}

Expected<RunnerFactory> LocalModel::runners(const Options& options, const LoadHooks& hooks) const {
  if (generative()) {
    return invalid_argument("model '" + name() +
                            "' generates text: it runs in the generation engine, not in batches");
  }
  const ModelMetadata& m = metadata();
  if (options.max_batch_size > m.max_batch_size) {
    return invalid_argument("--max-batch-size " + std::to_string(options.max_batch_size) +
                            " is above model '" + m.name + "''s max_batch_size " +
                            std::to_string(m.max_batch_size));
  }
  return impl_->runners(options, hooks);
}

Expected<LmSetup> LocalModel::lm(int lanes) const {
  if (!generative()) {
    return invalid_argument("model '" + name() + "' is a tensor model, not a language model");
  }
  return impl_->lm(std::max(1, lanes));
}

bool is_generative_file(const std::string& path) {
#ifdef BATCHSCOPE_WITH_TORCH
  return is_generative_sidecar(path);
#else
  (void)path;
  return false;
#endif
}

ModelMetadata synthetic_metadata() { return SyntheticRunner::metadata(); }

void fit_default_batch(const ModelChoice& choice, Options& options) {
  auto m = LocalModel::open(choice);
  if (m && !m->generative() && options.max_batch_size > m->metadata().max_batch_size)
    options.max_batch_size = m->metadata().max_batch_size;
}

std::string synthetic_path(const SyntheticCost& cost) {
  std::string s = "synthetic:";
  append_number(s, cost.fixed_us, "0");
  s += ',';
  append_number(s, cost.per_item_us, "0");
  if (cost.log_us > 0) {
    s += ',';
    append_number(s, cost.log_us, "0");
  }
  return s;
}

Expected<SyntheticCost> parse_synthetic(const std::string& text) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t comma; (comma = text.find(',', from)) != std::string::npos; from = comma + 1) {
    parts.push_back(text.substr(from, comma - from));
  }
  parts.push_back(text.substr(from));
  if (parts.size() < 2 || parts.size() > 3) {
    return invalid_argument(
        "--synthetic: expected A_US,C_US or A_US,C_US,L_US (for example 500,20), got '" + text +
        "'");
  }
  double v[3] = {0, 0, 0};
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const char* end = part.data() + part.size();
    auto [p, ec] = std::from_chars(part.data(), end, v[i]);
    if (ec != std::errc() || p != end || !std::isfinite(v[i])) {
      return invalid_argument("--synthetic: expected a number, got '" + part + "'");
    }
    if (v[i] < 0 || v[i] > 1e7) {
      return invalid_argument("--synthetic = " + part + " is out of range; allowed 0 to 1e+07");
    }
  }
  SyntheticCost cost;
  cost.fixed_us = v[0];
  cost.per_item_us = v[1];
  cost.log_us = v[2];
  return cost;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/model_setup.h"

#include <cstdio>

#include "app/cli_args.h"
#include "app/install_paths.h"
#include "traffic/varied_inputs.h"

#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/describe.h"
#include "torch/metadata_json.h"
#include "torch/torch_model.h"
#endif

namespace batchscope {

ModelMetadata synthetic_metadata() { return SyntheticRunner::metadata(); }

Expected<ModelChoice> take_model_flags(std::map<std::string, std::string>& flags,
                                       std::string default_path) {
  ModelChoice c;
  c.path = std::move(default_path);
  if (auto it = flags.find("model"); it != flags.end()) {
    c.path = it->second;
    flags.erase(it);
    if (flags.count("synthetic"))
      return invalid_argument("--model and --synthetic exclude each other");
  }
  if (auto it = flags.find("synthetic"); it != flags.end()) {
    auto cost = cli::parse_synthetic(it->second);
    if (!cost) return cost.error();
    c.synthetic = *cost;
    flags.erase(it);
  }
  if (auto it = flags.find("device"); it != flags.end()) {
    c.device = it->second;
    flags.erase(it);
  }
  if (auto it = flags.find("warmup"); it != flags.end()) {
    if (it->second != "auto" && it->second != "every" && it->second != "doubling") {
      return invalid_argument("--warmup must be auto, doubling or every, not '" + it->second + "'");
    }
    c.warmup = it->second;
    flags.erase(it);
  }
  if (!c.synthetic) c.path = find_model(c.path);
  return c;
}

Expected<ModelSetup> make_model(const ModelChoice& choice, const Options& options, bool load,
                                int blas_threads, WarmupCallback on_warmup, CancelCheck cancelled) {
  const auto& synthetic = choice.synthetic;
  const std::string& model_path = choice.path;
  const std::string& device = choice.device;
  ModelSetup m;
  if (synthetic) {
    m.metadata = synthetic_metadata();
    if (load) m.factory = SyntheticRunner::factory(*synthetic);
  } else {
#ifdef BATCHSCOPE_WITH_TORCH
    auto meta = load_model_metadata(model_path);
    if (!meta) return meta.error();
    m.metadata = *meta;
    m.device = device;
    if (load) {
      TorchOptions to;
      to.device = device;
      to.lanes = static_cast<int>(options.num_lanes);
      to.warmup_max_batch = options.max_batch_size;
      to.warmup_every_size = choice.warmup_every_size();
      to.blas_threads = blas_threads;
      to.on_warmup = std::move(on_warmup);
      to.cancelled = std::move(cancelled);
      m.factory = torch_runner_factory(model_path, to);
    }
#else
    (void)model_path, (void)device, (void)blas_threads, (void)on_warmup, (void)cancelled;
    return invalid_argument("this build has no LibTorch; use --synthetic A_US,C_US");
#endif
  }
  if (load && options.max_batch_size > m.metadata.max_batch_size) {
    return invalid_argument("--max-batch-size " + std::to_string(options.max_batch_size) +
                            " is above model '" + m.metadata.name + "''s max_batch_size " +
                            std::to_string(m.metadata.max_batch_size));
  }
  return m;
}

void fit_default_batch(const ModelChoice& choice, Options& options) {
  auto meta = make_model(choice, options, /*load=*/false);
  if (meta && options.max_batch_size > meta->metadata.max_batch_size)
    options.max_batch_size = meta->metadata.max_batch_size;
}

std::vector<uint32_t> prediction_lengths(const ModelMetadata& model,
                                         const std::optional<LengthDist>& seq_len, uint64_t seed,
                                         const CostModel& cost, const std::string& command) {
  if (!has_variable_inputs(model)) return {};
  if (cost.length_grid().empty()) {
    std::fprintf(stderr,
                 "batchscope %s: note: model '%s' takes inputs of varying length, and its cost "
                 "has no t(b, L) (a kept cost made before it was measured: --recalibrate makes it "
                 "anew with one); every batch is priced at the length its cost was measured "
                 "with, though the padding policy still picks\n",
                 command.c_str(), model.name.c_str());
  }
  return varied_lengths(model, seq_len.value_or(default_lengths(model)), seed, kVariedPool);
}

}  // namespace batchscope

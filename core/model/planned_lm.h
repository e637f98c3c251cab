// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A language model planned for a GPU that is not here (--model-config,
// --gpu): its shape from config.json and the roofline step cost on that GPU
// (core/roofline), as the generative predictor takes a model: the context
// and paged cache the engine would have there, and the step cost.
// Thread-safety: values and free functions.

#include <cstdint>
#include <string>

#include "common/options.h"
#include "common/status.h"
#include "generation/lm_runner.h"
#include "roofline/roofline_cost.h"
#include "tuning/gen_predictor.h"

namespace batchscope {

struct PlanChoice {
  std::string model_config;  // config.json or its folder
  std::string gpu;           // a name in the table (gpus), or
  std::string gpu_spec;      // a file in its form
  uint32_t tp = 1;
  std::string dtype;     // empty: the config's torch_dtype
  std::string kv_dtype;  // empty: as dtype
  double memory_utilization = 0.9;
  uint32_t block_size = 16;
  uint32_t max_model_len = 0;  // 0: the config's max_position_embeddings
};

struct PlannedLm {
  RooflineCost roofline;
  LmInfo info;       // the engine's context and cache there
  GenStepCost cost;  // the roofline's, as the predictor prices steps
  // "llama-3.1-8b on h100-sxm x1, bf16 (kv bf16): ..., context 131072"
  std::string describe() const;
};

// The plan for `options` (its max_num_batched_tokens and max_num_seqs set
// the activations' reserve); refuses what cannot run there, as the engine
// would: weights that do not fit, a cache smaller than one context.
Expected<PlannedLm> plan_lm(const PlanChoice& choice, const Options& options);

}  // namespace batchscope

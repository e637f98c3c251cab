// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/planned_lm.h"

#include <algorithm>

#include "common/text_out.h"

namespace batchscope {

std::string PlannedLm::describe() const {
  std::string out = roofline.describe();
  append_format(out, ", context %d", info.context_length);
  return out;
}

Expected<PlannedLm> plan_lm(const PlanChoice& choice, const Options& options) {
  auto shape = read_model_config(choice.model_config);
  if (!shape) return shape.error();
  if (choice.gpu.empty() == choice.gpu_spec.empty()) {
    return invalid_argument(
        "--model-config plans for a GPU: give --gpu NAME (batchscope gpus "
        "lists them) or --gpu-spec FILE");
  }
  auto gpu = choice.gpu.empty() ? read_gpu_spec(choice.gpu_spec) : gpu_named(choice.gpu);
  if (!gpu) return gpu.error();
  RooflineSetup s;
  s.model = *shape;
  s.gpu = *gpu;
  s.tp = choice.tp;
  s.dtype = choice.dtype.empty() ? shape->dtype : choice.dtype;
  s.kv_dtype = choice.kv_dtype;
  s.memory_utilization = choice.memory_utilization;
  s.block_size = choice.block_size;
  s.max_num_batched_tokens = options.max_num_batched_tokens;
  s.max_num_seqs = options.max_num_seqs;
  auto roofline = RooflineCost::make(s);
  if (!roofline) return roofline.error();
  const uint64_t context = choice.max_model_len > 0 ? choice.max_model_len : shape->max_position;
  if (context > shape->max_position) {
    return invalid_argument("--max-model-len " + std::to_string(context) + " is beyond " +
                            shape->name + "'s max_position_embeddings, " +
                            std::to_string(shape->max_position));
  }
  const uint64_t blocks = roofline->kv_blocks();
  if (blocks * s.block_size < context) {
    return invalid_argument(roofline->describe() + ": the cache holds less than one context of " +
                            std::to_string(context) + " tokens; give --max-model-len at most " +
                            std::to_string(blocks * s.block_size) +
                            ", or more memory (--gpu-memory-utilization, --tp, --kv-dtype fp8)");
  }
  PlannedLm p{*roofline, {}, {}};
  p.info.name = shape->name;
  p.info.description = roofline->describe();
  // The stand-in model's own vocabulary: the predictor reads no logits.
  p.info.context_length = static_cast<int>(std::min<uint64_t>(context, 1u << 30));
  p.info.block_size = static_cast<int>(s.block_size);
  p.info.num_blocks = static_cast<int>(std::min<uint64_t>(blocks, 1u << 30));
  p.cost = GenStepCost::of(*roofline);
  return p;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A generative model as a server needs it, and a language model's serving
// planned for a GPU that is not here (tune --model-config): what a tune's
// JSON says of them, and what the exports of vLLM, TGI, TensorRT-LLM and
// KServe name. Plain values.

#include <cstdint>
#include <string>
#include <vector>

namespace batchscope {

// The context and the paged cache a generative model ran (or is planned)
// with.
struct GenModelInfo {
  std::string name;
  int context_length = 0;  // positions a sequence may use, prompt included
  int block_size = 16;     // positions per cache block
  int num_blocks = 0;      // blocks in the cache
};

// Where the plan runs, how many copies it needs, and what it assumes.
struct ServingPlan {
  std::string model_id;      // what the server loads: a Hugging Face id, or the config's folder
  std::string model_config;  // the config.json planned from
  std::string gpu;           // "h100-sxm", or the --gpu-spec file's name
  uint32_t tp = 1;           // GPUs a replica spans (tensor parallel)
  std::string dtype = "bf16";
  std::string kv_dtype = "bf16";
  double gpu_memory_utilization = 0.9;
  // Replicas for the target rate with the headroom held back (the plan, and
  // an autoscaler's most), and without it (the fewest that serve the rate).
  uint32_t replicas = 1;
  uint32_t min_replicas = 1;
  double target_rate_rps = 0;        // 0: none asked
  double capacity_rps = 0;           // one replica's under the objective; 0: not found
  double headroom = 0;               // the share of capacity held back (0.15: 15%)
  double e2e_p50_ms = 0;             // a request's median life at the planned rate, for concurrency
  std::vector<std::string> caveats;  // what the plan assumes, one sentence each

  uint32_t gpus() const { return tp * replicas; }
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A language model's step cost on a GPU from the model's shape and the
// GPU's specifications, where neither is at hand to measure. Each step of
// the scheduler (its decodes, its prefill chunks and the cached tokens they
// read) takes
//   max(compute, memory) + all-reduces + overhead
// where compute is the step's FLOPs over the GPU's dense peak at the
// weights' dtype times an efficiency, memory is the bytes it reads (the
// weights once, the KV cache its tokens attend to, the KV it writes) over
// the memory bandwidth times an efficiency, the all-reduces are tensor
// parallelism's two a layer (a ring over the interconnect, plus a latency
// each), and the overhead is the engine's own per step. Beside the steps,
// the serving stack's own time per request (request_us) is added to every
// TTFT and end (gen_predictor.h). With --tp N each GPU
// holds 1/N of the weights and of the KV heads (a KV head is not split: with
// fewer KV heads than GPUs each GPU keeps one).
//
// The efficiencies, the latency and the overhead are a handful per GPU
// family (RooflineConstants), fitted on published measurements named in
// docs/generation.md.
//
// The KV cache it leaves: (memory x utilization - the weights - an
// activation reserve) over (block size x the KV bytes per token), per GPU.
// Thread-safety: values; const member functions.

#include <cstdint>
#include <string>

#include "common/status.h"
#include "roofline/gpu_table.h"
#include "roofline/model_shape.h"

namespace batchscope {

// The constants of `family` ("ampere", "ada", "hopper", "blackwell"); a
// GPU's own (GpuSpec::constants) come first.
RooflineConstants roofline_constants(const std::string& family);

struct RooflineSetup {
  ModelShape model;
  GpuSpec gpu;
  uint32_t tp = 1;
  std::string dtype = "bf16";  // the weights' and the matrices' (bf16, fp16, fp8)
  std::string kv_dtype = "";   // empty: as dtype
  double memory_utilization = 0.9;
  uint32_t block_size = 16;
  uint32_t max_num_batched_tokens = 8192;  // the activation reserve's size
  uint32_t max_num_seqs = 256;
};

// One step's terms, microseconds and the counts they come from (per GPU).
struct RooflineStep {
  double flops = 0, bytes = 0;
  double compute_us = 0, memory_us = 0, allreduce_us = 0, overhead_us = 0;
  double total_us() const;
};

class RooflineCost {
 public:
  // Refuses what cannot run: a dtype the GPU has no tensor cores for, a TP
  // size that does not divide the heads, weights that do not fit.
  static Expected<RooflineCost> make(RooflineSetup setup,
                                     const RooflineConstants* constants = nullptr);

  const RooflineSetup& setup() const { return s_; }
  const RooflineConstants& constants() const { return k_; }

  double weight_bytes_per_gpu() const;
  double kv_bytes_per_token_per_gpu() const;
  double reserve_bytes_per_gpu() const;  // activations and what is not the model's
  // The paged cache's blocks and the tokens they hold.
  uint64_t kv_blocks() const;
  uint64_t kv_cache_tokens() const { return kv_blocks() * s_.block_size; }

  // A step decoding `decodes` sequences and prefilling `prefill_tokens`,
  // the decodes reading `context` cached tokens and the prefill tokens
  // `prefill_reads` (each chunk's tokens attend to the positions before them).
  RooflineStep step(uint32_t decodes, uint32_t prefill_tokens, uint64_t context,
                    uint64_t prefill_reads) const;
  double step_us(uint32_t decodes, uint32_t prefill_tokens, uint64_t context,
                 uint64_t prefill_reads) const {
    return step(decodes, prefill_tokens, context, prefill_reads).total_us();
  }
  // "Llama-3.1-8B on h100-sxm x1, bf16 (kv bf16): 14.96 GiB of weights a GPU, 128 KiB of KV a
  // token, 441,000 tokens of cache"
  std::string describe() const;

 private:
  RooflineSetup s_;
  RooflineConstants k_;
};

}  // namespace batchscope

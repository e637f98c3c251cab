// SPDX-License-Identifier: GPL-3.0-or-later
#include "roofline/roofline_cost.h"

#include <algorithm>
#include <cmath>

#include "common/text_out.h"

namespace batchscope {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
// What a GPU's memory holds beside the model's tensors: the CUDA context,
// the libraries' workspaces, the collective's buffers.
constexpr double kNonTorchBytes = 1.0 * kGiB;

}  // namespace

RooflineConstants roofline_constants(const std::string& family) {
  // Fitted (scripts/validate-roofline --fit hopper) on three published
  // points of TensorRT-LLM 0.14's online table (its perf-overview.md), at
  // 2 requests/s: Llama-3.1-8B on one H100 with 467 prompt and 256 output
  // tokens and with 202 and 214, and Llama-3.1-70B on four H100s with 467
  // and 256; their mean TTFT and ITL.
  RooflineConstants k;
  k.compute_efficiency = 0.52;
  k.memory_efficiency = 0.60;
  k.overhead_us = 84;
  k.allreduce_us = 13.3;
  k.request_us = 6400;
  k.fitted_on = "fitted on 3 published Hopper points";
  // Ampere and Ada: their two efficiencies fitted (--fit ampere|ada
  // --fit-only compute_efficiency,memory_efficiency) on two offline points
  // of TensorRT-LLM 0.17's throughput table each, Llama-3.1-8B at 128/128
  // and 1000/1000 tokens (FP16 on an A100 SXM 80GB; FP8 on an L40S); their
  // output tokens/s. The rest is Hopper's. Blackwell has no point: Hopper's.
  if (family == "ampere") {
    k.compute_efficiency = 0.70;
    k.memory_efficiency = 1.0;
    k.fitted_on = "efficiencies fitted on 2 published Ampere points, the rest on 3 Hopper ones";
  } else if (family == "ada") {
    k.compute_efficiency = 0.37;
    k.memory_efficiency = 0.98;
    k.fitted_on = "efficiencies fitted on 2 published Ada points, the rest on 3 Hopper ones";
  } else if (family != "hopper") {
    k.fitted_on = "Hopper's, fitted on 3 published points";
  }
  return k;
}

double RooflineStep::total_us() const {
  return std::max(compute_us, memory_us) + allreduce_us + overhead_us;
}

Expected<RooflineCost> RooflineCost::make(RooflineSetup setup, const RooflineConstants* constants) {
  RooflineCost c;
  if (setup.kv_dtype.empty()) setup.kv_dtype = setup.dtype;
  const std::string on = setup.model.name + " on " + setup.gpu.name;
  if (dtype_bytes(setup.dtype) == 0 || setup.dtype == "fp32") {
    return invalid_argument("--dtype must be bf16, fp16 or fp8, not \"" + setup.dtype + "\"");
  }
  if (dtype_bytes(setup.kv_dtype) == 0 || setup.kv_dtype == "fp32") {
    return invalid_argument("--kv-dtype must be bf16, fp16 or fp8, not \"" + setup.kv_dtype + "\"");
  }
  if (setup.gpu.tflops(setup.dtype) <= 0) {
    return invalid_argument("--dtype " + setup.dtype + ": the " + setup.gpu.title + " has no " +
                            setup.dtype + " tensor cores");
  }
  if (setup.tp < 1 || setup.tp > 64 || setup.model.heads % setup.tp != 0) {
    return invalid_argument("--tp must divide " + setup.model.name + "'s " +
                            std::to_string(setup.model.heads) + " attention heads, not " +
                            std::to_string(setup.tp));
  }
  if (!(setup.memory_utilization > 0 && setup.memory_utilization <= 1)) {
    std::string msg;
    append_format(msg, "--gpu-memory-utilization must be in (0, 1], not %g",
                  setup.memory_utilization);
    return invalid_argument(msg);
  }
  if (setup.block_size < 1 || setup.block_size > 256) {
    return invalid_argument("--block-size must be from 1 to 256, not " +
                            std::to_string(setup.block_size));
  }
  c.k_ = constants             ? *constants
         : setup.gpu.constants ? *setup.gpu.constants
                               : roofline_constants(setup.gpu.family);
  c.s_ = std::move(setup);
  const double usable = c.s_.gpu.memory_gb * kGiB * c.s_.memory_utilization;
  if (c.weight_bytes_per_gpu() + c.reserve_bytes_per_gpu() >= usable) {
    std::string msg;
    append_format(msg,
                  "%s: %.1f GiB of weights a GPU (tp %u) and %.1f GiB of activations leave no KV "
                  "cache in %.2f x %.0f GB: raise --tp, or take a larger GPU or fp8",
                  on.c_str(), c.weight_bytes_per_gpu() / kGiB, c.s_.tp,
                  c.reserve_bytes_per_gpu() / kGiB, c.s_.memory_utilization, c.s_.gpu.memory_gb);
    return invalid_argument(msg);
  }
  return c;
}

double RooflineCost::weight_bytes_per_gpu() const {
  return static_cast<double>(s_.model.parameters()) * dtype_bytes(s_.dtype) / s_.tp;
}

double RooflineCost::kv_bytes_per_token_per_gpu() const {
  // A KV head is kept whole: with fewer KV heads than GPUs, each keeps one.
  const double heads_here =
      std::max(1.0, static_cast<double>(s_.model.kv_heads) / static_cast<double>(s_.tp));
  return s_.model.kv_bytes_per_token(s_.kv_dtype) * heads_here /
         static_cast<double>(s_.model.kv_heads);
}

double RooflineCost::reserve_bytes_per_gpu() const {
  // The largest step's activations (its hidden states, q/k/v and the MLP's
  // two halves over this GPU's share) and the last tokens' fp32 logits.
  const ModelShape& m = s_.model;
  const double act = dtype_bytes(s_.dtype == "fp8" ? "bf16" : s_.dtype);
  const double per_token =
      (4.0 * static_cast<double>(m.hidden) + 2.0 * static_cast<double>(m.intermediate) / s_.tp) *
      act;
  return kNonTorchBytes + s_.max_num_batched_tokens * per_token +
         static_cast<double>(s_.max_num_seqs) * static_cast<double>(m.vocab) * 4.0 / s_.tp;
}

uint64_t RooflineCost::kv_blocks() const {
  const double usable = s_.gpu.memory_gb * kGiB * s_.memory_utilization - weight_bytes_per_gpu() -
                        reserve_bytes_per_gpu();
  if (usable <= 0) return 0;
  return static_cast<uint64_t>(std::floor(usable / (s_.block_size * kv_bytes_per_token_per_gpu())));
}

RooflineStep RooflineCost::step(uint32_t decodes, uint32_t prefill_tokens, uint64_t context,
                                uint64_t prefill_reads) const {
  RooflineStep r;
  const ModelShape& m = s_.model;
  const double tokens = static_cast<double>(decodes) + prefill_tokens;
  const double tp = s_.tp;
  r.overhead_us = k_.overhead_us;
  if (tokens == 0) return r;
  // Every token through every matrix; attention over what each reads.
  r.flops = (m.flops_per_token() * tokens +
             m.attention_flops_per_context_token() *
                 (static_cast<double>(context) + static_cast<double>(prefill_reads))) /
            tp;
  // The weights once (the embedding's rows aside: an untied embedding is
  // looked up, not read whole), the cache read and written.
  const double weights = static_cast<double>(m.matmul_parameters()) * dtype_bytes(s_.dtype) / tp;
  const double kv = kv_bytes_per_token_per_gpu();
  r.bytes = weights + kv * (static_cast<double>(context) + tokens);
  r.compute_us = r.flops / (s_.gpu.tflops(s_.dtype) * 1e12 * k_.compute_efficiency) * 1e6;
  r.memory_us = r.bytes / (s_.gpu.bandwidth_gbs * 1e9 * k_.memory_efficiency) * 1e6;
  if (s_.tp > 1) {
    // Two all-reduces a layer of the step's hidden states, each a ring:
    // 2 (tp - 1) / tp of its bytes over the link, and a latency.
    const double bytes =
        tokens * static_cast<double>(m.hidden) * dtype_bytes(s_.dtype == "fp8" ? "bf16" : s_.dtype);
    const double one =
        k_.allreduce_us + 2.0 * (tp - 1) / tp * bytes / (s_.gpu.interconnect_gbs * 1e9) * 1e6;
    r.allreduce_us = 2.0 * static_cast<double>(m.layers) * one;
  }
  return r;
}

std::string RooflineCost::describe() const {
  std::string out;
  append_format(
      out,
      "%s on %s x%u, %s (kv %s): %.2f GiB of weights a GPU, %.0f KiB of KV a token, "
      "%llu tokens of cache (%.2f of %.0f GB)",
      s_.model.name.c_str(), s_.gpu.name.c_str(), s_.tp, s_.dtype.c_str(), s_.kv_dtype.c_str(),
      weight_bytes_per_gpu() / kGiB, kv_bytes_per_token_per_gpu() / 1024.0,
      static_cast<unsigned long long>(kv_cache_tokens()), s_.memory_utilization, s_.gpu.memory_gb);
  return out;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A language model's shape from its Hugging Face config.json: what a step
// cost on a GPU this machine does not have needs of a model that may not be
// here either (no weights are read). The dense decoder-only families
// (Llama, Mistral, Qwen2/2.5, Qwen3, Gemma, Gemma 2) are read; a mixture of
// experts is refused by name with what it would need, as is any other
// architecture.
//
// The parameters are counted as those families build them: an embedding,
// per layer the attention's q, k, v and o projections (with q/k/v biases
// where the family has them), a gated MLP of three matrices and two norms,
// a final norm, and an output head unless tied to the embedding.
// Thread-safety: values and free functions.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace batchscope {

// Bytes per element of "bf16", "fp16" and "fp32" (also "bfloat16",
// "float16", "float32" as config.json writes them) and "fp8"; 0 otherwise.
double dtype_bytes(std::string_view dtype);

struct ModelShape {
  std::string name;          // the file's folder, else "model"
  std::string name_or_path;  // "_name_or_path" where the file has it: the repository it came from
  std::string architecture;  // "LlamaForCausalLM"
  std::string model_type;    // "llama"
  uint64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  uint64_t intermediate = 0, vocab = 0, max_position = 0;
  std::string dtype;  // config.json's torch_dtype, as "bf16", "fp16" or "fp32"
  bool tied_embeddings = false;
  bool qkv_bias = false;  // Qwen2's

  // Parameters in all, and in the matrices a token goes through (all but the
  // embedding lookup; the tied head's matrix counts once, as the head).
  uint64_t parameters() const;
  uint64_t matmul_parameters() const;
  // Bytes of the key and value cache one token keeps, over all layers, at
  // `kv_dtype`'s width.
  double kv_bytes_per_token(std::string_view kv_dtype) const;
  // Multiply-adds, as FLOPs, of one token through every matrix (2 per
  // parameter), and of its attention per cached token it reads (q.k and
  // the weighted sum of v, every layer and head).
  double flops_per_token() const;
  double attention_flops_per_context_token() const;
  // "Llama-3.1-8B: LlamaForCausalLM, 32 layers, hidden 4096, 32 heads (8 kv,
  // 128 each), MLP 14336, vocab 128256, 8.03 B parameters, bf16"
  std::string describe() const;
};

// config.json's text read; `name` names the model in what is said.
Expected<ModelShape> parse_model_config(std::string_view json, const std::string& name);
// The file at `path`, or config.json in the folder `path`.
Expected<ModelShape> read_model_config(const std::string& path);

}  // namespace batchscope

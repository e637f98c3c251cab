// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A generative TorchScript model (a decoder-only transformer over bytes) and
// its paged key/value cache: the LmRunner that the generation engine steps.
//
// Loading reads NAME.json beside NAME.pt (kind "generative", the tokenizer,
// the context length and the cache layout), loads the module onto the device,
// allocates the cache there once (zero-filled; it never moves or grows) and
// warms up with one prefill and one decode. The module exports
//   prefill(tokens [T], start, blocks [nb], k_cache, v_cache, want_logits)
//   decode(tokens [B], positions [B], block_tables [B, nb], k_cache, v_cache)
// over caches of [layers, num_blocks, heads, block_size, head_dim] floats;
// models/make_models.py --lm writes one.
//
// A step checks every token id, position and block id before it reaches
// LibTorch and refuses a bad one with kInvalidArgument; a LibTorch error
// fails that step with kModelError. Either way the runner stays usable. Per
// step only the inputs go to the device and the logits come back; a decode
// reads only as many cache blocks per row as its longest sequence holds, so
// its cost follows the lengths in the batch.
// Threads: as TorchModel (torch_threads.h): intra-op and OpenBLAS counts are
// applied on the thread that steps. Headers show engine types only.
// Thread-safety: one thread steps a TorchLm at a time (the LmRunner contract).

#include <memory>
#include <string>

#include "common/status.h"
#include "generation/lm_runner.h"
#include "torch/torch_model.h"

namespace batchscope {

class TorchLm final : public LmRunner {
 public:
  // Loads `model_path` and its sidecar, with a cache of `cache_tokens` token
  // positions (rounded up to whole blocks; <= 0: kDefaultCacheTokens).
  // Errors name the file and what is wrong; options.cancelled, asked before
  // the module loads, makes it return kCancelled.
  static Expected<std::unique_ptr<TorchLm>> load(const std::string& model_path,
                                                 const TorchOptions& options = {},
                                                 int cache_tokens = 0);
  // The sidecar's description of a generative model (num_blocks left 0).
  static Expected<LmInfo> read_lm_sidecar(const std::string& json_path);

  static constexpr int kDefaultCacheTokens = 16384;

  ~TorchLm() override;

  const LmInfo& info() const override;
  Expected<LmLogits> step(const LmStep& step) override;
  // Prefill chunks of 8, 16, 32, ... tokens up to the budget (and the
  // context), then decodes of 1, 2, 4, ... sequences up to max_seqs, at a
  // short and a long position.
  void warm_up(uint32_t max_seqs, uint32_t max_batched_tokens) override;

  const std::string& device() const;
  int intra_op_threads() const;
  int blas_threads() const;
  // Bytes the key/value cache holds on the device.
  size_t cache_bytes() const;

 private:
  struct Impl;
  explicit TorchLm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True when the sidecar beside `model_path` (NAME.json beside NAME.pt) reads
// and says "kind": "generative"; false otherwise, errors included.
bool is_generative_sidecar(const std::string& model_path);

}  // namespace batchscope

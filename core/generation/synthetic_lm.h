// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A generative model without weights, for tests, benchmarks of the
// scheduler itself and demos without LibTorch. Its "cache" holds, for each
// position, a hash of every token up to it (computed from the previous
// position's entry, read through the block table, like a real key/value
// cache), and its next token is a letter, space or full stop picked by that
// hash, so a sequence's text depends on its whole history and any mistake in
// block tables, positions or recompute changes the text. A position read
// before it was written fails the step.
//
// Cost: `spend` is called with each step's modelled time, fixed + per token
// (prefill tokens and decodes); tests advance a manual clock with it, a
// benchmark sleeps. Without it a step costs only its bookkeeping.
// Thread-safety: like every LmRunner, one thread at a time.

#include <functional>
#include <vector>

#include "common/clock.h"
#include "generation/lm_runner.h"

namespace batchscope {

struct SyntheticLmOptions {
  int context_length = 1024;
  int block_size = 16;
  int num_blocks = 1024;
  // A step costs step_us + token_us * tokens.
  double step_us = 0;
  double token_us = 0;
  // The next token is the end of the sequence when the hash is a multiple of
  // this (0: never), so lengths vary like a model's.
  uint32_t eos_every = 0;
  std::function<void(Duration)> spend;
};

class SyntheticLm final : public LmRunner {
 public:
  explicit SyntheticLm(SyntheticLmOptions options);
  const LmInfo& info() const override { return info_; }
  Expected<LmLogits> step(const LmStep& step) override;

  // The token it gives after the tokens `history` (for tests).
  int32_t next_after(const std::vector<int32_t>& history) const;

 private:
  // Writes `tokens` at positions start.. and returns the last entry.
  Expected<uint64_t> write(std::span<const int32_t> tokens, int start,
                           std::span<const int32_t> blocks);
  int32_t next(uint64_t h) const;
  void logits_row(uint64_t h, float* row) const;

  SyntheticLmOptions options_;
  LmInfo info_;
  std::vector<uint64_t> cache_;  // 0: not written
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A generative language model as the generation engine sees it: a fixed pool
// of key/value cache blocks, and one step that prefills prompt chunks and
// decodes one token for a batch of sequences of different lengths.
//
// The cache is paged: it holds `num_blocks` blocks of `block_size` token
// positions each. A sequence owns a block table (the blocks holding its
// positions 0, block_size, 2 * block_size, ... in order); the engine
// allocates the blocks, the runner writes keys and values into them. A step
// reads every position below a sequence's current one through its table, so
// sequences of any lengths share one batched decode.
//
// Contract of step(): the prefill chunks run first, in order, then the
// decodes as one batch. It returns one row of `vocab_size` next-token logits
// per prefill chunk that has want_logits, in order, then one per decode, in
// order. An Error fails the whole step; the runner stays usable.
// Thread-safety: one engine thread calls a given runner; never concurrently.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "generation/chat_template.h"

namespace batchscope {

struct LmInfo {
  std::string name;
  std::string description;
  std::string tokenizer = "bytes";  // "bytes": token t < 256 is byte t
  int vocab_size = 257;
  int eos_token = 256;
  int context_length = 1024;  // positions a sequence may use, prompt included
  int block_size = 16;        // token positions per cache block
  int num_blocks = 0;         // blocks in the pool this runner allocated
  ChatTemplate chat;          // how chat messages become its prompt
};

struct PrefillChunk {
  std::span<const int32_t> tokens;  // the tokens at positions [start, start + size)
  int start = 0;
  std::span<const int32_t> blocks;  // the block table, covering start + size positions
  bool want_logits = false;         // the chunk ends the prompt: return the next token's logits
};

struct DecodeItem {
  int32_t token = 0;                // the sequence's last token, at `position`
  int position = 0;                 // its position: the sequence's length - 1
  std::span<const int32_t> blocks;  // the block table, covering position + 1 positions
};

struct LmStep {
  std::vector<PrefillChunk> prefills;
  std::vector<DecodeItem> decodes;
};

// Row-major: rows x vocab_size.
struct LmLogits {
  std::vector<float> values;
  size_t rows = 0;
};

class LmRunner {
 public:
  virtual ~LmRunner() = default;
  virtual const LmInfo& info() const = 0;
  virtual Expected<LmLogits> step(const LmStep& step) = 0;
  // Runs steps of the shapes the engine will give it (prefill chunks up to
  // `max_batched_tokens`, decodes of up to `max_seqs` sequences) on the
  // calling thread, the engine's step thread, so that its first real steps
  // pay no first-call costs there (a library's per-thread handles, a
  // compiled graph per shape). It writes only cache block 0, which the
  // engine gives a sequence before it reads it; failures are left for the
  // real steps to report. The default does nothing.
  virtual void warm_up(uint32_t max_seqs, uint32_t max_batched_tokens) {
    (void)max_seqs, (void)max_batched_tokens;
  }
};

}  // namespace batchscope

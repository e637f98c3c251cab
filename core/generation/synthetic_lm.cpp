// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/synthetic_lm.h"

#include <algorithm>
#include <cmath>

namespace batchscope {

namespace {

constexpr char kLetters[] = "abcdefghijklmnopqrstuvwxyz .";
constexpr uint64_t kSeed = 0x9E3779B97F4A7C15ull;

// Never 0, which marks an unwritten position.
uint64_t mix(uint64_t h, int32_t token) {
  h ^= static_cast<uint64_t>(token) + 0x632BE59BD9B4E019ull;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return h | 1;
}

}  // namespace

SyntheticLm::SyntheticLm(SyntheticLmOptions options) : options_(std::move(options)) {
  info_.name = "synthetic_lm";
  info_.description = "a weightless model whose text is a hash of its history";
  info_.context_length = options_.context_length;
  info_.block_size = std::max(1, options_.block_size);
  info_.num_blocks = std::max(0, options_.num_blocks);
  cache_.assign(static_cast<size_t>(info_.num_blocks) * static_cast<size_t>(info_.block_size), 0);
}

int32_t SyntheticLm::next(uint64_t h) const {
  if (options_.eos_every > 0 && (h >> 8) % options_.eos_every == 0) return info_.eos_token;
  return static_cast<unsigned char>(kLetters[(h >> 20) % (sizeof(kLetters) - 1)]);
}

void SyntheticLm::logits_row(uint64_t h, float* row) const {
  std::fill(row, row + info_.vocab_size, 0.0f);
  row[next(h)] = 10.0f;
}

int32_t SyntheticLm::next_after(const std::vector<int32_t>& history) const {
  uint64_t h = kSeed;
  for (int32_t t : history) h = mix(h, t);
  return next(h);
}

Expected<uint64_t> SyntheticLm::write(std::span<const int32_t> tokens, int start,
                                      std::span<const int32_t> blocks) {
  const size_t bs = static_cast<size_t>(info_.block_size);
  const auto slot = [&](size_t pos) -> Expected<size_t> {
    if (pos >= static_cast<size_t>(info_.context_length) || pos / bs >= blocks.size()) {
      return invalid_argument("position " + std::to_string(pos) + " is beyond the block table");
    }
    const int32_t b = blocks[pos / bs];
    if (b < 0 || b >= info_.num_blocks) {
      return invalid_argument("block " + std::to_string(b) + " is not in the pool");
    }
    return static_cast<size_t>(b) * bs + pos % bs;
  };
  if (start < 0) return invalid_argument("a negative position");
  uint64_t h = kSeed;
  if (start > 0) {
    auto prev = slot(static_cast<size_t>(start) - 1);
    if (!prev) return prev.error();
    h = cache_[*prev];
    if (h == 0) {
      return invalid_argument("position " + std::to_string(start - 1) +
                              " was read before it was written");
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= info_.vocab_size) {
      return invalid_argument("token " + std::to_string(tokens[i]) + " is not in the vocabulary");
    }
    auto at = slot(static_cast<size_t>(start) + i);
    if (!at) return at.error();
    h = mix(h, tokens[i]);
    cache_[*at] = h;
  }
  return h;
}

Expected<LmLogits> SyntheticLm::step(const LmStep& step) {
  LmLogits out;
  const size_t v = static_cast<size_t>(info_.vocab_size);
  size_t tokens = step.decodes.size();
  for (const PrefillChunk& c : step.prefills) {
    auto h = write(c.tokens, c.start, c.blocks);
    if (!h) return h.error();
    tokens += c.tokens.size();
    if (c.want_logits) {
      out.values.resize(v * (out.rows + 1));
      logits_row(*h, out.values.data() + v * out.rows++);
    }
  }
  out.values.resize(v * (out.rows + step.decodes.size()));
  for (const DecodeItem& d : step.decodes) {
    auto h = write({&d.token, 1}, d.position, d.blocks);
    if (!h) return h.error();
    logits_row(*h, out.values.data() + v * out.rows++);
  }
  if (options_.spend) {
    const double us = options_.step_us + options_.token_us * static_cast<double>(tokens);
    options_.spend(
        std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us)));
  }
  return out;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Deterministic piece sizes for feeding a fuzz input in parts: derived from
// the input itself, so a crash replays with the same splits.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace batchscope::fuzz {

class Splitter {
 public:
  // Pieces of 1..max_piece bytes, seeded by a hash of `data`.
  Splitter(std::string_view data, size_t max_piece) : max_piece_(max_piece) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (char c : data) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    state_ = h | 1;
  }
  size_t next() {
    state_ ^= state_ << 13;  // xorshift64
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return 1 + static_cast<size_t>(state_ % max_piece_);
  }

 private:
  size_t max_piece_;
  uint64_t state_;
};

}  // namespace batchscope::fuzz

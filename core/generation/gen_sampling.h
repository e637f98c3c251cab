// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The next token from one row of logits: the most likely one when the
// temperature is 0, otherwise a draw from the softmax at that temperature,
// restricted to the smallest set of likeliest tokens whose mass reaches
// top_p. Logits that are NaN count as impossible; a row with no possible
// token gives kNoToken.
// Thread-safety: pure functions; the generator and scratch belong to the caller.

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "generation/gen_types.h"

namespace batchscope {

inline constexpr int32_t kNoToken = -1;

// `banned`: a token never chosen (the end-of-sequence token with
// ignore_eos), or kNoToken.
int32_t sample_token(std::span<const float> logits, const Sampling& s, int32_t banned,
                     std::mt19937_64& rng, std::vector<std::pair<float, int32_t>>& scratch);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/gen_sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace batchscope {

int32_t sample_token(std::span<const float> logits, const Sampling& s, int32_t banned,
                     std::mt19937_64& rng, std::vector<std::pair<float, int32_t>>& scratch) {
  const auto allowed = [&](size_t i) {
    return static_cast<int32_t>(i) != banned && !std::isnan(logits[i]) &&
           logits[i] > -std::numeric_limits<float>::infinity();
  };
  int32_t best = kNoToken;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (allowed(i) && (best == kNoToken || logits[i] > logits[static_cast<size_t>(best)])) {
      best = static_cast<int32_t>(i);
    }
  }
  if (best == kNoToken || !(s.temperature > 0)) return best;

  // Softmax at the temperature, shifted by the largest logit so exp cannot overflow.
  const double top = logits[static_cast<size_t>(best)];
  scratch.clear();
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!allowed(i)) continue;
    const double p = std::exp((logits[i] - top) / s.temperature);
    if (p > 0) {
      scratch.emplace_back(static_cast<float>(p), static_cast<int32_t>(i));
      total += p;
    }
  }
  std::sort(scratch.begin(), scratch.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  // The nucleus: the likeliest tokens until their mass reaches top_p.
  double mass = 0;
  size_t keep = 0;
  const double want = std::clamp(s.top_p, 0.0, 1.0) * total;
  while (keep < scratch.size()) {
    mass += scratch[keep++].first;
    if (mass >= want) break;
  }
  const double u = std::uniform_real_distribution<double>(0.0, mass)(rng);
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += scratch[i].first;
    if (u < acc) return scratch[i].second;
  }
  return scratch[keep - 1].second;
}

}  // namespace batchscope

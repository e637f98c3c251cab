// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/varied_inputs.h"

#include <algorithm>

namespace batchscope {

std::vector<Tensors> varied_inputs(const ModelMetadata& model, const LengthDist& lengths,
                                   uint64_t seed, size_t count) {
  // A workload's prompt lengths are the draws; its max_tokens go unused.
  GenWorkload draws(lengths, LengthDist{}, seed);
  std::vector<Tensors> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    out.push_back(random_inputs(model, seed + i, draws.next().prompt));
  }
  return out;
}

LengthDist default_lengths(const ModelMetadata& model) {
  int64_t top = -1;
  for (const TensorSpec& t : model.inputs) {
    const Shape item = t.item_shape();
    for (size_t d = 0; d < item.size(); ++d) {
      if (item[d] < 0 && t.item_max(d) > 0) top = top < 0 ? t.item_max(d) : std::min(top, t.item_max(d));
    }
  }
  LengthDist d;
  d.kind = LengthDist::Kind::kLognormal;
  d.a = 32;
  d.b = 1;
  d.cap = static_cast<double>(top > 0 ? top : 256);
  return d;
}

}  // namespace batchscope

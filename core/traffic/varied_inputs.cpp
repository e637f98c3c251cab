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

std::vector<uint32_t> varied_lengths(const ModelMetadata& model, const LengthDist& lengths,
                                     uint64_t seed, size_t count) {
  // random_inputs() draws length 16 for 0 and cuts each variable dimension
  // to its largest; a request's length is its first variable dimension's.
  GenWorkload draws(lengths, LengthDist{}, seed);
  std::vector<uint32_t> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const int64_t drawn = draws.next().prompt;
    int64_t length = -1;
    for (size_t k = 0; k < model.inputs.size() && length < 0; ++k) {
      const Shape item = model.inputs[k].sample_item_shape(drawn > 0 ? drawn : 16);
      const Shape declared = model.inputs[k].item_shape();
      for (size_t d = 0; d < item.size() && length < 0; ++d) {
        if (declared[d] < 0) length = item[d];
      }
    }
    out.push_back(static_cast<uint32_t>(std::max<int64_t>(length, 0)));
  }
  return out;
}

LengthDist default_lengths(const ModelMetadata& model) {
  int64_t top = -1;
  for (const TensorSpec& t : model.inputs) {
    const Shape item = t.item_shape();
    for (size_t d = 0; d < item.size(); ++d) {
      if (item[d] < 0 && t.item_max(d) > 0)
        top = top < 0 ? t.item_max(d) : std::min(top, t.item_max(d));
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

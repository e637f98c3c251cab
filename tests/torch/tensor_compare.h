// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Comparing model outputs in the torch tests.

#include <cmath>

#include "common/tensor.h"

namespace batchscope {

// Normwise relative error ||a - b|| / ||b|| (Euclidean), over every element
// of every output (FP32).
inline double relative_error(const Tensors& a, const Tensors& b) {
  double diff = 0, norm = 0;
  for (size_t k = 0; k < b.size(); ++k) {
    auto x = a[k].as<float>();
    auto y = b[k].as<float>();
    for (size_t i = 0; i < y.size(); ++i) {
      const double d = static_cast<double>(x[i]) - y[i];
      diff += d * d;
      norm += static_cast<double>(y[i]) * y[i];
    }
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

}  // namespace batchscope

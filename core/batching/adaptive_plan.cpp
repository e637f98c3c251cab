// SPDX-License-Identifier: GPL-3.0-or-later
#include "batching/adaptive_plan.h"

#include <algorithm>
#include <cmath>

namespace batchscope {

size_t adaptive_rate_bucket(double rate_per_s) {
  if (!(rate_per_s > 1.0)) return 0;
  const double k = std::floor(std::log(rate_per_s) / std::log(kAdaptiveRateStep));
  return static_cast<size_t>(std::clamp(k, 0.0, static_cast<double>(kAdaptiveRateBuckets - 1)));
}

double adaptive_bucket_rate(size_t bucket) {
  return std::pow(kAdaptiveRateStep, static_cast<double>(bucket) + 0.5);
}

}  // namespace batchscope

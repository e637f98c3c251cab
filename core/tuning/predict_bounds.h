// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The predictor keeps every request of a run in memory (about 70 bytes
// each), so a prediction stops at kMaxPredictedRequests: a traffic pattern
// without a smaller --requests limit gets that one.
// Thread-safety: a pure function.

#include <algorithm>
#include <cstdint>

#include "traffic/arrivals.h"

namespace batchscope {

inline constexpr uint64_t kMaxPredictedRequests = 5'000'000;

inline ArrivalSpec bounded_for_prediction(ArrivalSpec spec) {
  if (spec.max_requests == 0 || spec.max_requests > kMaxPredictedRequests)
    spec.max_requests = kMaxPredictedRequests;
  return spec;
}

}  // namespace batchscope

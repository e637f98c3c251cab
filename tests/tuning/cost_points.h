// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Cost models for the cost model's and the predictor's tests, from points
// t(b) or a straight line.

#include <gtest/gtest.h>

#include <vector>

#include "tuning/cost_model.h"

namespace batchscope::test {

inline CostModel points(std::vector<CostPoint> p) {
  Expected<CostModel> m = CostModel::from_points(std::move(p));
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? *m : CostModel();
}

// t(b) = a + c * b microseconds.
inline CostModel linear(double a_us, double c_us) {
  return points({{1, a_us + c_us}, {2, a_us + 2 * c_us}});
}

}  // namespace batchscope::test

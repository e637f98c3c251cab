// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a model's preprocess costs per request (a Python model whose class
// has `preprocess`, docs/python.md), as profile measures it and the
// predictor replays it:
//   - in the pool: one request's time in a pool process (its round trip:
//     sent, preprocessed, answered), as quantiles, measured with 1, 2, ...
//     processes busy at once (they share the cores);
//   - in a lane (preprocess_workers = 0): what preparing one request adds
//     to its batch's run time in the lane's own worker, as quantiles.
// In a cost file: "preprocess": {"lane_us_quantiles": [...], "pool":
// [{"busy": 1, "us_quantiles": [...]}, {"busy": 2, ...}]}; either part may
// be absent.
// Thread-safety: a plain value.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace batchscope {

struct PreprocessCost {
  struct Pool {
    uint32_t busy = 1;            // processes busy at once, itself included: 1..1024, rising
    std::vector<double> us = {};  // quantiles p0..p100, 2..kMaxQuantiles, in microseconds
  };
  std::vector<double> lane_us;  // quantiles; empty: not measured
  std::vector<Pool> pool;       // empty: not measured

  bool empty() const { return lane_us.empty() && pool.empty(); }
  // The quantiles measured with the most processes not above `busy` (the
  // fewest measured below that); empty when the pool was not measured.
  const std::vector<double>& pool_us(size_t busy) const;
  // Ok, or kInvalidArgument naming the field under `prefix` and quoting it.
  // The cost file's reader and writer are cost_json.cpp's.
  Status validate(const std::string& prefix = {}) const;
};

}  // namespace batchscope

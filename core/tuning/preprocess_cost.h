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
// Each part counts the requests behind it, which weigh it when a live run
// refines it (CostModel::calibrated; 0: not counted, as in files written
// before the count was kept).
// In a cost file: "preprocess": {"lane_us_quantiles": [...], "lane_requests":
// n, "pool": [{"busy": 1, "us_quantiles": [...], "requests": n}, {"busy": 2,
// ...}]}; either part may be absent, and each count.
// Thread-safety: a plain value.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace batchscope {

struct RunData;

struct PreprocessCost {
  struct Pool {
    uint32_t busy = 1;            // processes busy at once, itself included: 1..1024, rising
    std::vector<double> us = {};  // quantiles p0..p100, 2..kMaxQuantiles, in microseconds
    uint64_t requests = 0;        // measured
  };
  std::vector<double> lane_us;  // quantiles; empty: not measured
  uint64_t lane_requests = 0;   // measured
  std::vector<Pool> pool;       // empty: not measured

  bool empty() const { return lane_us.empty() && pool.empty(); }
  // What preprocess cost a live run's answered requests:
  //   - in the pool (RunData::prepared, the answered ones), grouped by how
  //     many processes were busy over each request's time there, on
  //     average, itself included (rounded): pool processes holding a
  //     request (answered or not) and lanes running a batch, as the
  //     predictor counts them;
  //   - in a lane, each lane-prepared batch's preparing (model_start -
  //     run_start) over its size, counted as that many requests.
  // A group of fewer than kMinSeen requests (a lane: batches) is left out.
  static PreprocessCost from_run(const RunData& run);
  static constexpr size_t kMinSeen = 20;
  // This cost refined by `seen` (from_run): each part seen averaged
  // quantile by quantile with this one's, weighted by their requests (this
  // one's capped at kMaxPointWeight; a part counted 0 weighs as one
  // request), a part this one lacks taken outright, and a part not seen
  // kept.
  PreprocessCost refined(const PreprocessCost& seen) const;
  // The quantiles measured with the most processes not above `busy` (the
  // fewest measured below that); empty when the pool was not measured.
  const std::vector<double>& pool_us(size_t busy) const;
  // Ok, or kInvalidArgument naming the field under `prefix` and quoting it.
  // The cost file's reader and writer are cost_json.cpp's.
  Status validate(const std::string& prefix = {}) const;
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// What a batch cost curve t(b) is made of (cost_model.h): its points, with
// their jitter and the live batches they rest on; how slow batches streak;
// the lanes' turnaround between batches; a curve measured with several lanes
// running at once, with its overhead and send lag; and the bounds a cost
// file's values must keep.
// Thread-safety: plain values.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tuning/send_lag.h"

namespace batchscope {

// The longest batch a cost model holds or gives, in microseconds (an hour).
inline constexpr double kMaxCostUs = 3.6e9;
// The most quantiles a measured overhead may hold.
inline constexpr size_t kMaxQuantiles = 1025;

// The cost file version this build writes, and the newest it reads.
inline constexpr int kCostFormatVersion = 3;
// The most batches a point's weight counts when a refinement averages it
// with a new run: the newest run of 1,000 batches moves it a sixth of the way.
inline constexpr uint64_t kMaxPointWeight = 5000;
// The largest run time over its median a quantile may give.
inline constexpr double kMaxRunFactor = 1e6;

// How a batch's jitter follows the batches before it: corr(k) = weight * rho^k
// of log(run time / t(b)).
// With sigma > 0 the slow part is a state of its own, divided out of t(b)
// and its quantiles: a batch runs t(b) * exp(sigma * s) * its size's jitter,
// s a unit Gaussian AR(1) with rho. With sigma 0 (a version-2 file without
// it) the quantile a batch's jitter is drawn at is weight-correlated instead.
struct JitterStreak {
  double weight = 0;  // [0, 1]; 0: independent draws
  double rho = 0;     // [0, 0.999]
  double sigma = 0;   // [0, 5]: the state's standard deviation in log units
  bool operator==(const JitterStreak&) const = default;
};

// How long a lane takes between a batch's end and the next batch's start
// when requests are waiting: it answers each request of the batch it ran
// (their callbacks run on the lane) and cuts the next. Measured from a
// live run; zero when not measured.
struct Turnaround {
  double fixed_us = 0;       // 0..kMaxCostUs
  double per_answer_us = 0;  // 0..kMaxCostUs, for each request of the batch that ended
  bool operator==(const Turnaround&) const = default;
  double us(size_t answers) const {
    return fixed_us + per_answer_us * static_cast<double>(answers);
  }
};

struct CostPoint {
  uint32_t batch = 1;    // batch size; >= 1, strictly increasing along a model
  double median_us = 0;  // median run time of a batch this size, in microseconds; 0..kMaxCostUs
  double spread = 0;     // relative half-width of the jitter, [0, 1): 0.05 is ±5%
  // Run time over the median at evenly spaced quantiles p0 .. p100: 2 to
  // kMaxQuantiles values, non-decreasing, each 0..kMaxRunFactor. Empty: the
  // jitter is uniform over ±spread.
  std::vector<double> run_quantiles = {};
  // False when the profile could not settle this size (a busy machine).
  bool settled = true;
  // The live batches this median rests on (a refinement weights by them); 0
  // when it was never measured live (a profile's, or scaled from others).
  uint64_t batches = 0;
  // When this size was last measured live, UTC ISO 8601; empty: never.
  std::string measured_at = {};
};

// The most size bands (1, 2-3, 4-7, ...) an overhead by batch size holds.
inline constexpr size_t kMaxSizeBands = 33;

// The most lanes a cost file may describe running at once.
inline constexpr uint32_t kMaxCostLanes = 1024;

// t(b) of one lane while `lanes` lanes run batches at once.
struct LaneCostPoints {
  uint32_t lanes = 2;  // 2..kMaxCostLanes, strictly increasing along a model
  std::vector<CostPoint> points;
  // A request's time outside its batch in a live run with this many lanes
  // (quantiles, as with_overhead() takes); empty when none was measured.
  std::vector<double> overhead_us = {};
  // The load driver's send lag in that run; empty when not measured.
  SendLagModel send_lag = {};
  // The overhead by the size of the batch answered (overhead_by_size()).
  std::vector<std::vector<double>> overhead_by_size = {};
  // Requests per second these lanes served with every batch full (a
  // calibration's probe); 0 when not measured.
  double capacity_rps = 0;
  // t(b) of a batch that started with fewer of these lanes running, in an
  // engine of this many lanes; empty when not measured.
  std::vector<CostPoint> alone = {};
  // How slow batches streaked in that run; weight 0 when not measured.
  JitterStreak streak = {};
  // The lanes' turnaround in that run; zero when not measured.
  Turnaround turnaround = {};
};

}  // namespace batchscope

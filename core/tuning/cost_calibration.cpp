// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/cost_calibration.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace batchscope {

namespace {

// The shares of capacity the steps send, in order.
constexpr std::array<double, 6> kShares = {0.10, 0.25, 0.40, 0.55, 0.70, 0.85};

}  // namespace

double capacity_rps(const CostModel& cost, uint32_t lanes, uint32_t max_batch) {
  lanes = std::max<uint32_t>(lanes, 1);
  double best = 0;
  for (uint32_t b = 1; b <= std::max<uint32_t>(max_batch, 1); ++b) {
    const double us = cost.cost_us(b, lanes);
    if (us > 0) best = std::max(best, 1e6 * b * lanes / us);
  }
  return best;
}

ArrivalSpec calibration_traffic(const CostModel& cost, uint32_t lanes, uint32_t max_batch,
                                double seconds, uint64_t seed) {
  const double capacity = capacity_rps(cost, lanes, max_batch);
  // A cost of nothing (no measurement yet) is served as fast as the engine can.
  const double top = capacity > 0 ? capacity : kCalibrationMaxRate;
  ArrivalSpec a;
  a.pattern = Pattern::kStep;
  a.duration_s = std::max(seconds, 0.06);
  a.seed = seed;
  for (double share : kShares) {
    a.steps.emplace_back(std::clamp(std::round(top * share), 1.0, kCalibrationMaxRate),
                         a.duration_s / static_cast<double>(kShares.size()));
  }
  return a;
}

Options cache_calibration_options(const Options& base, uint32_t max_batch, uint32_t lanes) {
  Options o = calibration_options(base, max_batch, lanes);
  o.max_wait_us = 0;
  return o;
}

Expected<LaneCalibration> calibrate_lanes(const ConfirmSpec& spec, const Options& base,
                                          CostModel& cost, uint32_t lanes, uint32_t max_batch,
                                          double seconds, const std::string& when) {
  LaneCalibration c;
  c.lanes = std::max<uint32_t>(lanes, 1);
  c.traffic = calibration_traffic(cost, c.lanes, max_batch, seconds);
  ConfirmSpec s = spec;
  s.traffic = c.traffic;
  auto run = run_live_once(s, cache_calibration_options(base, max_batch, c.lanes));
  if (!run) return run.error();
  c.batches = run->batches;
  c.p50_ms = run->summary.latency.p50_ms;
  c.p99_ms = run->summary.latency.p99_ms;
  c.run = run->run;
  if (!run->observed) return c;
  const CostModel& seen = *run->observed;
  std::vector<double> moved;
  for (const CostPoint& p : seen.points()) {
    c.counted += p.batches;
    const double was = cost.cost_us(p.batch, c.lanes);
    if (was > 0) moved.push_back(p.median_us / was - 1.0);
  }
  if (!moved.empty()) {
    std::nth_element(moved.begin(), moved.begin() + static_cast<std::ptrdiff_t>(moved.size() / 2),
                     moved.end());
    c.moved = moved[moved.size() / 2];
  }
  cost = cost.calibrated(seen, c.lanes, when);
  return c;
}

}  // namespace batchscope

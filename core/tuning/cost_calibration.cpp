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
    // A lane is busy for the batch and then its turnaround (answering it).
    const double us = cost.cost_us(b, lanes) + cost.turnaround(lanes).us(b);
    if (us > 0) best = std::max(best, 1e6 * b * lanes / us);
  }
  // What the lanes served with every batch full bounds it: the load
  // driver's and the engine's own work per request count there too.
  const double measured = cost.measured_capacity(lanes);
  return measured > 0 ? std::min(best, measured) : best;
}

ArrivalSpec probe_traffic(uint32_t max_batch, uint32_t queue_capacity, double seconds) {
  ArrivalSpec a;
  a.pattern = Pattern::kClosed;
  a.concurrency = std::clamp<uint32_t>(2 * std::max<uint32_t>(max_batch, 1), 1,
                                       std::max<uint32_t>(queue_capacity, 1));
  a.duration_s = std::max(seconds / 6, 0.05);
  return a;
}

ArrivalSpec calibration_traffic(double capacity, double seconds, uint64_t seed) {
  const double top = capacity > 0 ? capacity : kCalibrationMaxRate;
  ArrivalSpec a;
  a.pattern = Pattern::kStep;
  a.duration_s = std::max(seconds * 5 / 6, 0.06);
  a.seed = seed;
  for (double share : kShares) {
    a.steps.emplace_back(std::clamp(std::round(top * share), 1.0, kCalibrationMaxRate),
                         a.duration_s / static_cast<double>(kShares.size()));
  }
  return a;
}

Options cache_calibration_options(const Options& base, uint32_t max_batch, uint32_t lanes) {
  Options o = calibration_options(base, max_batch, lanes);
  o.max_wait_us = 1000;
  return o;
}

namespace {

// Refines `cost` with what `run` saw; the median move of the sizes seen,
// and their batches.
std::pair<double, uint64_t> refine_with(const LiveRun& run, CostModel& cost, uint32_t lanes,
                                        const std::string& when) {
  if (!run.observed) return {0.0, 0};
  std::vector<double> moved;
  uint64_t counted = 0;
  for (const CostPoint& p : run.observed->points()) {
    counted += p.batches;
    const double was = cost.cost_us(p.batch, lanes);
    if (was > 0) moved.push_back(p.median_us / was - 1.0);
  }
  CostEvidence evidence = evidence_of(*run.observed, cost, lanes, when);
  cost = cost.calibrated(*run.observed, lanes, when).with_evidence(std::move(evidence));
  if (moved.empty()) return {0.0, counted};
  std::nth_element(moved.begin(), moved.begin() + static_cast<std::ptrdiff_t>(moved.size() / 2),
                   moved.end());
  return {moved[moved.size() / 2], counted};
}

}  // namespace

Expected<LaneCalibration> calibrate_lanes(const ConfirmSpec& spec, const Options& base,
                                          CostModel& cost, uint32_t lanes, uint32_t max_batch,
                                          double seconds, const std::string& when) {
  LaneCalibration c;
  c.lanes = std::max<uint32_t>(lanes, 1);
  const Options o = cache_calibration_options(base, max_batch, c.lanes);
  ConfirmSpec s = spec;
  s.traffic = probe_traffic(max_batch, o.queue_capacity, seconds);
  auto probe = run_live_once(s, o);
  if (!probe) return probe.error();
  c.capacity = probe->summary.throughput_rps;
  c.probe = probe->run;
  CostModel m = cost;
  c.counted = refine_with(*probe, m, c.lanes, when).second;
  m = m.with_capacity(c.lanes, c.capacity);
  c.traffic = calibration_traffic(c.capacity, seconds);
  s.traffic = c.traffic;
  auto run = run_live_once(s, o);
  if (!run) return run.error();
  c.batches = run->batches + probe->batches;
  c.p50_ms = run->summary.latency.p50_ms;
  c.p99_ms = run->summary.latency.p99_ms;
  c.run = run->run;
  // What moved is told against the cost before either run.
  const CostModel before = cost;
  auto [moved, counted] = refine_with(*run, m, c.lanes, when);
  c.counted += counted;
  if (run->observed) {
    std::vector<double> against;
    for (const CostPoint& p : run->observed->points()) {
      const double was = before.cost_us(p.batch, c.lanes);
      if (was > 0) against.push_back(p.median_us / was - 1.0);
    }
    if (!against.empty()) {
      std::nth_element(against.begin(),
                       against.begin() + static_cast<std::ptrdiff_t>(against.size() / 2),
                       against.end());
      moved = against[against.size() / 2];
    }
  }
  c.moved = moved;
  cost = std::move(m);
  return c;
}

}  // namespace batchscope

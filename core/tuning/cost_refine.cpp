// SPDX-License-Identifier: GPL-3.0-or-later
// CostModel's refinement by live runs: each size's run times averaged with
// the file's by live batches (each point's weight capped), sizes never seen
// scaled by the nearest ratio, and the per-lane overhead, send lag, streak
// and turnaround averaged the same way.
#include <algorithm>
#include <cmath>

#include "runs/histogram.h"
#include "tuning/cost_model.h"

namespace batchscope {

namespace {

// A point's weight in a refinement: its live batches, capped.
double weight_of(const CostPoint& p) {
  return static_cast<double>(std::min(p.batches, kMaxPointWeight));
}

// The live batches behind `points`, each point's capped.
uint64_t weight_of(const std::vector<CostPoint>& points) {
  uint64_t w = 0;
  for (const CostPoint& p : points) w += std::min(p.batches, kMaxPointWeight);
  return w;
}

// `was` and `now` averaged with weights `w` and `n` (n > 0).
double mean_of(double was, double w, double now, double n) { return (was * w + now * n) / (w + n); }

// A size seen again: the old median, spread and quantiles averaged with the
// run's by batches (the quantiles point by point when both hold as many).
CostPoint merged(const CostPoint& was, const CostPoint& seen, const std::string& when) {
  CostPoint out = seen;
  const double w = weight_of(was), n = static_cast<double>(std::max<uint64_t>(seen.batches, 1));
  if (w > 0) {
    out.median_us = mean_of(was.median_us, w, seen.median_us, n);
    out.spread = mean_of(was.spread, w, seen.spread, n);
    if (was.run_quantiles.size() == seen.run_quantiles.size()) {
      for (size_t k = 0; k < out.run_quantiles.size(); ++k) {
        out.run_quantiles[k] = mean_of(was.run_quantiles[k], w, seen.run_quantiles[k], n);
      }
    }
    out.batches = std::min(was.batches, kMaxPointWeight) + seen.batches;
  }
  if (!when.empty()) out.measured_at = when;
  return out;
}

const CostPoint* find_size(const std::vector<CostPoint>& v, uint32_t b) {
  for (const CostPoint& p : v) {
    if (p.batch == b) return &p;
  }
  return nullptr;
}

// `base` refined by `seen` as CostModel::calibrated() says.
std::vector<CostPoint> refine(const std::vector<CostPoint>& base,
                              const std::vector<CostPoint>& seen, const std::string& when,
                              double (*interpolate)(const std::vector<CostPoint>&, size_t)) {
  std::vector<CostPoint> out;  // the seen sizes, merged with what was measured there
  std::vector<double> ratio;   // merged over modelled, at each seen size
  for (const CostPoint& s : seen) {
    const CostPoint* was = find_size(base, s.batch);
    out.push_back(merged(was ? *was : CostPoint{}, s, when));
    const double modelled = interpolate(base, s.batch);
    ratio.push_back(modelled > 0 ? out.back().median_us / modelled : 1.0);
  }
  auto ratio_at = [&](uint32_t b) {
    if (b <= seen.front().batch) return ratio.front();
    if (b >= seen.back().batch) return ratio.back();
    size_t k = 1;
    while (seen[k].batch < b) ++k;
    const double f = double(b - seen[k - 1].batch) / double(seen[k].batch - seen[k - 1].batch);
    return ratio[k - 1] + (ratio[k] - ratio[k - 1]) * f;
  };
  for (const CostPoint& p : base) {
    if (find_size(seen, p.batch)) continue;
    CostPoint q = p;
    // A size measured live before keeps its own measurement.
    if (p.batches == 0) q.median_us = std::min(p.median_us * ratio_at(p.batch), kMaxCostUs);
    out.push_back(q);
  }
  std::sort(out.begin(), out.end(),
            [](const CostPoint& a, const CostPoint& b) { return a.batch < b.batch; });
  // Sizes kept from earlier runs beside sizes just seen may cross, and a
  // larger batch never costs less: the medians made monotone, weighted by
  // batches, each size's quantiles kept about its new median.
  std::vector<double> medians, weights;
  for (const CostPoint& p : out) {
    medians.push_back(p.median_us);
    weights.push_back(std::max(1.0, weight_of(p)));
  }
  const std::vector<double> fitted = monotone_fit(medians, weights);
  for (size_t i = 0; i < out.size(); ++i) {
    if (fitted[i] <= 0 || fitted[i] == medians[i]) continue;
    for (double& q : out[i].run_quantiles) q = std::min(q * medians[i] / fitted[i], kMaxRunFactor);
    out[i].median_us = fitted[i];
  }
  return out;
}

// Quantiles `was` and `now` averaged by weight, or `now` where `was` has
// none or another count.
std::vector<double> merged(const std::vector<double>& was, uint64_t w,
                           const std::vector<double>& now, uint64_t n) {
  if (was.empty() || w == 0 || was.size() != now.size()) return now;
  std::vector<double> out(now.size());
  const double dw = static_cast<double>(w), dn = static_cast<double>(std::max<uint64_t>(n, 1));
  for (size_t k = 0; k < now.size(); ++k) out[k] = mean_of(was[k], dw, now[k], dn);
  return out;
}

// Each band averaged where both measured it, else the one that did.
std::vector<std::vector<double>> merged_bands(const std::vector<std::vector<double>>& was,
                                              uint64_t w,
                                              const std::vector<std::vector<double>>& now,
                                              uint64_t n) {
  std::vector<std::vector<double>> out(std::max(was.size(), now.size()));
  for (size_t k = 0; k < out.size(); ++k) {
    const std::vector<double> none;
    const std::vector<double>& a = k < was.size() ? was[k] : none;
    const std::vector<double>& b = k < now.size() ? now[k] : none;
    out[k] = b.empty() ? a : merged(a, w, b, n);
  }
  return out;
}

JitterStreak merged(const JitterStreak& was, uint64_t w, const JitterStreak& now, uint64_t n) {
  if (was.weight <= 0 || w == 0) return now;
  const double dw = static_cast<double>(w), dn = static_cast<double>(std::max<uint64_t>(n, 1));
  return {mean_of(was.weight, dw, now.weight, dn), mean_of(was.rho, dw, now.rho, dn),
          mean_of(was.sigma, dw, now.sigma, dn)};
}

Turnaround merged(const Turnaround& was, uint64_t w, const Turnaround& now, uint64_t n) {
  if (was == Turnaround{} || w == 0) return now;
  const double dw = static_cast<double>(w), dn = static_cast<double>(std::max<uint64_t>(n, 1));
  return {mean_of(was.fixed_us, dw, now.fixed_us, dn),
          mean_of(was.per_answer_us, dw, now.per_answer_us, dn)};
}

}  // namespace

uint64_t CostModel::live_batches(uint32_t lanes) const {
  if (lanes <= 1) return weight_of(points_);
  for (const LaneCostPoints& l : lanes_) {
    if (l.lanes == lanes) return weight_of(l.points);
  }
  return 0;
}

CostModel CostModel::calibrated(const CostModel& observed, uint32_t lanes,
                                const std::string& when) const {
  // Its lanes prepared their own batches: its t(b) holds preprocess too.
  if (observed.lanes_prepared_ && !preprocess_.lane_us.empty()) return *this;
  CostModel m = *this;
  // Measured on the model's examples, or refined before: the run's
  // preprocess refines it. A cost that never measured it (a model without
  // preprocess, or a profile that could not) does not start one.
  if (!preprocess_.empty()) m.preprocess_ = preprocess_.refined(observed.preprocess_);
  const uint64_t w = live_batches(lanes);          // behind the curve before this run
  const uint64_t n = weight_of(observed.points_);  // this run's
  if (lanes <= 1) {
    if (observed.streak_.weight > 0) m.streak_ = merged(streak_, w, observed.streak_, n);
    if (observed.turnaround_ != Turnaround{}) {
      m.turnaround_ = merged(turnaround_, w, observed.turnaround_, n);
    }
    m.points_ = refine(points_, observed.points_, when, &CostModel::interpolate);
    // A curve whose overhead still holds the send lag (before version 3)
    // takes a run's split outright.
    const uint64_t wo = observed.has_send_lag() && !has_send_lag() ? 0 : w;
    if (observed.has_overhead())
      m.overhead_us_ = merged(overhead_us_, wo, observed.overhead_us_, n);
    if (observed.has_send_lag()) m.send_lag_ = merged(send_lag_, wo, observed.send_lag_, n);
    m.overhead_by_size_ = merged_bands(overhead_by_size_, wo, observed.overhead_by_size_, n);
    return m;
  }
  // The curve for `lanes`, or a new one from the nearest fewer lanes' curve.
  const std::vector<CostPoint>* from = &points_;
  std::vector<CostPoint> alone_refined;
  auto it = m.lanes_.begin();
  for (; it != m.lanes_.end() && it->lanes < lanes; ++it) from = &it->points;
  if (!observed.alone_.empty()) {
    // The lone batches of this many lanes: their curve, or one made from
    // the nearest fewer lanes' (none of its sizes measured this way).
    std::vector<CostPoint> base;
    for (auto l = m.lanes_.begin(); l != m.lanes_.end(); ++l) {
      if (l->lanes == lanes) base = l->alone;
    }
    if (base.empty()) {
      base = *from;
      for (CostPoint& p : base) p.batches = 0, p.measured_at.clear();
    }
    alone_refined = refine(base, observed.alone_, when, &CostModel::interpolate);
  }
  if (it != m.lanes_.end() && it->lanes == lanes) {
    it->points = refine(it->points, observed.points_, when, &CostModel::interpolate);
  } else {
    // Made from another curve: none of its sizes was measured with these lanes.
    std::vector<CostPoint> base = *from;
    for (CostPoint& p : base) p.batches = 0, p.measured_at.clear();
    it = m.lanes_.insert(
        it, LaneCostPoints{lanes, refine(base, observed.points_, when, &CostModel::interpolate)});
  }
  if (!alone_refined.empty()) it->alone = std::move(alone_refined);
  const uint64_t wo = observed.has_send_lag() && it->send_lag.empty() ? 0 : w;
  if (observed.has_overhead()) {
    it->overhead_us = merged(it->overhead_us, wo, observed.overhead_us_, n);
  }
  if (observed.has_send_lag()) it->send_lag = merged(it->send_lag, wo, observed.send_lag_, n);
  it->overhead_by_size = merged_bands(it->overhead_by_size, wo, observed.overhead_by_size_, n);
  if (observed.streak_.weight > 0) it->streak = merged(it->streak, w, observed.streak_, n);
  if (observed.turnaround_ != Turnaround{}) {
    it->turnaround = merged(it->turnaround, w, observed.turnaround_, n);
  }
  return m;
}

}  // namespace batchscope

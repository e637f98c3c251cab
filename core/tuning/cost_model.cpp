// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/cost_model.h"

#include <map>
#include <queue>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "batching/synthetic_runner.h"
#include "common/text_out.h"
#include "runs/histogram.h"
#include "tuning/cost_checks.h"

namespace batchscope {

namespace cost_detail {

std::string number_text(double v) {
  std::string s;
  append_number(s, v, v != v ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
  return s;
}

std::string point_name(size_t i, std::string_view field) {
  return "points[" + std::to_string(i) + "]" + (field.empty() ? "" : ".") + std::string(field);
}

Status check_points(const std::vector<CostPoint>& points, const std::string& prefix) {
  if (points.empty()) {
    return invalid_argument(prefix + "points is empty; a cost model needs at least one point");
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const CostPoint& p = points[i];
    if (p.batch < 1) {
      return invalid_argument(prefix + point_name(i, "batch") + " = " + std::to_string(p.batch) +
                              " must be at least 1");
    }
    if (i > 0 && p.batch <= points[i - 1].batch) {
      return invalid_argument(prefix + point_name(i, "batch") + " = " + std::to_string(p.batch) +
                              " must be above " + point_name(i - 1, "batch") + " = " +
                              std::to_string(points[i - 1].batch) +
                              "; batch sizes must strictly increase");
    }
    if (!(std::isfinite(p.median_us) && p.median_us >= 0 && p.median_us <= kMaxCostUs)) {
      return invalid_argument(prefix + point_name(i, "median_us") + " = " +
                              number_text(p.median_us) + " must be from 0 to 3.6e9 (an hour)");
    }
    if (!(p.spread >= 0 && p.spread < 1)) {
      return invalid_argument(prefix + point_name(i, "spread") + " = " + number_text(p.spread) +
                              " must be in [0, 1)");
    }
    const std::string name = point_name(i, "run_quantiles");
    if (Status s = check_quantiles(p.run_quantiles, name.c_str(), kMaxRunFactor, prefix); !s) {
      return s;
    }
  }
  return Status::Ok();
}

Status check_bands(const std::vector<std::vector<double>>& bands, const std::string& prefix) {
  if (bands.size() > kMaxSizeBands) {
    return invalid_argument(prefix + "overhead_by_size holds " + std::to_string(bands.size()) +
                            " bands; at most " + std::to_string(kMaxSizeBands));
  }
  for (size_t k = 0; k < bands.size(); ++k) {
    const std::string name = "overhead_by_size[" + std::to_string(k) + "]";
    if (Status s = check_quantiles(bands[k], name.c_str(), kMaxCostUs, prefix); !s) return s;
  }
  return Status::Ok();
}

Status check_send_lag(const SendLagModel& lag, const std::string& prefix) {
  if (lag.empty() && (!lag.by_busy.empty() || !lag.waiting.empty())) {
    return invalid_argument(prefix + "send_lag has stalls but no base_us_quantiles");
  }
  if (Status s = check_quantiles(lag.base_us, "send_lag.base_us_quantiles", kMaxCostUs, prefix);
      !s) {
    return s;
  }
  for (const auto& [name, v] :
       {std::pair{"stalls", &lag.by_busy}, std::pair{"stalls_waiting", &lag.waiting}}) {
    for (size_t k = 0; k < v->size(); ++k) {
      const std::string at = std::string("send_lag.") + name + "[" + std::to_string(k) + "]";
      const double r = (*v)[k].per_s;
      if (!(r >= 0 && r <= 1e9)) {
        return invalid_argument(prefix + at + ".per_s = " + number_text(r) +
                                " must be from 0 to 1e9");
      }
      if (Status s =
              check_quantiles((*v)[k].us, (at + ".us_quantiles").c_str(), kMaxCostUs, prefix);
          !s) {
        return s;
      }
    }
  }
  return Status::Ok();
}

Status check_quantiles(const std::vector<double>& q, const char* name, double max,
                       const std::string& prefix) {
  if (q.empty()) return Status::Ok();
  if (q.size() < 2 || q.size() > kMaxQuantiles) {
    return invalid_argument(prefix + name + " holds " + std::to_string(q.size()) +
                            " values; it must hold 2 to " + std::to_string(kMaxQuantiles));
  }
  for (size_t i = 0; i < q.size(); ++i) {
    const std::string where = prefix + name + "[" + std::to_string(i) + "] = " + number_text(q[i]);
    if (!(std::isfinite(q[i]) && q[i] >= 0 && q[i] <= max)) {
      return invalid_argument(where + " must be from 0 to " + number_text(max));
    }
    if (i > 0 && q[i] < q[i - 1]) {
      return invalid_argument(where + " is below " + name + "[" + std::to_string(i - 1) +
                              "] = " + number_text(q[i - 1]) + "; quantiles must not decrease");
    }
  }
  return Status::Ok();
}

}  // namespace cost_detail

using cost_detail::check_bands;
using cost_detail::check_points;
using cost_detail::check_quantiles;
using cost_detail::check_send_lag;
using cost_detail::number_text;

namespace {

// The value at quantile u of quantiles `q` (ascending, at least 2).
double at_quantile(const std::vector<double>& q, double u) {
  const double pos = std::clamp(u, 0.0, 1.0) * static_cast<double>(q.size() - 1);
  const size_t lo = std::min(static_cast<size_t>(pos), q.size() - 2);
  return q[lo] + (q[lo + 1] - q[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

CostModel::CostModel() : points_{CostPoint{1, 0, 0}} {}

Expected<CostModel> CostModel::from_points(std::vector<CostPoint> points) {
  if (Status s = check_points(points, ""); !s) return s.error();
  return CostModel(std::move(points));
}

CostModel CostModel::from_synthetic(const SyntheticCost& cost, uint32_t max_batch) {
  const double spread = std::clamp(cost.jitter, 0.0, std::nextafter(1.0, 0.0));
  std::vector<CostPoint> points;
  // The log term bends the curve, so only a point per size keeps it exact.
  const uint32_t last = cost.log_us > 0 ? std::max<uint32_t>(max_batch, 2) : 2;
  points.reserve(last);
  for (uint32_t b = 1; b <= last; ++b) {
    points.push_back({b, std::max(cost.cost_us(b), 0.0), spread});
  }
  return CostModel(std::move(points));
}

Expected<CostModel> CostModel::with_lanes(std::vector<LaneCostPoints> lanes) const {
  for (size_t i = 0; i < lanes.size(); ++i) {
    const std::string where = "lanes[" + std::to_string(i) + "]";
    const uint32_t n = lanes[i].lanes;
    if (n < 2 || n > kMaxCostLanes) {
      return invalid_argument(where + ".lanes = " + std::to_string(n) + " must be from 2 to " +
                              std::to_string(kMaxCostLanes));
    }
    if (i > 0 && n <= lanes[i - 1].lanes) {
      return invalid_argument(where + ".lanes = " + std::to_string(n) + " must be above " +
                              std::to_string(lanes[i - 1].lanes) + ", the entry before's");
    }
    if (Status s = check_points(lanes[i].points, where + "."); !s) return s.error();
    if (Status s =
            check_quantiles(lanes[i].overhead_us, "overhead_us_quantiles", kMaxCostUs, where + ".");
        !s) {
      return s.error();
    }
    if (Status s = check_send_lag(lanes[i].send_lag, where + "."); !s) return s.error();
    if (Status s = check_bands(lanes[i].overhead_by_size, where + "."); !s) return s.error();
    if (!lanes[i].alone.empty()) {
      if (Status s = check_points(lanes[i].alone, where + ".alone."); !s) return s.error();
    }
    if (!(lanes[i].capacity_rps >= 0 && lanes[i].capacity_rps <= 1e9)) {
      return invalid_argument(where + ".capacity_rps = " + number_text(lanes[i].capacity_rps) +
                              " must be from 0 to 1e9");
    }
  }
  CostModel m = *this;
  m.lanes_ = std::move(lanes);
  return m;
}

Expected<CostModel> CostModel::with_overhead(std::vector<double> overhead_us) const {
  if (Status s = check_quantiles(overhead_us, "overhead_us_quantiles", kMaxCostUs, ""); !s) {
    return s.error();
  }
  CostModel m = *this;
  m.overhead_us_ = std::move(overhead_us);
  return m;
}

Expected<CostModel> CostModel::with_send_lag(SendLagModel lag) const {
  if (Status s = check_send_lag(lag, ""); !s) return s.error();
  CostModel m = *this;
  m.send_lag_ = std::move(lag);
  return m;
}

Expected<CostModel> CostModel::with_overhead_by_size(std::vector<std::vector<double>> bands) const {
  if (Status s = check_bands(bands, ""); !s) return s.error();
  CostModel m = *this;
  m.overhead_by_size_ = std::move(bands);
  return m;
}

const std::vector<double>& CostModel::overheads_us(size_t lanes, size_t batch) const {
  const std::vector<std::vector<double>>* bands = &overhead_by_size_;
  for (const LaneCostPoints& l : lanes_) {
    if (l.lanes <= lanes && !l.overhead_by_size.empty()) bands = &l.overhead_by_size;
  }
  const size_t want = batch > 0 ? static_cast<size_t>(std::bit_width(batch)) - 1 : 0;
  const std::vector<double>* best = nullptr;
  size_t gap = SIZE_MAX;
  for (size_t k = 0; k < bands->size(); ++k) {
    if ((*bands)[k].empty()) continue;
    const size_t d = k > want ? k - want : want - k;
    if (d < gap) gap = d, best = &(*bands)[k];
  }
  return best ? *best : overheads_us(lanes);
}

CostModel CostModel::with_capacity(uint32_t lanes, double rps) const {
  CostModel m = *this;
  const double v = std::isfinite(rps) ? std::clamp(rps, 0.0, 1e9) : 0.0;
  if (lanes <= 1) {
    m.capacity_rps_ = v;
  } else {
    for (LaneCostPoints& l : m.lanes_) {
      if (l.lanes == lanes) l.capacity_rps = v;
    }
  }
  return m;
}

double CostModel::measured_capacity(uint32_t lanes) const {
  if (lanes <= 1) return capacity_rps_;
  for (const LaneCostPoints& l : lanes_) {
    if (l.lanes == lanes) return l.capacity_rps;
  }
  return 0;
}

const SendLagModel& CostModel::send_lag(size_t lanes) const {
  const SendLagModel* use = &send_lag_;
  for (const LaneCostPoints& l : lanes_) {
    if (l.lanes <= lanes && !l.send_lag.empty()) use = &l.send_lag;
  }
  return *use;
}

double CostModel::overhead_us(double u) const {
  return overhead_us_.empty() ? 0.0 : at_quantile(overhead_us_, u);
}

const std::vector<double>& CostModel::overheads_us(size_t lanes) const {
  const std::vector<double>* use = &overhead_us_;
  for (const LaneCostPoints& l : lanes_) {
    if (l.lanes <= lanes && !l.overhead_us.empty()) use = &l.overhead_us;
  }
  return *use;
}

const JitterStreak& CostModel::streak(size_t lanes) const {
  const JitterStreak* use = &streak_;
  for (const LaneCostPoints& l : lanes_) {
    if (l.lanes <= lanes && l.streak.weight > 0) use = &l.streak;
  }
  return *use;
}

const Turnaround& CostModel::turnaround(size_t lanes) const {
  const Turnaround* use = &turnaround_;
  for (const LaneCostPoints& l : lanes_) {
    if (l.lanes <= lanes && l.turnaround != Turnaround{}) use = &l.turnaround;
  }
  return *use;
}

Expected<CostModel> CostModel::with_length_grid(LengthGrid grid) const {
  if (Status s = grid.validate(); !s) return s.error();
  CostModel m = *this;
  m.length_grid_ = std::move(grid);
  return m;
}

Expected<CostModel> CostModel::with_preprocess(PreprocessCost preprocess) const {
  if (Status s = preprocess.validate(); !s) return s.error();
  CostModel m = *this;
  m.preprocess_ = std::move(preprocess);
  return m;
}

CostModel CostModel::with_turnaround(Turnaround t) const {
  CostModel m = *this;
  auto in_range = [](double v) { return std::isfinite(v) ? std::clamp(v, 0.0, kMaxCostUs) : 0.0; };
  m.turnaround_ = {in_range(t.fixed_us), in_range(t.per_answer_us)};
  return m;
}

double CostModel::quantile_of(const std::vector<double>& q, double u) {
  if (q.size() < 2) return q.empty() ? 0.0 : q.front();
  return at_quantile(q, u);
}

size_t CostModel::segment(const std::vector<CostPoint>& points, size_t batch) {
  // The first point above b ends the segment; outside the points, the end pair.
  const auto it = std::upper_bound(points.begin(), points.end(), batch,
                                   [](size_t b, const CostPoint& p) { return b < p.batch; });
  const size_t hi = static_cast<size_t>(it - points.begin());
  return std::clamp<size_t>(hi, 1, points.size() - 1) - 1;
}

double CostModel::cost_us(size_t batch) const { return interpolate(points_, batch); }

double CostModel::cost_us(size_t batch, size_t busy) const {
  const LaneCostPoints* use = nullptr;
  for (const LaneCostPoints& l : lanes_) {
    if (l.lanes <= busy) use = &l;
  }
  return use ? interpolate(use->points, batch) : interpolate(points_, batch);
}

Duration CostModel::cost(size_t batch, size_t busy) const {
  return Duration(std::llround(std::min(cost_us(batch, busy), kMaxCostUs) * 1000.0));
}

double CostModel::cost_us(size_t batch, size_t busy, size_t lanes) const {
  if (lanes > 1 && busy < lanes) {
    for (const LaneCostPoints& l : lanes_) {
      if (l.lanes == lanes && !l.alone.empty()) return interpolate(l.alone, batch);
    }
  }
  return cost_us(batch, busy);
}

Duration CostModel::cost(size_t batch, size_t busy, size_t lanes) const {
  return Duration(std::llround(std::min(cost_us(batch, busy, lanes), kMaxCostUs) * 1000.0));
}

double CostModel::interpolate(const std::vector<CostPoint>& points, size_t batch) {
  const double b = static_cast<double>(batch);
  if (points.size() == 1) {
    const CostPoint& p = points[0];
    return std::max(0.0, p.median_us * b / static_cast<double>(p.batch));
  }
  const size_t k = segment(points, batch);
  const CostPoint& lo = points[k];
  const CostPoint& hi = points[k + 1];
  if (batch == lo.batch) return lo.median_us;  // exact at a point, without rounding
  if (batch == hi.batch) return hi.median_us;
  const double b0 = lo.batch, b1 = hi.batch;
  const double t = lo.median_us + (hi.median_us - lo.median_us) * (b - b0) / (b1 - b0);
  return std::max(0.0, t);
}

Duration CostModel::cost(size_t batch) const {
  return Duration(std::llround(std::min(cost_us(batch), kMaxCostUs) * 1000.0));
}

double CostModel::spread(size_t batch) const {
  if (batch <= points_.front().batch) return points_.front().spread;
  if (batch >= points_.back().batch) return points_.back().spread;
  const size_t k = segment(points_, batch);
  const CostPoint& lo = points_[k];
  const CostPoint& hi = points_[k + 1];
  const double f = (static_cast<double>(batch) - lo.batch) / (double(hi.batch) - lo.batch);
  return std::clamp(lo.spread + (hi.spread - lo.spread) * f, 0.0, std::nextafter(1.0, 0.0));
}

namespace {

// One point's run time over its median at quantile u.
double point_factor(const CostPoint& p, double u) {
  if (p.run_quantiles.size() >= 2) return at_quantile(p.run_quantiles, u);
  return 1.0 + p.spread * (2.0 * std::clamp(u, 0.0, 1.0) - 1.0);
}

}  // namespace

double CostModel::jitter_factor(size_t batch, double u) const {
  if (batch <= points_.front().batch) return point_factor(points_.front(), u);
  if (batch >= points_.back().batch) return point_factor(points_.back(), u);
  const size_t k = segment(points_, batch);
  const CostPoint& lo = points_[k];
  const CostPoint& hi = points_[k + 1];
  const double f = (static_cast<double>(batch) - lo.batch) / (double(hi.batch) - lo.batch);
  const double a = point_factor(lo, u), b = point_factor(hi, u);
  return std::max(0.0, a + (b - a) * f);
}

bool CostModel::has_jitter() const {
  auto varies = [](const std::vector<CostPoint>& points) {
    return std::any_of(points.begin(), points.end(), [](const CostPoint& p) {
      return p.spread > 0 ||
             (p.run_quantiles.size() >= 2 && p.run_quantiles.front() != p.run_quantiles.back());
    });
  };
  if (varies(points_) || streak_.sigma > 0) return true;
  return std::any_of(lanes_.begin(), lanes_.end(), [&](const LaneCostPoints& l) {
    return l.streak.sigma > 0 || varies(l.points);
  });
}

std::string CostModel::unsettled() const {
  std::string s;
  for (const CostPoint& p : points_) {
    if (!p.settled) s += (s.empty() ? "b = " : ", ") + std::to_string(p.batch);
  }
  return s;
}

std::string CostModel::describe() const {
  const CostPoint& first = points_.front();
  const CostPoint& last = points_.back();
  auto point = [](const CostPoint& p) {
    return number_text(std::round(p.median_us * 10) / 10) + " us at b=" + std::to_string(p.batch);
  };
  std::string s = points_.size() == 1 ? "t(b) proportional: " + point(first)
                                      : "t(b) from " + std::to_string(points_.size()) +
                                            " points: " + point(first) + " .. " + point(last);
  if (has_jitter()) s += ", with jitter";
  if (!overhead_us_.empty()) {
    s += ", measured overhead (median " + std::to_string(std::llround(overhead_us(0.5))) + " us)";
  }
  if (!send_lag_.empty()) s += ", send lag measured";
  if (!lanes_.empty()) {
    s += ", measured with " + std::to_string(lanes_.back().lanes) + " lanes at once";
  }
  if (!preprocess_.pool.empty()) {
    s += ", preprocess " +
         std::to_string(std::llround(quantile_of(preprocess_.pool.front().us, 0.5))) +
         " us a request in the pool";
  }
  if (!preprocess_.lane_us.empty()) {
    s += ", " + std::to_string(std::llround(quantile_of(preprocess_.lane_us, 0.5))) +
         " us in a lane";
  }
  return s;
}

CostModel CostModel::with_streak(JitterStreak streak) const {
  CostModel m = *this;
  m.streak_.weight = std::isfinite(streak.weight) ? std::clamp(streak.weight, 0.0, 1.0) : 0.0;
  m.streak_.rho = std::isfinite(streak.rho) ? std::clamp(streak.rho, 0.0, 0.999) : 0.0;
  m.streak_.sigma = std::isfinite(streak.sigma) ? std::clamp(streak.sigma, 0.0, 5.0) : 0.0;
  return m;
}

CostModel CostModel::independent_jitter() const {
  CostModel m = *this;
  // A slow state of its own keeps its spread, drawn afresh for each batch.
  auto apart = [](JitterStreak& k) {
    k = k.sigma > 0 ? JitterStreak{1, 0, k.sigma} : JitterStreak{};
  };
  apart(m.streak_);
  for (LaneCostPoints& l : m.lanes_) apart(l.streak);
  return m;
}

CostModel CostModel::uniform_jitter() const {
  CostModel m = *this;
  for (CostPoint& p : m.points_) p.run_quantiles.clear();
  for (LaneCostPoints& l : m.lanes_) {
    for (CostPoint& p : l.points) p.run_quantiles.clear();
  }
  return m;
}

}  // namespace batchscope

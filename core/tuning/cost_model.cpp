#include "tuning/cost_model.h"

#include <map>
#include <queue>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "batching/synthetic_runner.h"
#include "common/text_out.h"
#include "runs/histogram.h"

namespace batchscope {

namespace {

using Json = nlohmann::json;

constexpr double kMaxPointBatch = std::numeric_limits<uint32_t>::max();

std::string shortest(double v) {
  std::string s;
  append_number(s, v, v != v ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
  return s;
}

std::string at(size_t i, std::string_view field) {
  return "points[" + std::to_string(i) + "]" + (field.empty() ? "" : ".") + std::string(field);
}

// A JSON value as given, cut short so a message never echoes a whole document.
std::string excerpt(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

Status check_quantiles(const std::vector<double>& q, const char* name, double max,
                       const std::string& prefix);

Status check_points(const std::vector<CostPoint>& points, const std::string& prefix) {
  if (points.empty()) {
    return invalid_argument(prefix + "points is empty; a cost model needs at least one point");
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const CostPoint& p = points[i];
    if (p.batch < 1) {
      return invalid_argument(prefix + at(i, "batch") + " = " + std::to_string(p.batch) +
                              " must be at least 1");
    }
    if (i > 0 && p.batch <= points[i - 1].batch) {
      return invalid_argument(prefix + at(i, "batch") + " = " + std::to_string(p.batch) +
                              " must be above " + at(i - 1, "batch") + " = " +
                              std::to_string(points[i - 1].batch) +
                              "; batch sizes must strictly increase");
    }
    if (!(std::isfinite(p.median_us) && p.median_us >= 0 && p.median_us <= kMaxCostUs)) {
      return invalid_argument(prefix + at(i, "median_us") + " = " + shortest(p.median_us) +
                              " must be from 0 to 3.6e9 (an hour)");
    }
    if (!(p.spread >= 0 && p.spread < 1)) {
      return invalid_argument(prefix + at(i, "spread") + " = " + shortest(p.spread) +
                              " must be in [0, 1)");
    }
    const std::string name = at(i, "run_quantiles");
    if (Status s = check_quantiles(p.run_quantiles, name.c_str(), kMaxRunFactor, prefix); !s) {
      return s;
    }
  }
  return Status::Ok();
}

// Reads points[i].field as a number; `required` says whether it may be absent.
Expected<double> number_field(const Json& point, size_t i, const char* field, bool required,
                              double fallback, const std::string& prefix) {
  const auto it = point.find(field);
  if (it == point.end()) {
    if (!required) return fallback;
    return invalid_argument(prefix + at(i, field) + " is missing");
  }
  if (!it->is_number()) {
    return invalid_argument(prefix + at(i, field) + " = " + excerpt(*it) + " must be a number");
  }
  return it->get<double>();
}

Expected<std::vector<double>> number_array(const Json& j, const char* name,
                                           const std::string& prefix);

// Reads an optional "jitter_streak": {"weight": 0..1, "rho": 0..0.999,
// "sigma": 0..5 (optional)}.
Expected<JitterStreak> streak_from_json(const Json& j, const std::string& prefix) {
  const auto st = j.find("jitter_streak");
  if (st == j.end()) return JitterStreak{};
  const auto w = st->is_object() ? st->find("weight") : st->end();
  const auto r = st->is_object() ? st->find("rho") : st->end();
  if (!st->is_object() || w == st->end() || r == st->end() || !w->is_number() || !r->is_number() ||
      !(w->get<double>() >= 0 && w->get<double>() <= 1) ||
      !(r->get<double>() >= 0 && r->get<double>() <= 0.999)) {
    return invalid_argument(prefix + "jitter_streak = " + excerpt(*st) +
                            " must be {\"weight\": 0..1, \"rho\": 0..0.999}");
  }
  double sigma = 0;
  if (const auto sg = st->find("sigma"); sg != st->end()) {
    if (!sg->is_number() || !(sg->get<double>() >= 0 && sg->get<double>() <= 5)) {
      return invalid_argument(prefix + "jitter_streak.sigma = " + excerpt(*sg) +
                              " must be a number in 0..5");
    }
    sigma = sg->get<double>();
  }
  return JitterStreak{w->get<double>(), r->get<double>(), sigma};
}

// Reads an optional "turnaround": {"fixed_us": us, "per_answer_us": us}.
Expected<Turnaround> turnaround_from_json(const Json& j, const std::string& prefix) {
  const auto t = j.find("turnaround");
  if (t == j.end()) return Turnaround{};
  const auto f = t->is_object() ? t->find("fixed_us") : t->end();
  const auto a = t->is_object() ? t->find("per_answer_us") : t->end();
  auto ok = [&](Json::const_iterator v) {
    return v != t->end() && v->is_number() && v->get<double>() >= 0 &&
           v->get<double>() <= kMaxCostUs;
  };
  if (!t->is_object() || !ok(f) || !ok(a)) {
    return invalid_argument(prefix + "turnaround = " + excerpt(*t) +
                            " must be {\"fixed_us\": 0..3.6e9, \"per_answer_us\": 0..3.6e9}");
  }
  return Turnaround{f->get<double>(), a->get<double>()};
}

Expected<CostPoint> point_from_json(const Json& p, size_t i, const std::string& prefix) {
  if (!p.is_object()) {
    return invalid_argument(prefix + at(i, "") + " = " + excerpt(p) + " must be an object");
  }
  CostPoint out;
  const Expected<double> batch = number_field(p, i, "batch", true, 0, prefix);
  if (!batch) return batch.error();
  const double b = *batch;
  if (!(b >= 1 && b <= kMaxPointBatch && b == std::floor(b))) {
    return invalid_argument(prefix + at(i, "batch") + " = " + excerpt(p.at("batch")) +
                            " must be a whole number from 1 to 4294967295");
  }
  out.batch = static_cast<uint32_t>(b);
  const Expected<double> median = number_field(p, i, "median_us", true, 0, prefix);
  if (!median) return median.error();
  out.median_us = *median;
  const Expected<double> spread = number_field(p, i, "spread", false, 0, prefix);
  if (!spread) return spread.error();
  Expected<std::vector<double>> q = number_array(p, "run_quantiles", prefix + at(i, "") + ".");
  if (!q) return q.error();
  out.run_quantiles = std::move(*q);
  if (const auto it = p.find("settled"); it != p.end()) {
    if (!it->is_boolean()) {
      return invalid_argument(prefix + at(i, "settled") + " = " + excerpt(*it) +
                              " must be true or false");
    }
    out.settled = it->get<bool>();
  }
  out.spread = *spread;
  return out;
}

// nlohmann's messages start with "[json.exception.parse_error.101] ".
std::string without_tag(const char* what) {
  std::string s = what;
  const size_t end = s.find("] ");
  return (s.rfind("[json.exception", 0) == 0 && end != std::string::npos) ? s.substr(end + 2) : s;
}

// The value at quantile u of quantiles `q` (ascending, at least 2).
double at_quantile(const std::vector<double>& q, double u) {
  const double pos = std::clamp(u, 0.0, 1.0) * static_cast<double>(q.size() - 1);
  const size_t lo = std::min(static_cast<size_t>(pos), q.size() - 2);
  return q[lo] + (q[lo + 1] - q[lo]) * (pos - static_cast<double>(lo));
}

Status check_quantiles(const std::vector<double>& q, const char* name, double max,
                       const std::string& prefix) {
  if (q.empty()) return Status::Ok();
  if (q.size() < 2 || q.size() > kMaxQuantiles) {
    return invalid_argument(prefix + name + " holds " + std::to_string(q.size()) +
                            " values; it must hold 2 to " + std::to_string(kMaxQuantiles));
  }
  for (size_t i = 0; i < q.size(); ++i) {
    const std::string where = prefix + name + "[" + std::to_string(i) + "] = " + shortest(q[i]);
    if (!(std::isfinite(q[i]) && q[i] >= 0 && q[i] <= max)) {
      return invalid_argument(where + " must be from 0 to " + shortest(max));
    }
    if (i > 0 && q[i] < q[i - 1]) {
      return invalid_argument(where + " is below " + name + "[" + std::to_string(i - 1) +
                              "] = " + shortest(q[i - 1]) + "; quantiles must not decrease");
    }
  }
  return Status::Ok();
}

// Reads an optional array of numbers `name` from `j`.
Expected<std::vector<double>> number_array(const Json& j, const char* name,
                                           const std::string& prefix) {
  std::vector<double> out;
  const auto it = j.find(name);
  if (it == j.end()) return out;
  if (!it->is_array()) {
    return invalid_argument(prefix + name + " = " + excerpt(*it) + " must be an array");
  }
  out.reserve(it->size());  // bounded by the document, already in memory
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& v = (*it)[i];
    if (!v.is_number()) {
      return invalid_argument(prefix + name + "[" + std::to_string(i) + "] = " + excerpt(v) +
                              " must be a number");
    }
    out.push_back(v.get<double>());
  }
  return out;
}

void append_streak(std::string& out, const JitterStreak& k) {
  if (k.weight <= 0) return;
  out += ",\"jitter_streak\":{\"weight\":";
  append_json_number(out, k.weight);
  out += ",\"rho\":";
  append_json_number(out, k.rho);
  if (k.sigma > 0) {
    out += ",\"sigma\":";
    append_json_number(out, k.sigma);
  }
  out += '}';
}

void append_turnaround(std::string& out, const Turnaround& t) {
  if (t == Turnaround{}) return;
  out += ",\"turnaround\":{\"fixed_us\":";
  append_json_number(out, t.fixed_us);
  out += ",\"per_answer_us\":";
  append_json_number(out, t.per_answer_us);
  out += '}';
}

void append_array(std::string& out, const char* name, const std::vector<double>& v) {
  if (v.empty()) return;
  out += ",\"";
  out += name;
  out += "\":[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    append_json_number(out, v[i]);
  }
  out += ']';
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

Expected<CostModel> CostModel::from_profile_json(std::string_view text) {
  const std::string prefix = "profile JSON: ";
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return invalid_argument(prefix + "not valid JSON: " + without_tag(e.what()));
  }
  if (!j.is_object()) {
    return invalid_argument(prefix + "the top level = " + excerpt(j) + " must be an object");
  }
  if (const auto f = j.find("format"); f != j.end() && *f != "batchscope-cost") {
    return invalid_argument(prefix + "format = " + excerpt(*f) +
                            " is not a cost file's (\"batchscope-cost\")");
  }
  if (const auto v = j.find("version"); v != j.end()) {
    if (!v->is_number_integer() || v->get<int64_t>() < 1) {
      return invalid_argument(prefix + "version = " + excerpt(*v) +
                              " must be a whole number from 1");
    }
    if (v->get<int64_t>() > kCostFormatVersion) {
      return invalid_argument(
          prefix + "version = " + excerpt(*v) + " is newer than this batchscope reads (1 to " +
          std::to_string(kCostFormatVersion) + "); update batchscope or profile the model again");
    }
  }
  const auto it = j.find("points");
  if (it == j.end()) return invalid_argument(prefix + "\"points\" is missing");
  if (!it->is_array()) {
    return invalid_argument(prefix + "points = " + excerpt(*it) + " must be an array");
  }
  std::vector<CostPoint> points;
  points.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    Expected<CostPoint> p = point_from_json((*it)[i], i, prefix);
    if (!p) return p.error();
    points.push_back(*p);
  }
  if (Status s = check_points(points, prefix); !s) return s.error();
  Expected<std::vector<double>> overhead = number_array(j, "overhead_us_quantiles", prefix);
  if (!overhead) return overhead.error();
  if (Status s = check_quantiles(*overhead, "overhead_us_quantiles", kMaxCostUs, prefix); !s) {
    return s.error();
  }
  CostModel m(std::move(points));
  m.overhead_us_ = std::move(*overhead);
  Expected<JitterStreak> streak = streak_from_json(j, prefix);
  if (!streak) return streak.error();
  m.streak_ = *streak;
  Expected<Turnaround> turnaround = turnaround_from_json(j, prefix);
  if (!turnaround) return turnaround.error();
  m.turnaround_ = *turnaround;
  const auto lanes = j.find("lanes");
  if (lanes == j.end()) return m;
  if (!lanes->is_array()) {
    return invalid_argument(prefix + "lanes = " + excerpt(*lanes) + " must be an array");
  }
  std::vector<LaneCostPoints> entries;
  entries.reserve(lanes->size());  // bounded by the document, already in memory
  for (size_t i = 0; i < lanes->size(); ++i) {
    const Json& e = (*lanes)[i];
    const std::string where = prefix + "lanes[" + std::to_string(i) + "]";
    if (!e.is_object()) return invalid_argument(where + " = " + excerpt(e) + " must be an object");
    const auto n = e.find("lanes");
    if (n == e.end() || !n->is_number_integer()) {
      return invalid_argument(where + ".lanes = " + (n == e.end() ? "(missing)" : excerpt(*n)) +
                              " must be a whole number");
    }
    const auto pts = e.find("points");
    if (pts == e.end() || !pts->is_array()) {
      return invalid_argument(where + ".points = " +
                              (pts == e.end() ? "(missing)" : excerpt(*pts)) + " must be an array");
    }
    LaneCostPoints entry;
    const auto count = n->get<int64_t>();
    entry.lanes = count < 0 || count > kMaxCostLanes ? 0 : static_cast<uint32_t>(count);
    if (entry.lanes == 0) {
      return invalid_argument(where + ".lanes = " + excerpt(*n) + " must be from 2 to " +
                              std::to_string(kMaxCostLanes));
    }
    Expected<std::vector<double>> overhead = number_array(e, "overhead_us_quantiles", where + ".");
    if (!overhead) return overhead.error();
    entry.overhead_us = std::move(*overhead);
    Expected<JitterStreak> lane_streak = streak_from_json(e, where + ".");
    if (!lane_streak) return lane_streak.error();
    entry.streak = *lane_streak;
    Expected<Turnaround> lane_turnaround = turnaround_from_json(e, where + ".");
    if (!lane_turnaround) return lane_turnaround.error();
    entry.turnaround = *lane_turnaround;
    entry.points.reserve(pts->size());
    for (size_t k = 0; k < pts->size(); ++k) {
      Expected<CostPoint> p = point_from_json((*pts)[k], k, where + ".");
      if (!p) return p.error();
      entry.points.push_back(*p);
    }
    entries.push_back(std::move(entry));
  }
  return m.with_lanes(std::move(entries));
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
  }
  CostModel m = *this;
  m.lanes_ = std::move(lanes);
  return m;
}

namespace {

// `base` refined by `seen` as CostModel::calibrated() says.
std::vector<CostPoint> refine(const std::vector<CostPoint>& base,
                              const std::vector<CostPoint>& seen,
                              double (*interpolate)(const std::vector<CostPoint>&, size_t)) {
  std::vector<double> ratio;  // seen over modelled, at each seen size
  for (const CostPoint& s : seen) {
    const double modelled = interpolate(base, s.batch);
    ratio.push_back(modelled > 0 ? s.median_us / modelled : 1.0);
  }
  auto ratio_at = [&](uint32_t b) {
    if (b <= seen.front().batch) return ratio.front();
    if (b >= seen.back().batch) return ratio.back();
    size_t k = 1;
    while (seen[k].batch < b) ++k;
    const double f = double(b - seen[k - 1].batch) / double(seen[k].batch - seen[k - 1].batch);
    return ratio[k - 1] + (ratio[k] - ratio[k - 1]) * f;
  };
  std::vector<CostPoint> out = seen;
  for (const CostPoint& p : base) {
    const bool was_seen = std::any_of(seen.begin(), seen.end(),
                                      [&](const CostPoint& s) { return s.batch == p.batch; });
    if (was_seen) continue;
    CostPoint q = p;
    q.median_us = std::min(p.median_us * ratio_at(p.batch), kMaxCostUs);
    out.push_back(q);
  }
  std::sort(out.begin(), out.end(),
            [](const CostPoint& a, const CostPoint& b) { return a.batch < b.batch; });
  return out;
}

}  // namespace

CostModel CostModel::calibrated(const CostModel& observed, uint32_t lanes) const {
  CostModel m = *this;
  if (lanes <= 1 && observed.streak_.weight > 0) m.streak_ = observed.streak_;
  if (lanes <= 1 && observed.turnaround_ != Turnaround{}) m.turnaround_ = observed.turnaround_;
  if (lanes <= 1) {
    m.points_ = refine(points_, observed.points_, &CostModel::interpolate);
    if (observed.has_overhead()) m.overhead_us_ = observed.overhead_us_;
  } else {
    // The curve for `lanes`, or a new one from the nearest fewer lanes' curve.
    const std::vector<CostPoint>* from = &points_;
    auto it = m.lanes_.begin();
    for (; it != m.lanes_.end() && it->lanes < lanes; ++it) from = &it->points;
    if (it != m.lanes_.end() && it->lanes == lanes) {
      it->points = refine(it->points, observed.points_, &CostModel::interpolate);
    } else {
      LaneCostPoints entry{lanes, refine(*from, observed.points_, &CostModel::interpolate)};
      it = m.lanes_.insert(it, std::move(entry));
    }
    if (observed.has_overhead()) it->overhead_us = observed.overhead_us_;
    if (observed.streak_.weight > 0) it->streak = observed.streak_;
    if (observed.turnaround_ != Turnaround{}) it->turnaround = observed.turnaround_;
  }
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
    return shortest(std::round(p.median_us * 10) / 10) + " us at b=" + std::to_string(p.batch);
  };
  std::string s = points_.size() == 1 ? "t(b) proportional: " + point(first)
                                      : "t(b) from " + std::to_string(points_.size()) +
                                            " points: " + point(first) + " .. " + point(last);
  if (has_jitter()) s += ", with jitter";
  if (!overhead_us_.empty()) {
    s += ", measured overhead (median " + std::to_string(std::llround(overhead_us(0.5))) + " us)";
  }
  if (!lanes_.empty()) {
    s += ", measured with " + std::to_string(lanes_.back().lanes) + " lanes at once";
  }
  return s;
}

Expected<CostModel> CostModel::from_file(const std::string& path) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return invalid_argument("cannot read " + path);
  if (bytes > kMaxFileBytes) {
    return invalid_argument(path + " is " + std::to_string(bytes) +
                            " bytes; a cost file holds at most " + std::to_string(kMaxFileBytes));
  }
  std::string text(static_cast<size_t>(bytes), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(text.size()))) {
    return invalid_argument("cannot read " + path);
  }
  auto m = from_profile_json(text);
  if (!m) return invalid_argument(path + ": " + m.error().message);
  return m;
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

CostModel CostModel::scaled(double factor) const {
  CostModel m = *this;
  auto scale = [factor](std::vector<CostPoint>& points) {
    for (CostPoint& p : points) p.median_us = std::clamp(p.median_us * factor, 0.0, kMaxCostUs);
  };
  scale(m.points_);
  for (LaneCostPoints& l : m.lanes_) scale(l.points);
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

std::string CostModel::to_json() const {
  auto append_points = [](std::string& out, const std::vector<CostPoint>& points) {
    out += '[';
    for (size_t i = 0; i < points.size(); ++i) {
      out += i ? ",{\"batch\":" : "{\"batch\":";
      out += std::to_string(points[i].batch) + ",\"median_us\":";
      append_json_number(out, points[i].median_us);
      out += ",\"spread\":";
      append_json_number(out, points[i].spread);
      append_array(out, "run_quantiles", points[i].run_quantiles);
      if (!points[i].settled) out += ",\"settled\":false";
      out += '}';
    }
    out += ']';
  };
  std::string out =
      "{\"format\":\"batchscope-cost\",\"version\":" + std::to_string(kCostFormatVersion) +
      ",\"points\":";
  append_points(out, points_);
  append_array(out, "overhead_us_quantiles", overhead_us_);
  append_streak(out, streak_);
  append_turnaround(out, turnaround_);
  if (!lanes_.empty()) {
    out += ",\"lanes\":[";
    for (size_t i = 0; i < lanes_.size(); ++i) {
      out += i ? ",{\"lanes\":" : "{\"lanes\":";
      out += std::to_string(lanes_[i].lanes) + ",\"points\":";
      append_points(out, lanes_[i].points);
      append_array(out, "overhead_us_quantiles", lanes_[i].overhead_us);
      append_streak(out, lanes_[i].streak);
      append_turnaround(out, lanes_[i].turnaround);
      out += '}';
    }
    out += ']';
  }
  return out + '}';
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/cost_drift.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/text_out.h"
#include "tuning/cost_model.h"

namespace batchscope {

namespace {

using Json = nlohmann::json;

// "2026-12-03 22:35" of "2026-12-03T22:35:34.123Z".
std::string minute_of(const std::string& at) {
  std::string s = at.substr(0, 16);
  if (s.size() > 10 && s[10] == 'T') s[10] = ' ';
  return s;
}

std::string evidence_excerpt(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

Expected<double> evidence_number(const Json& e, const char* field, double lo, double hi,
                                 const std::string& where) {
  const auto it = e.find(field);
  if (it == e.end()) return invalid_argument(where + "." + field + " is missing");
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < lo ||
      it->get<double>() > hi) {
    return invalid_argument(where + "." + field + " = " + evidence_excerpt(*it) +
                            " must be a number from " + message_number(lo) + " to " +
                            message_number(hi));
  }
  return it->get<double>();
}

Expected<std::string> evidence_text(const Json& e, const char* field, const std::string& where) {
  const auto it = e.find(field);
  if (it == e.end()) return std::string();
  if (!it->is_string() || it->get<std::string>().size() > 200) {
    return invalid_argument(where + "." + field + " = " + evidence_excerpt(*it) +
                            " must be a string of at most 200 characters");
  }
  return it->get<std::string>();
}

}  // namespace

std::string CostDrift::describe() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "t(b) moved %.2f..%.2fx (p10..p90, median %.2f) over %zu runs",
                p10, p90, p50, runs);
  std::string out = buf;
  if (!oldest.empty() && !newest.empty()) {
    out += ", " + minute_of(oldest) + " to " + minute_of(newest);
  }
  return out;
}

std::string CostDrift::unknown_why() const {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "the kept cost has %zu live run%s over %.0f minute%s; a drift needs %zu over %.0f "
                "minutes or more",
                runs, runs == 1 ? "" : "s", span_s / 60, std::lround(span_s / 60) == 1 ? "" : "s",
                kMinDriftRuns, kMinDriftSpanS / 60);
  return buf;
}

double utc_seconds(const std::string& at) {
  std::tm tm{};
  if (at.size() < 19 || !strptime(at.substr(0, 19).c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  const double ms =
      at.size() >= 23 && at[19] == '.' ? std::atof(at.substr(20, 3).c_str()) / 1000 : 0;
  return static_cast<double>(timegm(&tm)) + ms;
}

double evidence_level(const std::vector<EvidencePoint>& points, const CostModel& cost,
                      uint32_t lanes) {
  double sum = 0, weight = 0;
  for (const EvidencePoint& p : points) {
    const double modelled = cost.cost_us(p.batch, lanes, lanes);
    if (modelled <= 0 || p.median_us <= 0) continue;
    const double w = static_cast<double>(std::max<uint64_t>(p.batches, 1));
    sum += w * std::log(p.median_us / modelled);
    weight += w;
  }
  return weight > 0 ? std::exp(sum / weight) : 0.0;
}

double quantile_sorted(const std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  const double at = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const size_t k = static_cast<size_t>(at);
  if (k + 1 >= values.size()) return values.back();
  return values[k] + (values[k + 1] - values[k]) * (at - static_cast<double>(k));
}

namespace {

// The drift of `evidence`, each entry's level given by `level_of`.
template <typename LevelOf>
CostDrift drift_with(const std::vector<CostEvidence>& evidence, LevelOf level_of) {
  CostDrift d;
  std::vector<double> levels;
  for (const CostEvidence& e : evidence) {
    if (!e.busy.empty()) continue;
    const double level = level_of(e);
    if (level <= 0) continue;
    levels.push_back(level);
    if (!e.at.empty() && (d.oldest.empty() || e.at < d.oldest)) d.oldest = e.at;
    if (!e.at.empty() && e.at > d.newest) d.newest = e.at;
  }
  std::sort(levels.begin(), levels.end());
  d.runs = levels.size();
  if (levels.empty()) return d;
  if (!d.oldest.empty()) d.span_s = std::max(0.0, utc_seconds(d.newest) - utc_seconds(d.oldest));
  d.p10 = quantile_sorted(levels, 0.1);
  d.p50 = quantile_sorted(levels, 0.5);
  d.p90 = quantile_sorted(levels, 0.9);
  return d;
}

}  // namespace

CostDrift drift_of(const CostModel& cost) {
  return drift_with(cost.evidence(), [&cost](const CostEvidence& e) {
    return evidence_level(e.points, cost, e.lanes);
  });
}

CostDrift drift_of_levels(const std::vector<CostEvidence>& evidence) {
  return drift_with(evidence, [](const CostEvidence& e) { return e.level; });
}

BandFactors band_factors(const CostDrift& drift, double margin) {
  BandFactors f;
  char buf[160];
  if (margin > 0) {
    f.low = std::max(0.05, 1 - margin);
    f.high = 1 + margin;
    std::snprintf(buf, sizeof buf, "--headroom %s", message_number(margin).c_str());
  } else if (drift.known()) {
    f.low = std::min(1.0, drift.p10);
    f.high = std::max(1.0, drift.p90);
    std::snprintf(buf, sizeof buf, "the kept drift over %zu runs", drift.runs);
  } else {
    f.low = 1 - kDefaultBand;
    f.high = 1 + kDefaultBand;
    std::snprintf(buf, sizeof buf, "the default +-%.0f%%: %s", 100 * kDefaultBand,
                  drift.unknown_why().c_str());
  }
  f.source = buf;
  return f;
}

std::string evidence_json(const std::vector<CostEvidence>& evidence) {
  std::string out;
  for (size_t i = 0; i < evidence.size(); ++i) {
    const CostEvidence& e = evidence[i];
    out += i ? ",{\"at\":" : "{\"at\":";
    append_json_string(out, e.at);
    out += ",\"lanes\":" + std::to_string(e.lanes) + ",\"level\":";
    append_json_number(out, e.level);
    if (!e.busy.empty()) {
      out += ",\"busy\":";
      append_json_string(out, e.busy);
    }
    out += ",\"points\":[";
    for (size_t k = 0; k < e.points.size(); ++k) {
      out += k ? ",{\"batch\":" : "{\"batch\":";
      out += std::to_string(e.points[k].batch) + ",\"median_us\":";
      append_json_number(out, e.points[k].median_us);
      out += ",\"batches\":" + std::to_string(e.points[k].batches) + '}';
    }
    out += "]}";
  }
  return out;
}

Expected<std::vector<CostEvidence>> evidence_from_json(std::string_view array_text,
                                                       const std::string& prefix) {
  Json j;
  try {
    j = Json::parse(array_text.begin(), array_text.end());
  } catch (const Json::exception&) {
    return invalid_argument(prefix + "evidence is not valid JSON");
  }
  if (!j.is_array())
    return invalid_argument(prefix + "evidence = " + evidence_excerpt(j) + " must be an array");
  std::vector<CostEvidence> out;
  // The latest kMaxEvidence: a file grown by hand keeps what it would have kept.
  const size_t first = j.size() > kMaxEvidence ? j.size() - kMaxEvidence : 0;
  for (size_t i = first; i < j.size(); ++i) {
    const Json& e = j[i];
    const std::string where = prefix + "evidence[" + std::to_string(i) + "]";
    if (!e.is_object())
      return invalid_argument(where + " = " + evidence_excerpt(e) + " must be an object");
    CostEvidence ev;
    auto at = evidence_text(e, "at", where);
    if (!at) return at.error();
    ev.at = *at;
    auto busy = evidence_text(e, "busy", where);
    if (!busy) return busy.error();
    ev.busy = *busy;
    auto lanes = evidence_number(e, "lanes", 1, kMaxCostLanes, where);
    if (!lanes) return lanes.error();
    ev.lanes = static_cast<uint32_t>(*lanes);
    auto level = evidence_number(e, "level", 0, 1e6, where);
    if (!level) return level.error();
    ev.level = *level;
    const auto pts = e.find("points");
    if (pts == e.end() || !pts->is_array()) {
      return invalid_argument(
          where + ".points = " + (pts == e.end() ? "(missing)" : evidence_excerpt(*pts)) +
          " must be an array");
    }
    for (size_t k = 0; k < pts->size() && k < 4096; ++k) {
      const Json& p = (*pts)[k];
      const std::string pw = where + ".points[" + std::to_string(k) + "]";
      if (!p.is_object())
        return invalid_argument(pw + " = " + evidence_excerpt(p) + " must be an object");
      auto batch = evidence_number(p, "batch", 1, 1e9, pw);
      if (!batch) return batch.error();
      auto median = evidence_number(p, "median_us", 0, kMaxCostUs, pw);
      if (!median) return median.error();
      auto batches = evidence_number(p, "batches", 0, 1e15, pw);
      if (!batches) return batches.error();
      ev.points.push_back(
          {static_cast<uint32_t>(*batch), *median, static_cast<uint64_t>(*batches)});
    }
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace batchscope

namespace batchscope {

CostModel CostModel::with_evidence(CostEvidence e) const {
  CostModel m = *this;
  m.evidence_.push_back(std::move(e));
  if (m.evidence_.size() > kMaxEvidence) {
    m.evidence_.erase(
        m.evidence_.begin(),
        m.evidence_.begin() + static_cast<std::ptrdiff_t>(m.evidence_.size() - kMaxEvidence));
  }
  return m;
}

CostModel CostModel::scaled(double factor) const {
  if (!(factor > 0) || !std::isfinite(factor) || factor == 1) return *this;
  CostModel m = *this;
  auto scale = [factor](std::vector<CostPoint>& points) {
    for (CostPoint& p : points) p.median_us = std::min(p.median_us * factor, kMaxCostUs);
  };
  scale(m.points_);
  scale(m.alone_);
  for (LaneCostPoints& l : m.lanes_) {
    scale(l.points);
    scale(l.alone);
    l.capacity_rps /= factor;
  }
  m.capacity_rps_ /= factor;
  for (double& us : m.length_grid_.median_us) us = std::min(us * factor, kMaxCostUs);
  for (double& us : m.preprocess_.lane_us) us = std::min(us * factor, kMaxCostUs);
  for (PreprocessCost::Pool& p : m.preprocess_.pool) {
    for (double& us : p.us) us = std::min(us * factor, kMaxCostUs);
  }
  return m;
}

}  // namespace batchscope

namespace batchscope {

CostEvidence evidence_of(const CostModel& observed, const CostModel& kept, uint32_t lanes,
                         const std::string& when) {
  CostEvidence ev;
  ev.at = when;
  ev.lanes = std::max<uint32_t>(lanes, 1);
  for (const CostPoint& p : observed.points())
    ev.points.push_back({p.batch, p.median_us, p.batches});
  ev.level = evidence_level(ev.points, kept, ev.lanes);
  return ev;
}

double busy_cores() {
  const char* v = std::getenv("BATCHSCOPE_BUSY_CORES");
  if (v == nullptr || *v == '\0') return kBusyCores;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  return end && *end == '\0' && std::isfinite(x) && x >= 0 ? x : kBusyCores;
}

bool refine_always() {
  const char* v = std::getenv("BATCHSCOPE_REFINE_ALWAYS");
  return v != nullptr && std::string_view(v) == "1";
}

RunVerdict judge_level(double level, const CostDrift& drift, bool first,
                       const CompetingLoad* others, double busy_at, const char* what) {
  RunVerdict v;
  v.level = level;
  if (refine_always()) return v;
  char buf[240];
  if (others != nullptr && others->cores >= busy_at) {
    v.busy = others->describe();
    return v;
  }
  // A cost no live run has refined yet takes the first run as it is.
  if (v.level <= 0 || first) return v;
  const double low = drift.known() ? std::min(drift.p10, 1.0) : 1.0;
  const double high = drift.known() ? std::max(drift.p90, 1.0) : 1.0;
  const std::string range = drift.known()
                                ? "its drift " + message_number(std::round(low * 100) / 100) +
                                      ".." + message_number(std::round(high * 100) / 100) + "x"
                                : "no drift known yet";
  if (v.level > high * kFarFactor || v.level < low / kFarFactor) {
    std::snprintf(buf, sizeof buf,
                  "%s ran %.2fx the kept cost, far outside what it has seen (%s): a machine "
                  "busy or changed",
                  what, v.level, range.c_str());
    v.busy = buf;
    return v;
  }
  const double held = std::clamp(v.level, low / kMoveFactor, high * kMoveFactor);
  if (held != v.level) {
    v.scale = held / v.level;
    std::snprintf(buf, sizeof buf,
                  "%s ran %.2fx the kept cost; one run moves it at most to %.2fx (%s)", what,
                  v.level, held, range.c_str());
    v.held = buf;
  }
  return v;
}

RunVerdict judge_run(const CostModel& kept, const CostModel& observed, uint32_t lanes,
                     const CompetingLoad* others, double busy_at) {
  lanes = std::max<uint32_t>(lanes, 1);
  // Judged where the kept curve rests on live batches: a size it only
  // scaled from a profile is the run's to correct, however far.
  const std::vector<CostPoint>* curve = lanes == 1 ? &kept.points() : nullptr;
  for (const LaneCostPoints& l : kept.lanes()) {
    if (l.lanes == lanes) curve = &l.points;
  }
  auto live_at = [&](uint32_t b) {
    if (curve == nullptr) return false;
    for (const CostPoint& p : *curve) {
      if (p.batch == b) return p.batches > 0;
    }
    return false;
  };
  std::vector<EvidencePoint> points;
  for (const CostPoint& p : observed.points()) {
    if (live_at(p.batch)) points.push_back({p.batch, p.median_us, p.batches});
  }
  const double level = evidence_level(points, kept, lanes);
  return judge_level(level, drift_of(kept), level <= 0, others, busy_at);
}

}  // namespace batchscope

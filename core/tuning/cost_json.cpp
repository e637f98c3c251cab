// SPDX-License-Identifier: GPL-3.0-or-later
// The cost file: CostModel's JSON reader and writer (the format is in
// cost_model.h).
#include "tuning/cost_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/text_out.h"
#include "tuning/cost_checks.h"
#include "tuning/cost_json_parts.h"

namespace batchscope {

namespace {

using Json = nlohmann::json;
using cost_detail::append_array;
using cost_detail::append_preprocess;
using cost_detail::append_send_lag;
using cost_detail::check_points;
using cost_detail::check_quantiles;
using cost_detail::excerpt;
using cost_detail::number_array;
using cost_detail::optional_count;
using cost_detail::point_name;
using cost_detail::preprocess_from_json;
using cost_detail::send_lag_from_json;

constexpr double kMaxPointBatch = std::numeric_limits<uint32_t>::max();

// Reads points[i].field as a number; `required` says whether it may be absent.
Expected<double> number_field(const Json& point, size_t i, const char* field, bool required,
                              double fallback, const std::string& prefix) {
  const auto it = point.find(field);
  if (it == point.end()) {
    if (!required) return fallback;
    return invalid_argument(prefix + point_name(i, field) + " is missing");
  }
  if (!it->is_number()) {
    return invalid_argument(prefix + point_name(i, field) + " = " + excerpt(*it) +
                            " must be a number");
  }
  return it->get<double>();
}

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
    return invalid_argument(prefix + point_name(i, "") + " = " + excerpt(p) + " must be an object");
  }
  CostPoint out;
  const Expected<double> batch = number_field(p, i, "batch", true, 0, prefix);
  if (!batch) return batch.error();
  const double b = *batch;
  if (!(b >= 1 && b <= kMaxPointBatch && b == std::floor(b))) {
    return invalid_argument(prefix + point_name(i, "batch") + " = " + excerpt(p.at("batch")) +
                            " must be a whole number from 1 to 4294967295");
  }
  out.batch = static_cast<uint32_t>(b);
  const Expected<double> median = number_field(p, i, "median_us", true, 0, prefix);
  if (!median) return median.error();
  out.median_us = *median;
  const Expected<double> spread = number_field(p, i, "spread", false, 0, prefix);
  if (!spread) return spread.error();
  Expected<std::vector<double>> q =
      number_array(p, "run_quantiles", prefix + point_name(i, "") + ".");
  if (!q) return q.error();
  out.run_quantiles = std::move(*q);
  if (const auto it = p.find("settled"); it != p.end()) {
    if (!it->is_boolean()) {
      return invalid_argument(prefix + point_name(i, "settled") + " = " + excerpt(*it) +
                              " must be true or false");
    }
    out.settled = it->get<bool>();
  }
  out.spread = *spread;
  const Expected<double> batches = number_field(p, i, "batches", false, 0, prefix);
  if (!batches) return batches.error();
  if (!(*batches >= 0 && *batches <= 1e15 && *batches == std::floor(*batches))) {
    return invalid_argument(prefix + point_name(i, "batches") + " = " + excerpt(p.at("batches")) +
                            " must be a whole number from 0 to 1e15");
  }
  out.batches = static_cast<uint64_t>(*batches);
  if (const auto it = p.find("measured_at"); it != p.end()) {
    if (!it->is_string() || it->get_ref<const std::string&>().size() > 64) {
      return invalid_argument(prefix + point_name(i, "measured_at") + " = " + excerpt(*it) +
                              " must be a date as text (UTC, ISO 8601)");
    }
    out.measured_at = it->get<std::string>();
  }
  return out;
}

// nlohmann's messages start with "[json.exception.parse_error.101] ".
std::string without_tag(const char* what) {
  std::string s = what;
  const size_t end = s.find("] ");
  return (s.rfind("[json.exception", 0) == 0 && end != std::string::npos) ? s.substr(end + 2) : s;
}

// Reads the optional "overhead_by_size": [[quantiles] or [], ...].
Expected<std::vector<std::vector<double>>> bands_from_json(const Json& j,
                                                           const std::string& prefix) {
  std::vector<std::vector<double>> out;
  const auto it = j.find("overhead_by_size");
  if (it == j.end()) return out;
  if (!it->is_array() || it->size() > kMaxSizeBands) {
    return invalid_argument(prefix + "overhead_by_size = " + excerpt(*it) +
                            " must be an array of at most " + std::to_string(kMaxSizeBands) +
                            " arrays of quantiles");
  }
  for (size_t k = 0; k < it->size(); ++k) {
    Json holder = Json::object();
    holder["q"] = (*it)[k];
    Expected<std::vector<double>> q =
        number_array(holder, "q", prefix + "overhead_by_size[" + std::to_string(k) + "].");
    if (!q) return q.error();
    out.push_back(std::move(*q));
  }
  if (Status s = cost_detail::check_bands(out, prefix); !s) return s.error();
  return out;
}

// Reads the optional "capacity_rps" (0 .. 1e9).
Expected<double> capacity_from_json(const Json& j, const std::string& prefix) {
  const auto c = j.find("capacity_rps");
  if (c == j.end()) return 0.0;
  if (!c->is_number() || !(c->get<double>() >= 0 && c->get<double>() <= 1e9)) {
    return invalid_argument(prefix + "capacity_rps = " + excerpt(*c) +
                            " must be a number from 0 to 1e9");
  }
  return c->get<double>();
}

void append_capacity(std::string& out, double rps) {
  if (!(rps > 0)) return;
  out += ",\"capacity_rps\":";
  append_json_number(out, rps);
}

void append_bands(std::string& out, const std::vector<std::vector<double>>& bands) {
  if (bands.empty()) return;
  out += ",\"overhead_by_size\":[";
  for (size_t k = 0; k < bands.size(); ++k) {
    out += k ? ",[" : "[";
    for (size_t i = 0; i < bands[k].size(); ++i) {
      if (i) out += ',';
      append_json_number(out, bands[k][i]);
    }
    out += ']';
  }
  out += ']';
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

}  // namespace

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
  Expected<SendLagModel> lag = send_lag_from_json(j, prefix);
  if (!lag) return lag.error();
  m.send_lag_ = std::move(*lag);
  Expected<std::vector<std::vector<double>>> bands = bands_from_json(j, prefix);
  if (!bands) return bands.error();
  m.overhead_by_size_ = std::move(*bands);
  Expected<double> capacity = capacity_from_json(j, prefix);
  if (!capacity) return capacity.error();
  m.capacity_rps_ = *capacity;
  Expected<JitterStreak> streak = streak_from_json(j, prefix);
  if (!streak) return streak.error();
  m.streak_ = *streak;
  Expected<Turnaround> turnaround = turnaround_from_json(j, prefix);
  if (!turnaround) return turnaround.error();
  m.turnaround_ = *turnaround;
  if (const auto g = j.find("length_grid"); g != j.end()) {
    Expected<LengthGrid> grid = LengthGrid::from_json(g->dump(), prefix);
    if (!grid) return grid.error();
    m.length_grid_ = std::move(*grid);
  }
  Expected<PreprocessCost> pre = preprocess_from_json(j, prefix);
  if (!pre) return pre.error();
  m.preprocess_ = std::move(*pre);
  if (const auto ev = j.find("evidence"); ev != j.end()) {
    auto evidence = evidence_from_json(ev->dump(), prefix);
    if (!evidence) return evidence.error();
    m.evidence_ = std::move(*evidence);
  }
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
    Expected<SendLagModel> lane_lag = send_lag_from_json(e, where + ".");
    if (!lane_lag) return lane_lag.error();
    entry.send_lag = std::move(*lane_lag);
    Expected<std::vector<std::vector<double>>> lane_bands = bands_from_json(e, where + ".");
    if (!lane_bands) return lane_bands.error();
    entry.overhead_by_size = std::move(*lane_bands);
    Expected<double> lane_capacity = capacity_from_json(e, where + ".");
    if (!lane_capacity) return lane_capacity.error();
    entry.capacity_rps = *lane_capacity;
    Expected<JitterStreak> lane_streak = streak_from_json(e, where + ".");
    if (!lane_streak) return lane_streak.error();
    entry.streak = *lane_streak;
    Expected<Turnaround> lane_turnaround = turnaround_from_json(e, where + ".");
    if (!lane_turnaround) return lane_turnaround.error();
    entry.turnaround = *lane_turnaround;
    if (const auto al = e.find("alone"); al != e.end()) {
      if (!al->is_array()) {
        return invalid_argument(where + ".alone = " + excerpt(*al) + " must be an array");
      }
      for (size_t k = 0; k < al->size(); ++k) {
        Expected<CostPoint> p = point_from_json((*al)[k], k, where + ".alone.");
        if (!p) return p.error();
        entry.alone.push_back(*p);
      }
    }
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

std::string CostModel::to_json(const std::string& extra) const {
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
      if (points[i].batches > 0) out += ",\"batches\":" + std::to_string(points[i].batches);
      if (!points[i].measured_at.empty()) {
        out += ",\"measured_at\":";
        append_json_string(out, points[i].measured_at);
      }
      out += '}';
    }
    out += ']';
  };
  std::string out =
      "{\"format\":\"batchscope-cost\",\"version\":" + std::to_string(kCostFormatVersion) +
      (extra.empty() ? "" : "," + extra) + ",\"points\":";
  append_points(out, points_);
  append_array(out, "overhead_us_quantiles", overhead_us_);
  append_capacity(out, capacity_rps_);
  append_bands(out, overhead_by_size_);
  append_send_lag(out, send_lag_);
  append_streak(out, streak_);
  append_turnaround(out, turnaround_);
  if (!length_grid_.empty()) out += ",\"length_grid\":" + length_grid_.to_json();
  append_preprocess(out, preprocess_);
  if (!evidence_.empty()) out += ",\"evidence\":[" + evidence_json(evidence_) + ']';
  if (!lanes_.empty()) {
    out += ",\"lanes\":[";
    for (size_t i = 0; i < lanes_.size(); ++i) {
      out += i ? ",{\"lanes\":" : "{\"lanes\":";
      out += std::to_string(lanes_[i].lanes) + ",\"points\":";
      append_points(out, lanes_[i].points);
      append_array(out, "overhead_us_quantiles", lanes_[i].overhead_us);
      append_capacity(out, lanes_[i].capacity_rps);
      if (!lanes_[i].alone.empty()) {
        out += ",\"alone\":";
        append_points(out, lanes_[i].alone);
      }
      append_bands(out, lanes_[i].overhead_by_size);
      append_send_lag(out, lanes_[i].send_lag);
      append_streak(out, lanes_[i].streak);
      append_turnaround(out, lanes_[i].turnaround);
      out += '}';
    }
    out += ']';
  }
  return out + '}';
}

}  // namespace batchscope

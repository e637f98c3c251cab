// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/tune_headroom.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/text_out.h"
#include "tuning/gen_tune.h"
#include "tuning/predict_bounds.h"
#include "tuning/predictor.h"
#include "tuning/tune_run.h"

namespace batchscope {

double bisect_headroom(const std::function<bool(double)>& meets, bool& beyond) {
  beyond = false;
  if (!meets(1)) return 0;
  if (meets(kMaxHeadroom)) {
    beyond = true;
    return kMaxHeadroom;
  }
  double lo = 1, hi = kMaxHeadroom;
  while (hi / lo > 1 + kHeadroomStep) {
    const double mid = std::sqrt(lo * hi);
    (meets(mid) ? lo : hi) = mid;
  }
  return lo;
}

namespace {

FigureRange range_of(double nominal, double a, double b) {
  return {std::min({nominal, a, b}), std::max({nominal, a, b})};
}

void append_range(std::string& out, const char* name, const FigureRange& r) {
  out += ",\"";
  out += name;
  out += "\":[";
  append_json_number(out, r.low);
  out += ',';
  append_json_number(out, r.high);
  out += ']';
}

}  // namespace

ScaledEvaluator scaled_prediction_evaluator(const ArrivalSpec& traffic, const CostModel& cost,
                                            uint64_t* simulated, bool plan_on_cost,
                                            std::vector<uint32_t> lengths) {
  PredictSpec spec;
  spec.cost = cost;
  spec.plan_on_cost = plan_on_cost;
  spec.lengths = std::move(lengths);
  return [spec, traffic, simulated](const Options& o, double slow, double rate) {
    PredictSpec s = spec;
    s.options = o;
    if (rate != 1) {
      auto scaled = scaled_traffic(traffic, rate);
      if (!scaled) {  // no such traffic (a closed loop, a rate past the limit): it cannot meet
        Evaluated none;
        none.options = o;
        none.p50_ms = none.p99_ms = std::numeric_limits<double>::infinity();
        return none;
      }
      s.arrivals = bounded_for_prediction(*scaled);
    } else {
      s.arrivals = bounded_for_prediction(traffic);
    }
    if (slow != 1) {
      s.plan_cost = spec.cost;  // a live engine plans on the kept cost however the machine runs
      s.cost = spec.cost.scaled(slow);
    }
    const RunSummary r = predict(s);
    if (simulated) *simulated += r.sent;
    return evaluated_from(o, r);
  };
}

bool rate_scales(const ArrivalSpec& spec) { return spec.pattern != Pattern::kClosed; }

PredictionBand band_of(const Evaluated& nominal, const ScaledEvaluator& predict,
                       const BandFactors& factors) {
  PredictionBand b;
  b.fast = factors.low;
  b.slow = factors.high;
  const Evaluated fast = factors.low == 1 ? nominal : predict(nominal.options, factors.low, 1);
  const Evaluated slow = factors.high == 1 ? nominal : predict(nominal.options, factors.high, 1);
  b.throughput_rps = range_of(nominal.throughput_rps, fast.throughput_rps, slow.throughput_rps);
  b.p50_ms = range_of(nominal.p50_ms, fast.p50_ms, slow.p50_ms);
  b.p99_ms = range_of(nominal.p99_ms, fast.p99_ms, slow.p99_ms);
  b.loss_rate = range_of(nominal.loss_rate(), fast.loss_rate(), slow.loss_rate());
  return b;
}

Headroom headroom_of(const Options& options, const ScaledEvaluator& predict, double slo_p99_ms,
                     double loss_tolerance, bool rate_applies) {
  Headroom h;
  h.rate_applies = rate_applies;
  h.slowdown = bisect_headroom(
      [&](double s) { return meets_slo(predict(options, s, 1), slo_p99_ms, loss_tolerance); },
      h.slowdown_beyond);
  if (rate_applies) {
    h.rate = bisect_headroom(
        [&](double r) { return meets_slo(predict(options, 1, r), slo_p99_ms, loss_tolerance); },
        h.rate_beyond);
  }
  return h;
}

const Evaluated* HeadroomResult::chosen() const {
  if (holds) return &checked[*holds];
  if (closest) return &checked[*closest];
  return nullptr;
}

HeadroomResult rank_by_headroom(const TuneResult& result, const ScaledEvaluator& predict,
                                const HeadroomSettings& settings) {
  HeadroomResult out;
  out.needed = settings.needed;
  out.source = settings.source;
  out.band = settings.band;
  const double slo = result.slo_p99_ms;
  std::vector<Evaluated> pool;
  double best_rps = 0;
  for (const Evaluated& e : result.evaluated) {
    if (!meets_slo(e, slo)) continue;
    pool.push_back(e);
    best_rps = std::max(best_rps, e.throughput_rps);
  }
  auto stop = [&] {
    out.cancelled = out.cancelled || (settings.cancel && settings.cancel());
    return out.cancelled;
  };
  // Each pick in the objective's order, tried at `needed` until one holds.
  std::vector<Evaluated> order;
  std::optional<size_t> holds;
  const ScaledEvaluator counted = [&](const Options& o, double s, double r) {
    ++out.predictions;
    return predict(o, s, r);
  };
  while (!pool.empty() && order.size() < settings.max_checks && !stop()) {
    if (holds && order.size() >= settings.shown) break;
    auto best = choose_best(pool, slo, result.objective);
    if (!best) break;
    order.push_back(*best);
    std::erase_if(pool, [&](const Evaluated& e) { return e.options == best->options; });
    if (!holds && meets_slo(counted(best->options, settings.needed, 1), slo)) {
      holds = order.size() - 1;
    }
  }
  for (size_t i = 0; i < order.size(); ++i) {
    if (i >= settings.shown && (!holds || i != *holds)) continue;
    if (stop()) break;
    Evaluated e = order[i];
    e.band = band_of(e, counted, settings.band);
    e.headroom = headroom_of(e.options, counted, slo, kLossTolerance, settings.rate_applies);
    if (holds && i == *holds) out.holds = out.checked.size();
    out.checked.push_back(std::move(e));
  }
  if (out.holds && result.objective == TuneObjective::kThroughput) {
    const double floor = best_rps * (1 - kThroughputBand);
    out.holds = roomiest_tie(out.checked, *out.holds, out.needed,
                             [&](const Evaluated& e) { return e.throughput_rps >= floor; });
  }
  if (!out.holds && !out.checked.empty()) {
    size_t best = 0;
    for (size_t i = 1; i < out.checked.size(); ++i) {
      if (out.checked[i].headroom->slowdown > out.checked[best].headroom->slowdown) best = i;
    }
    out.closest = best;
  }
  return out;
}

HeadroomSettings headroom_settings(const CostModel& cost, const ArrivalSpec& traffic,
                                   double margin) {
  HeadroomSettings s;
  s.band = band_factors(drift_of(cost), margin);
  s.needed = s.band.high;
  s.source = s.band.source;
  s.rate_applies = rate_scales(traffic);
  return s;
}

HeadroomResult apply_headroom(TuneResult& result, const ScaledEvaluator& predict,
                              const HeadroomSettings& settings, size_t banded) {
  HeadroomResult h;
  h.needed = settings.needed;
  h.source = settings.source;
  h.band = settings.band;
  if (!result.best) return h;
  h = rank_by_headroom(result, predict, settings);
  const std::vector<FrontPoint> front = distinct_front(result.pareto);
  for (size_t i = 0; i < front.size() && i < banded; ++i) {
    if (settings.cancel && settings.cancel()) break;
    Evaluated& e = result.pareto[front[i].index];
    e.band = band_of(e, predict, settings.band);
    h.predictions += 2;
  }
  if (const Evaluated* c = h.chosen()) result.best = *c;
  return h;
}

Expected<size_t> best_holding(std::span<const Confirmed> confirmed, double needed,
                              double slo_p99_ms, TuneObjective objective) {
  std::vector<Confirmed> holding;
  std::vector<size_t> at;
  for (size_t i = 0; i < confirmed.size(); ++i) {
    const auto& h = confirmed[i].predicted.headroom;
    if (h && h->slowdown >= needed) holding.push_back(confirmed[i]), at.push_back(i);
  }
  if (!holding.empty()) {
    if (auto best = best_measured(holding, slo_p99_ms, objective)) return at[*best];
  }
  return best_measured(confirmed, slo_p99_ms, objective);
}

std::string headroom_text(const Headroom& h, const char* cost) {
  char buf[160];
  if (h.slowdown <= 0) return "misses the objective at the kept cost";
  std::string out;
  std::snprintf(buf, sizeof buf, "holds to %.2fx %s%s", h.slowdown, cost,
                h.slowdown_beyond ? " or more" : "");
  out = buf;
  if (!h.rate_applies) return out + "; no rate headroom (a closed loop sets its own rate)";
  if (h.rate <= 0) return out + "; no rate headroom";
  std::snprintf(buf, sizeof buf, " and +%.0f%%%s rate", 100 * (h.rate - 1),
                h.rate_beyond ? " or more" : "");
  return out + buf;
}

std::string band_json(const PredictionBand& b) {
  std::string out = "{\"fast\":";
  append_json_number(out, b.fast);
  out += ",\"slow\":";
  append_json_number(out, b.slow);
  append_range(out, "throughput_rps", b.throughput_rps);
  append_range(out, "p50_ms", b.p50_ms);
  append_range(out, "p99_ms", b.p99_ms);
  append_range(out, "loss_rate", b.loss_rate);
  return out + '}';
}

std::string headroom_figures_json(const Headroom& h) {
  std::string out = "{\"slowdown\":";
  append_json_number(out, h.slowdown);
  out += ",\"rate\":";
  if (h.rate_applies) {
    append_json_number(out, h.rate);
  } else {
    out += "null";
  }
  out += h.slowdown_beyond ? ",\"slowdown_beyond\":true" : ",\"slowdown_beyond\":false";
  out += h.rate_beyond ? ",\"rate_beyond\":true" : ",\"rate_beyond\":false";
  return out + '}';
}

std::string headroom_json_head(double needed, const std::string& source, const BandFactors& band,
                               bool fragile, const Options* chosen) {
  std::string out = "{\"needed_slowdown\":";
  append_json_number(out, needed);
  out += ",\"source\":";
  append_json_string(out, source);
  out += ",\"band\":{\"fast\":";
  append_json_number(out, band.low);
  out += ",\"slow\":";
  append_json_number(out, band.high);
  out += ",\"source\":";
  append_json_string(out, band.source);
  out += "},\"fragile\":";
  out += fragile ? "true" : "false";
  out += ",\"chosen\":";
  out += chosen ? options_to_json(*chosen) : std::string("null");
  return out + ',';
}

std::string headroom_json(const HeadroomResult& h) {
  const Evaluated* c = h.chosen();
  std::string out =
      headroom_json_head(h.needed, h.source, h.band, c && h.fragile(), c ? &c->options : nullptr);
  out += "\"checked\":[";
  for (size_t i = 0; i < h.checked.size(); ++i) {
    const Evaluated& e = h.checked[i];
    out += i ? ",{\"options\":" : "{\"options\":";
    out += options_to_json(e.options);
    out += ",\"throughput_rps\":";
    append_json_number(out, e.throughput_rps);
    out += ",\"p50_ms\":";
    append_json_number(out, e.p50_ms);
    out += ",\"p99_ms\":";
    append_json_number(out, e.p99_ms);
    if (e.band) out += ",\"band\":" + band_json(*e.band);
    if (e.headroom) out += ",\"headroom\":" + headroom_figures_json(*e.headroom);
    out += '}';
  }
  return out + "]}";
}

}  // namespace batchscope

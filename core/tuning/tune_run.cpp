// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/tune_run.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/text_out.h"
#include "traffic/inproc_run.h"
#include "traffic/varied_inputs.h"
#include "tuning/adaptive_planner.h"
#include "tuning/predict_bounds.h"
#include "tuning/predictor.h"
#include "tuning/tune_headroom.h"

namespace batchscope {

Evaluator prediction_evaluator(const ArrivalSpec& traffic, const CostModel& cost,
                               uint64_t* simulated, bool plan_on_cost,
                               std::vector<uint32_t> lengths) {
  PredictSpec spec;
  spec.arrivals = bounded_for_prediction(traffic);
  spec.cost = cost;
  spec.plan_on_cost = plan_on_cost;
  spec.lengths = std::move(lengths);
  return [spec, simulated](const Options& o) {
    PredictSpec s = spec;
    s.options = o;
    const RunSummary r = predict(s);
    if (simulated) *simulated += r.sent;
    return evaluated_from(o, r);
  };
}

TuneRequests tune_requests(const ModelMetadata& model, const std::optional<LengthDist>& lengths,
                           uint64_t seed) {
  TuneRequests r;
  if (!has_variable_inputs(model)) return r;
  const LengthDist d = lengths.value_or(default_lengths(model));
  r.inputs = varied_inputs(model, d, seed, kVariedPool);
  r.lengths = varied_lengths(model, d, seed, kVariedPool);
  return r;
}

std::string model_space_text(const ModelMetadata& model, std::span<const uint32_t> lengths) {
  std::string text = TuneSpace::default_text(model.max_batch_size);
  if (!lengths.empty()) text += "," + TuneSpace::padding_text(lengths);
  return text;
}

uint32_t largest_batch(const TuneSpace& space, const Options& base) {
  uint32_t most = space.searches("max_batch_size") ? 1 : base.max_batch_size;
  for (const TuneDimension& d : space.dimensions()) {
    if (d.field != "max_batch_size") continue;
    for (double v : d.values) most = std::max(most, static_cast<uint32_t>(v));
  }
  return most;
}

bool same_figures(const Evaluated& a, const Evaluated& b) {
  return a.throughput_rps == b.throughput_rps && a.p99_ms == b.p99_ms && a.p50_ms == b.p50_ms &&
         a.loss_rate() == b.loss_rate();
}

std::vector<FrontPoint> distinct_front(std::span<const Evaluated> pareto) {
  std::vector<FrontPoint> out;
  for (size_t i = 0; i < pareto.size(); ++i) {
    if (!out.empty() && same_figures(pareto[out.back().index], pareto[i])) {
      ++out.back().alike;
      continue;
    }
    out.push_back({i, 0});
  }
  return out;
}

std::vector<Evaluated> tune_candidates(const TuneResult& r, int k) {
  std::vector<Evaluated> pool = r.evaluated;
  std::vector<Evaluated> out;
  while (static_cast<int>(out.size()) < k) {
    auto best = choose_best(pool, r.slo_p99_ms, r.objective);
    if (!best) break;
    out.push_back(*best);
    std::erase_if(pool, [&](const Evaluated& e) { return e.options == best->options; });
  }
  return out;
}

RunWindow window_of(const RunSummary& s) {
  RunWindow w;
  w.length_s = s.duration_s;
  w.sent = s.sent;
  w.ok = s.ok;
  w.rejected = s.rejected;
  w.timed_out = s.timed_out;
  w.errors = s.errors;
  w.throughput_rps = s.throughput_rps;
  w.latency = s.latency;
  return w;
}

Expected<LiveRun> run_live_once(const ConfirmSpec& spec, const Options& o) {
  RunConfig cfg;
  cfg.pattern = spec.traffic.describe();
  cfg.target = "inproc";
  cfg.model = spec.metadata.name;
  cfg.options = o;
  cfg.duration_s = spec.traffic.duration_s;
  cfg.seed = spec.traffic.seed;
  auto run = run_inproc(spec.factory, spec.metadata, o,
                        spec.planner ? spec.planner : AdaptivePlanner(make_adaptive_plan),
                        spec.traffic, cfg, spec.inputs, spec.stop, {}, spec.stage);
  if (!run) return run.error();
  LiveRun live;
  live.summary = summarize_run(*run);
  live.batches = run->batches.size();
  // Where lengths vary, t(b) is the calibration's (at the reference length).
  if (!has_lengths(run->batches)) {
    if (auto seen = CostModel::from_run(*run, 5, o.num_lanes)) {
      live.observed = std::make_shared<const CostModel>(std::move(*seen));
    }
  }
  live.run = std::make_shared<const RunData>(std::move(*run));
  return live;
}

std::vector<uint32_t> lane_counts(const TuneSpace& space, const Options& base) {
  std::vector<uint32_t> out;
  for (const TuneDimension& d : space.dimensions()) {
    if (d.field != "num_lanes") continue;
    for (double v : d.values) out.push_back(static_cast<uint32_t>(v));
  }
  if (out.empty()) out.push_back(base.num_lanes);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Options calibration_options(const Options& base, uint32_t max_batch, uint32_t lanes) {
  Options o = base;
  o.strategy = StrategyKind::kFifo;
  o.max_batch_size = max_batch;
  o.max_wait_us = 2000;
  o.num_lanes = lanes;
  return o;
}

double cost_level(const CostModel& observed, const CostModel& base, uint32_t lanes) {
  double log_sum = 0;
  int n = 0;
  for (const CostPoint& p : observed.points()) {
    const double was = base.cost_us(p.batch, lanes);
    if (was <= 0 || p.median_us <= 0) continue;
    log_sum += std::log(p.median_us / was);
    ++n;
  }
  return n ? std::exp(log_sum / n) : 0.0;
}

size_t median_level(std::span<const double> levels) {
  std::vector<size_t> order;
  for (size_t i = 0; i < levels.size(); ++i) {
    if (levels[i] > 0) order.push_back(i);
  }
  if (order.empty()) return 0;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return levels[a] < levels[b]; });
  return order[(order.size() - 1) / 2];
}

Expected<CalibrationRun> calibrate_live(const ConfirmSpec& spec, const Options& o, CostModel& cost,
                                        int runs) {
  runs = std::clamp(runs, 1, kMaxCalibrationRuns);
  std::vector<LiveRun> done;
  CalibrationRun c;
  c.options = o;
  for (int r = 0; r < runs; ++r) {
    auto run = run_live_once(spec, o);
    if (!run) return run.error();
    c.levels.push_back(run->observed ? cost_level(*run->observed, cost, o.num_lanes) : 0.0);
    c.seen.push_back(run->observed);
    c.live_runs.push_back(run->run);
    done.push_back(std::move(*run));
  }
  c.chosen = median_level(c.levels);
  const LiveRun& run = done[c.chosen];
  c.batches = run.batches;
  c.p50_ms = run.summary.latency.p50_ms;
  c.p99_ms = run.summary.latency.p99_ms;
  if (!run.observed) return c;
  for (const CostPoint& p : run.observed->points()) {
    const double was = cost.cost_us(p.batch, o.num_lanes);
    if (was > 0) c.moved.push_back(p.median_us / was - 1.0);
  }
  std::sort(c.moved.begin(), c.moved.end());
  cost = cost.calibrated(*run.observed, o.num_lanes);
  return c;
}

Expected<std::optional<Confirmed>> confirm_live(const ConfirmSpec& spec,
                                                const Evaluated& predicted) {
  const Options& o = predicted.options;
  auto stopped = [&] { return spec.stop && spec.stop->load(); };
  std::optional<Error> failed;
  bool out_of_time = false;
  int runs = 0;
  std::shared_ptr<const CostModel> observed;
  std::vector<std::shared_ptr<const RunData>> live_runs;
  StableMeasurement m = measure_until_stable(spec.rule, [&]() -> RunWindow {
    if (out_of_time || failed || stopped() ||
        (spec.deadline && std::chrono::steady_clock::now() >= *spec.deadline)) {
      out_of_time = !failed && !stopped();
      return {};
    }
    auto run = run_live_once(spec, o);
    if (!run) {
      failed = run.error();
      return {};
    }
    if (spec.on_run) spec.on_run(++runs);
    if (run->observed) observed = run->observed;
    live_runs.push_back(run->run);
    return window_of(run->summary);
  });
  // A run cut short by `stop` measured part of the traffic only: no figures.
  if (stopped()) return Error{ErrorCode::kCancelled, "the confirmation was cancelled"};
  if (failed) return *failed;
  if (out_of_time) return std::optional<Confirmed>{};
  Confirmed c;
  c.predicted = predicted;
  c.runs = static_cast<int>(m.windows.size());
  c.stable = m.stable;
  c.measured = predicted;
  c.measured.band.reset();
  c.measured.headroom.reset();
  // Judged by the median of the last runs: one run the machine slowed
  // neither sinks a configuration nor saves it.
  const size_t n = std::min(m.windows.size(), static_cast<size_t>(std::max(spec.rule.windows, 1)));
  const auto last = std::span<const RunWindow>(m.windows).last(n);
  auto median_of = [&](auto figure) {
    std::vector<double> v;
    for (const RunWindow& w : last) v.push_back(figure(w));
    std::sort(v.begin(), v.end());
    return v.empty()      ? 0.0
           : v.size() % 2 ? v[v.size() / 2]
                          : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  auto range_of = [&](auto figure) {
    FigureRange r{std::numeric_limits<double>::max(), 0};
    for (const RunWindow& w : last)
      r.low = std::min(r.low, figure(w)), r.high = std::max(r.high, figure(w));
    if (last.empty()) r.low = 0;
    return r;
  };
  const auto p50 = [](const RunWindow& w) { return w.latency.p50_ms; };
  const auto p99 = [](const RunWindow& w) { return w.latency.p99_ms; };
  c.measured.throughput_rps = median_of([](const RunWindow& w) { return w.throughput_rps; });
  c.measured.p50_ms = median_of(p50);
  c.measured.p99_ms = median_of(p99);
  c.p50_runs = range_of(p50);
  c.p99_runs = range_of(p99);
  if (const auto& band = predicted.band) {
    c.inside_band = c.measured.p50_ms >= band->p50_ms.low &&
                    c.measured.p50_ms <= band->p50_ms.high &&
                    c.measured.p99_ms >= band->p99_ms.low && c.measured.p99_ms <= band->p99_ms.high;
  }
  c.measured.sent = m.combined.sent;
  c.measured.ok = m.combined.ok;
  c.measured.rejected = m.combined.rejected;
  c.measured.timed_out = m.combined.timed_out;
  c.measured.errors = m.combined.errors;
  c.observed = std::move(observed);
  c.live_runs = std::move(live_runs);
  return std::optional<Confirmed>(c);
}

CostModel calibrate(const CostModel& cost, std::span<const Confirmed> confirmed) {
  CostModel m = cost;
  for (const Confirmed& c : confirmed) {
    if (c.observed) m = m.calibrated(*c.observed, c.predicted.options.num_lanes);
  }
  return m;
}

Expected<size_t> best_measured(std::span<const Confirmed> confirmed, double slo_p99_ms,
                               TuneObjective objective) {
  std::vector<Evaluated> live;
  for (const Confirmed& c : confirmed) live.push_back(c.measured);
  auto best = choose_best(live, slo_p99_ms, objective);
  if (!best) {
    return invalid_argument("measured live, none of the " + std::to_string(live.size()) +
                            " best predictions meets the objective: " + best.error().message);
  }
  size_t at = 0;
  for (size_t i = 0; i < confirmed.size(); ++i) {
    if (confirmed[i].measured.options == best->options) at = i;
  }
  return at;
}

std::string confirmed_json(std::span<const Confirmed> confirmed) {
  std::string out = "[";
  for (size_t i = 0; i < confirmed.size(); ++i) {
    const Confirmed& c = confirmed[i];
    out += i ? ",{\"options\":" : "{\"options\":";
    out += options_to_json(c.predicted.options);
    out += ",\"runs\":" + std::to_string(c.runs);
    out += c.stable ? ",\"stable\":true" : ",\"stable\":false";
    auto figures = [&out](const char* name, const Evaluated& e) {
      out += ",\"";
      out += name;
      out += "\":{\"throughput_rps\":";
      append_json_number(out, e.throughput_rps);
      out += ",\"p50_ms\":";
      append_json_number(out, e.p50_ms);
      out += ",\"p99_ms\":";
      append_json_number(out, e.p99_ms);
      out += ",\"sent\":" + std::to_string(e.sent);
      out += ",\"lost\":" + std::to_string(e.rejected + e.timed_out) + "}";
    };
    figures("predicted", c.predicted);
    if (c.predicted.band) out += ",\"band\":" + band_json(*c.predicted.band);
    if (c.predicted.headroom)
      out += ",\"headroom\":" + headroom_figures_json(*c.predicted.headroom);
    figures("measured", c.measured);
    out += ",\"p99_runs_ms\":[";
    append_json_number(out, c.p99_runs.low);
    out += ',';
    append_json_number(out, c.p99_runs.high);
    out += ']';
    if (c.inside_band) out += *c.inside_band ? ",\"inside_band\":true" : ",\"inside_band\":false";
    if (c.recalibrated) figures("recalibrated", *c.recalibrated);
    out += "}";
  }
  return out + "]";
}

}  // namespace batchscope

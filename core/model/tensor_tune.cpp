// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/tensor_tune.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/text_out.h"
#include "model/kept_tune.h"
#include "runs/machine_facts.h"
#include "traffic/varied_inputs.h"
#include "tuning/adaptive_planner.h"

namespace batchscope {
namespace {

using Seconds = std::chrono::duration<double>;
using SteadyTime = std::chrono::steady_clock::time_point;

std::string wait_text(const Options& o) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(o.max_wait_us) / 1000.0);
  return buf;
}

// What one tune holds while it runs.
struct Tune {
  const TuneRequest& t;
  TuneReport& report;
  LocalModel model;
  SteadyTime deadline;
  // The inputs live runs send, and each request's length for the predictor,
  // for a model whose inputs vary in length.
  std::vector<Tensors> inputs;
  std::vector<uint32_t> lengths;
  const Say& say() const { return report.say(); }
};

// Runs the traffic live against the prediction's options until the stability
// rule holds, an adaptive configuration planning on `cost` as its prediction
// did; nullopt when the budget ran out first.
Expected<std::optional<Confirmed>> confirm_one(const Tune& tune, const Evaluated& predicted,
                                               const CostModel& cost) {
  auto factory = tune.model.runners(predicted.options);
  if (!factory) return factory.error();
  ConfirmSpec spec;
  spec.factory = *factory;
  spec.stage = tune.model.prepare_stage(predicted.options);
  spec.metadata = tune.model.metadata();
  spec.traffic = tune.t.traffic;
  spec.deadline = tune.deadline;
  spec.planner = plan_on_cost(cost);
  spec.inputs = tune.inputs;
  return confirm_live(spec, predicted);
}

// t(b) as the lanes see it under load (calibrate_live per lane count of the
// space). Says how far each size seen moved, and each run's level when there
// were several.
Expected<CostModel> calibrate_under_load(const Tune& tune, const CostModel& cost,
                                         const TuneSpace& space, uint32_t max_batch,
                                         std::vector<std::shared_ptr<const RunData>>& kept) {
  const TuneRequest& t = tune.t;
  const Say& say = tune.say();
  say.out(
      "calibrating t(b) under the traffic (fifo, max_batch_size %u, max_wait 2 ms), %d live "
      "run%s per lane count:\n",
      max_batch, t.calibration_runs, t.calibration_runs > 1 ? "s" : "");
  CostModel m = cost;
  const Say errors_only(nullptr, [&say](const std::string& s) { say.err("%s", s.c_str()); });
  for (uint32_t lanes : lane_counts(space, t.base)) {
    Options o = calibration_options(t.base, max_batch, lanes);
    // A model with preprocess: its pool prepares, so the lanes run t(b) alone.
    o.preprocess_workers = std::max(1u, o.preprocess_workers);
    auto factory = tune.model.runners(o);
    if (!factory) return factory.error();
    ConfirmSpec spec;
    spec.factory = *factory;
    spec.stage = tune.model.prepare_stage(o);
    spec.metadata = tune.model.metadata();
    spec.traffic = t.traffic;
    // At the reference length: the grid prices the lengths.
    auto run = calibrate_live(spec, o, m, t.calibration_runs);
    if (!run) return run.error();
    kept.insert(kept.end(), run->live_runs.begin(), run->live_runs.end());
    // Each calibration run is a live run of the model here: the kept cost learns from it.
    for (size_t i = 0; i < run->seen.size(); ++i) {
      if (!run->seen[i]) continue;
      const RunData* live = i < run->live_runs.size() ? run->live_runs[i].get() : nullptr;
      auto r = refine_cost_cache(t.model, *run->seen[i], lanes, "tune", errors_only,
                                 live && live->others ? &*live->others : nullptr);
      if (r && !r->busy.empty()) {
        say.out("  %u lane(s), run %zu: the kept cost was not refined: %s\n", lanes, i + 1,
                r->busy.c_str());
      }
    }
    if (run->levels.size() > 1) {
      std::string levels;
      for (size_t i = 0; i < run->levels.size(); ++i) {
        char buf[48];
        std::snprintf(buf, sizeof buf, " %.2f%s", run->levels[i],
                      i == run->chosen ? " (median, used)" : "");
        levels += buf;
      }
      say.out("  %u lane(s): t(b) over the cost's, run by run:%s\n", lanes, levels.c_str());
    }
    char line[160];
    std::snprintf(line, sizeof line, "  %u lane(s): %zu batches, p50 %.3f ms, p99 %.3f ms", lanes,
                  run->batches, run->p50_ms, run->p99_ms);
    if (!run->observed()) {
      say.out("%s; no size ran 5 times, so nothing to refine\n", line);
      continue;
    }
    const CostModel& seen = *run->observed();
    const std::vector<double>& over = seen.overheads_us();
    say.out("%s; overhead p50 %.0f us, p99 %.0f us\n", line, CostModel::quantile_of(over, 0.5),
            CostModel::quantile_of(over, 0.99));
    const std::vector<double>& moved = run->moved;
    if (!moved.empty()) {
      say.out("    t(b) at %zu sizes (b = %u..%u) moved by %+.0f%% (median; %+.0f%% to %+.0f%%)\n",
              seen.points().size(), seen.points().front().batch, seen.points().back().batch,
              100 * moved[moved.size() / 2], 100 * moved.front(), 100 * moved.back());
    }
  }
  return m;
}

// Re-predicts the confirmed configurations, and the whole space, with the
// cost model calibrated by what the live runs saw, and says how far each
// prediction moved. A new best prediction that was not confirmed is
// confirmed too while the budget lasts; the winner is still chosen as
// measured.
void recalibrate(const Tune& tune, const CostModel& cost, const TuneSpace& space,
                 TuneSettings settings, std::vector<Confirmed>& confirmed) {
  if (std::none_of(confirmed.begin(), confirmed.end(),
                   [](const Confirmed& c) { return c.observed; }))
    return;
  const Say& say = tune.say();
  const CostModel refined = calibrate(cost, confirmed);
  const Evaluator predict_one =
      prediction_evaluator(tune.t.traffic, refined, nullptr, true, tune.lengths);
  say.out("\nre-predicted with t(b) as the live runs ran it (%s):\n", refined.describe().c_str());
  for (Confirmed& c : confirmed) {
    c.recalibrated = predict_one(c.predicted.options);
    say.out("  %s: p50 %.3f -> %.3f ms, p99 %.3f -> %.3f ms (measured %.3f, %.3f)\n",
            describe_short(c.predicted.options).c_str(), c.predicted.p50_ms, c.recalibrated->p50_ms,
            c.predicted.p99_ms, c.recalibrated->p99_ms, c.measured.p50_ms, c.measured.p99_ms);
  }
  const double left = Seconds(tune.deadline - std::chrono::steady_clock::now()).count();
  settings.max_seconds = std::min(settings.max_seconds, std::max(left / 2, 0.0));
  TuneResult again = search(space, tune.t.base, settings, predict_one);
  if (!again.best) {
    say.out("  re-predicted, no configuration meets the objective\n");
    return;
  }
  const Options& best = again.best->options;
  const bool seen = std::any_of(confirmed.begin(), confirmed.end(),
                                [&](const Confirmed& c) { return c.predicted.options == best; });
  say.out("  best re-predicted: %s%s\n", describe_short(best).c_str(),
          seen ? " (confirmed above)" : "; confirming it live:");
  if (seen) return;
  auto c = confirm_one(tune, *again.best, refined);
  if (!c || !*c) {
    say.out("  not confirmed: %s\n", c ? "--budget-s ran out" : c.error().message.c_str());
    return;
  }
  (*c)->recalibrated = (*c)->predicted;
  tune.report.confirmed(**c);
  confirmed.push_back(std::move(**c));
}

// Keeps the tune in the run history (kept_tune.h): the calibrations' live
// runs, then the confirmations'.
void keep_tune(const Tune& tune, const Options& winner, const std::string& result_json,
               const std::vector<Confirmed>& confirmed,
               const std::vector<std::shared_ptr<const RunData>>& calibration) {
  const TuneRequest& t = tune.t;
  RunConfig config;
  config.pattern = t.traffic.describe();
  config.target = "predict";
  config.model = tune.model.name();
  config.options = winner;
  config.duration_s = t.traffic.duration_s;
  config.seed = t.traffic.seed;
  char slo[64];
  std::snprintf(slo, sizeof slo, " within p99 %g ms, %s", t.slo_p99_ms,
                objective_name(t.objective));
  TimePoint start = SteadyClock().now();
  for (const auto& run : calibration) start = std::min(start, run->start);
  for (const Confirmed& c : confirmed) {
    for (const auto& run : c.live_runs) start = std::min(start, run->start);
  }
  KeptTune kept(t.history, "tune: " + t.traffic.describe() + slo, std::move(config),
                run_context_json(t.model.file(), t.model.device,
                                 python_context(tune.model, t.base.num_lanes)),
                start, result_json, tune.say());
  for (size_t i = 0; i < calibration.size(); ++i) {
    const RunData& run = *calibration[i];
    kept.keep(run, "calibration, " + describe_short(run.config.options) + ", run " +
                       std::to_string(i + 1) + " of " + std::to_string(calibration.size()));
  }
  for (const Confirmed& c : confirmed) {
    for (size_t i = 0; i < c.live_runs.size(); ++i) {
      kept.keep(*c.live_runs[i], "confirming " + describe_short(c.predicted.options) + ", run " +
                                     std::to_string(i + 1) + " of " +
                                     std::to_string(c.live_runs.size()));
    }
  }
  kept.report();
}

// {"runs", "p10", "p50", "p90", "oldest", "newest", "known"}.
std::string drift_json(const CostDrift& d) {
  std::string out = "{\"runs\":" + std::to_string(d.runs) + ",\"known\":";
  out += d.known() ? "true" : "false";
  for (const auto& [name, v] : {std::pair{"p10", d.p10}, {"p50", d.p50}, {"p90", d.p90}}) {
    out += ",\"";
    out += name;
    out += "\":";
    append_json_number(out, v);
  }
  out += ",\"span_s\":";
  append_json_number(out, d.span_s);
  out += ",\"oldest\":";
  append_json_string(out, d.oldest);
  out += ",\"newest\":";
  append_json_string(out, d.newest);
  return out + '}';
}

WorkError refused(std::string message) { return WorkError{std::move(message), true}; }
WorkError failed(std::string message) { return WorkError{std::move(message), false}; }

}  // namespace

std::string describe_short(const Options& o) {
  std::string out = std::string(strategy_name(o.strategy)) +
                    " max_batch_size=" + std::to_string(o.max_batch_size) +
                    " max_wait_ms=" + wait_text(o) + " num_lanes=" + std::to_string(o.num_lanes);
  if (o.padding != Padding::kLongest) out += std::string(" padding=") + padding_name(o.padding);
  if (o.padding == Padding::kBuckets) out += " length_buckets=" + length_buckets_text(o);
  if (o.preprocess_workers != 1)
    out += " preprocess_workers=" + std::to_string(o.preprocess_workers);
  return out;
}

std::optional<WorkError> tune_tensor(const TuneRequest& t, TuneReport& report) {
  const Say& say = report.say();
  auto opened = LocalModel::open(t.model);
  if (!opened) return failed(opened.error().message);
  if (opened->generative()) {
    return refused("model '" + opened->name() + "' generates text: tune it under --slo-ttft-ms");
  }
  Tune tune{
      t,
      report,
      *opened,
      std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(Seconds(t.budget_s)),
      {},
      {}};
  const ModelMetadata& meta = tune.model.metadata();
  const bool varies = has_variable_inputs(meta);
  if (t.seq_len && !varies) {
    return refused("--seq-len " + t.seq_len->describe() + ": model '" + meta.name +
                   "' has no input that varies in length");
  }
  const LengthDist lengths = t.seq_len.value_or(default_lengths(meta));
  // The requests bench would send, and their lengths for the predictor; the
  // padding policies and bucket sets fitted to them are searched too.
  TuneRequests requests = tune_requests(meta, t.seq_len, t.traffic.seed);
  tune.inputs = std::move(requests.inputs);
  tune.lengths = std::move(requests.lengths);
  const uint32_t model_max = meta.max_batch_size;
  std::string space_text = t.space_text;
  if (space_text.empty()) {
    space_text = model_space_text(meta, tune.lengths);
    // A model with preprocess: how many pool processes, from none (the
    // lanes prepare) to one a core.
    if (tune.model.prepare_stage({})) {
      space_text += ",preprocess_workers=0.." +
                    std::to_string(std::max(1u, std::thread::hardware_concurrency()));
    }
  }
  auto space = TuneSpace::parse(space_text);
  if (!space) return refused("--space: " + space.error().message);
  const uint32_t max_batch = std::min(largest_batch(*space, t.base), model_max);
  if (largest_batch(*space, t.base) > model_max) {
    return refused("--space: max_batch_size goes up to " +
                   std::to_string(largest_batch(*space, t.base)) + ", above the model's maximum " +
                   std::to_string(model_max));
  }
  auto kept =
      prediction_cost(t.model, t.base, lane_counts(*space, t.base), max_batch, t.cost, "tune", say);
  if (!kept) return failed(kept.error().message);
  Expected<CostModel> cost = kept->cost;
  say.out("tune: %s, p99 <= %g ms, objective %s\n", t.traffic.describe().c_str(), t.slo_p99_ms,
          objective_name(t.objective));
  say.out("cost: %s\n", kept->source.c_str());
  std::vector<std::shared_ptr<const RunData>> calibration;  // kept under the tune
  if (t.calibrate) {
    cost = calibrate_under_load(tune, *cost, *space, max_batch, calibration);
    if (!cost) return failed("calibrating: " + cost.error().message);
    say.out("\n");
  }
  say.out("model %s: %s\n", meta.name.c_str(), cost->describe().c_str());
  if (varies) {
    say.out("lengths: %s%s\n", lengths.describe().c_str(),
            cost->length_grid().empty()
                ? "; the cost has no t(b, L), so every batch is priced at one length"
                : "; batches priced at their padded length by t(b, L)");
  }
  say.out("space: %s (%llu configurations)\n", space->text().c_str(),
          static_cast<unsigned long long>(space->size()));

  SearchStats stats;
  TuneSettings settings;
  settings.slo_p99_ms = t.slo_p99_ms;
  settings.objective = t.objective;
  settings.max_seconds = t.budget_s / 2;  // the rest is for confirming
  const Evaluator predict_one =
      prediction_evaluator(t.traffic, *cost, &stats.simulated, true, tune.lengths);
  const auto search_start = std::chrono::steady_clock::now();
  TuneResult result = search(*space, t.base, settings, predict_one);
  stats.seconds = Seconds(std::chrono::steady_clock::now() - search_start).count();
  // On the machine as it moves: a band for every prediction shown, the
  // headroom of the best few, and the best that holds chosen.
  const CostDrift drift = drift_of(*cost);
  say.out("drift: %s\n",
          (drift.known() ? drift.describe() : "not known yet: " + drift.unknown_why()).c_str());
  const HeadroomSettings hs = headroom_settings(*cost, t.traffic, t.headroom);
  const ScaledEvaluator scaled =
      scaled_prediction_evaluator(t.traffic, *cost, &stats.simulated, true, tune.lengths);
  const HeadroomResult headroom = apply_headroom(result, scaled, hs);
  report.searched(result, stats);
  if (result.best) report.ranked(headroom);
  // What every JSON result says besides the search: the traffic and the cost.
  TuneJsonExtra extra;
  {
    std::string cost_json;
    append_json_string(cost_json, cost->describe());
    extra.members.emplace_back("cost_model", cost_json);
    std::string traffic_json;
    append_json_string(traffic_json, t.traffic.describe());
    extra.members.emplace_back("traffic", traffic_json);
    extra.members.emplace_back("drift", drift_json(drift));
    if (result.best) extra.members.emplace_back("headroom", headroom_json(headroom));
  }
  auto finish_without = [&](const std::string& why) {
    report.finished(TuneFinish{with_measured_on(tune_json(result, extra), t.model.device),
                               std::nullopt, false, std::nullopt, meta});
    return failed(why);
  };
  if (!result.best) return finish_without(result.best.error().message);
  say.out("\nbest predicted: %s%s\n", describe(result.best->options).c_str(),
          headroom.fragile() ? " (fragile)" : "");

  std::vector<Confirmed> confirmed;
  if (t.confirm > 0) {
    say.out(
        "\nconfirming live (the same traffic, in-process, until 3 runs agree within "
        "+-10%%, at most 6; judged by the median of the last 3):\n");
    for (const Evaluated& e : confirm_order(headroom, static_cast<size_t>(t.confirm))) {
      auto c = confirm_one(tune, e, *cost);
      if (!c) {
        return finish_without("confirming " + describe_short(e.options) + ": " + c.error().message);
      }
      if (!*c) {
        say.out("  %s: not confirmed, --budget-s ran out\n", describe_short(e.options).c_str());
        break;
      }
      report.confirmed(**c);
      confirmed.push_back(**c);
    }
  }

  recalibrate(tune, *cost, *space, settings, confirmed);
  // Every confirmation's live runs refine the kept cost for their lanes.
  uint64_t refined = 0;
  const Say errors_only(nullptr, [&say](const std::string& s) { say.err("%s", s.c_str()); });
  for (const Confirmed& c : confirmed) {
    for (const auto& run : c.live_runs) {
      auto r = refine_cost_cache(t.model, *run, c.predicted.options.num_lanes, "tune", errors_only);
      if (r && r->busy.empty()) refined += r->batches;
      if (r && !r->busy.empty()) {
        say.out("  a confirmation run of %s did not refine the kept cost: %s\n",
                describe_short(c.predicted.options).c_str(), r->busy.c_str());
      }
    }
  }
  if (refined > 0) {
    say.out("  the kept cost was refined by the confirmations' %llu batches\n",
            static_cast<unsigned long long>(refined));
  }

  Evaluated winner = *result.best;
  std::optional<Evaluated> measured;
  if (!confirmed.empty()) {
    auto best_live = best_holding(confirmed, headroom.needed, t.slo_p99_ms, t.objective);
    if (!best_live) {
      // No best: what export and serve read from the JSON must not be a
      // configuration that missed live.
      result.best = Error{best_live.error().code, best_live.error().message};
      extra.members.emplace_back("confirmed", confirmed_json(confirmed));
      return finish_without(result.best.error().message);
    }
    winner = confirmed[*best_live].predicted;
    measured = confirmed[*best_live].measured;
    result.best = winner;
  }
  extra.measured = measured;
  extra.members.emplace_back("confirmed", confirmed_json(confirmed));
  const std::string result_json = with_measured_on(tune_json(result, extra), t.model.device);
  report.finished(TuneFinish{result_json, winner,
                             winner.headroom && winner.headroom->slowdown < headroom.needed,
                             measured, meta});
  keep_tune(tune, winner.options, result_json, confirmed, calibration);
  return std::nullopt;
}

}  // namespace batchscope

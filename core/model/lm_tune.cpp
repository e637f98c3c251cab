// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/lm_tune.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "common/text_out.h"
#include "model/kept_steps.h"
#include "model/kept_tune.h"
#include "model/lm_tune_parts.h"
#include "model/planned_tune.h"
#include "runs/machine_facts.h"
#include "traffic/llm_trace.h"
#include "tuning/gen_headroom.h"
#include "tuning/gen_predictor.h"
#include "tuning/tune_run.h"

namespace batchscope {
namespace {

WorkError refused(std::string message) { return WorkError{std::move(message), true}; }
WorkError failed(std::string message) { return WorkError{std::move(message), false}; }

std::string confirmed_json(const std::vector<LmConfirmation>& confirmed, int q) {
  std::string out = "[";
  for (size_t i = 0; i < confirmed.size(); ++i) {
    const LmConfirmation& c = confirmed[i];
    out += i ? ",{\"options\":" : "{\"options\":";
    out += options_to_json(c.predicted.options) +
           ",\"predicted\":" + gen_figures_json(c.predicted, q) +
           ",\"measured\":" + gen_figures_json(c.measured, q) + ",\"runs\":[";
    for (size_t k = 0; k < c.runs.size(); ++k) {
      out += (k ? "," : "") + gen_figures_json(c.runs[k], q);
    }
    out += "]}";
  }
  return out + ']';
}

}  // namespace

double half_of_what_is_left(SteadyTime deadline) {
  const double left = Seconds(deadline - std::chrono::steady_clock::now()).count();
  return std::max(left / 2, 0.001);
}

std::string gen_model_json(const LmInfo& info) {
  std::string j = "{\"name\":";
  append_json_string(j, info.name);
  j += ",\"context_length\":" + std::to_string(info.context_length);
  j += ",\"block_size\":" + std::to_string(info.block_size);
  j += ",\"num_blocks\":" + std::to_string(info.num_blocks) + "}";
  return j;
}

Expected<RateFound> find_max_rate(const LmTuneRequest& t, const TuneSpace& space,
                                  const GenTuneSettings& settings, SteadyTime deadline,
                                  const std::function<GenEvaluator(const ArrivalSpec&)>& at,
                                  const Say& say) {
  say.out("\nfinding the largest rate some configuration serves within the objective:\n");
  // Whether some configuration meets the objective: the first that does
  // ends a probe. The probes share half of the budget left.
  GenTuneSettings quick = settings;
  quick.first_meeting = true;
  const auto probe_start = std::chrono::steady_clock::now();
  const double probe_seconds = half_of_what_is_left(deadline);
  bool out_of_time = false;
  double unscalable = 0;  // the least factor the traffic cannot be scaled to
  const MaxRate m = max_rate([&](double factor) -> std::optional<GenEvaluated> {
    auto scaled = scaled_traffic(t.traffic, factor);
    if (!scaled) {
      unscalable = unscalable > 0 ? std::min(unscalable, factor) : factor;
      return std::nullopt;
    }
    quick.max_seconds =
        probe_seconds - Seconds(std::chrono::steady_clock::now() - probe_start).count();
    if (quick.max_seconds <= 0) {
      out_of_time = true;
      return std::nullopt;
    }
    const GenTuneResult r = gen_search(space, t.base, quick, at(*scaled));
    out_of_time |= r.out_of_time && !r.best;
    say.out("  x%-8.4g %9.2f req/s: %s\n", factor, mean_rate(*scaled),
            r.best ? ("met by " + describe_generation(r.best->options)).c_str() : "missed");
    if (!r.best) return std::nullopt;
    return *r.best;
  });
  if (m.factor <= 0) {
    return invalid_argument("no configuration meets " + t.slo.describe() +
                            " even at 1/1024 of the rate");
  }
  RateFound found{*scaled_traffic(t.traffic, m.factor), {}};
  const double rate = mean_rate(found.traffic);
  std::string missed;
  if (m.refused_factor > 0) {
    if (auto over = scaled_traffic(t.traffic, m.refused_factor)) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "; x%.4g (%.2f req/s) misses", m.refused_factor,
                    mean_rate(*over));
      missed = buf;
    }
  }
  say.out("  max rate: %.2f req/s (x%.4g: %s), in %d searches, %.1f s%s\n", rate, m.factor,
          found.traffic.describe().c_str(), m.searches,
          Seconds(std::chrono::steady_clock::now() - probe_start).count(), missed.c_str());
  if (unscalable > 0 && m.refused_factor >= unscalable) {
    say.out(
        "  (x%.4g is past the largest rate or trace speed the traffic can take: the "
        "rate found is a lower bound)\n",
        unscalable);
  }
  if (out_of_time) {
    say.out("  (--budget-s ran out while probing: the rate found is a lower bound)\n");
  }
  std::string& j = found.json;
  j = "{\"factor\":";
  append_json_number(j, m.factor);
  j += ",\"rate_rps\":";
  append_json_number(j, rate);
  j += ",\"traffic\":";
  append_json_string(j, found.traffic.describe());
  j += ",\"missed_factor\":";
  append_json_number(j, m.refused_factor);
  j += ",\"searches\":" + std::to_string(m.searches) + "}";
  return found;
}

namespace {

// Keeps the tune in the run history (kept_tune.h): the live runs that
// measured the step cost before the search, then the confirmations.
void keep_tune(const LmTuneRequest& t, const std::string& model_name, const Options& winner,
               const std::string& label, const std::string& result_json,
               const std::vector<LmConfirmation>& confirmed,
               const std::vector<GenCalibration>& calibration, const ArrivalSpec& traffic,
               const Say& say) {
  RunConfig config;
  config.pattern = traffic.describe();
  config.target = "predict";
  config.model = model_name;
  config.options = winner;
  config.duration_s = traffic.duration_s;
  config.seed = traffic.seed;
  TimePoint start = SteadyClock().now();
  for (const GenCalibration& c : calibration) start = std::min(start, c.run.start);
  for (const LmConfirmation& c : confirmed) {
    for (const GenRun& run : c.live) start = std::min(start, run.start);
  }
  KeptTune kept(t.history, label, std::move(config),
                run_context_json(t.model.file(), t.model.device), start, result_json, say);
  auto keep = [&](const GenRun& run, const Options& options, std::string what, double duration_s) {
    RunConfig c;
    c.pattern = run.pattern;
    c.target = "inproc";
    c.model = model_name;
    c.options = options;
    c.duration_s = duration_s;
    c.seed = run.seed;
    kept.keep(run, std::move(c), std::move(what),
              gen_summary_json(run, summarize_gen(run, t.slo.ttft_ms, t.slo.itl_ms)));
  };
  for (size_t i = 0; i < calibration.size(); ++i) {
    keep(calibration[i].run, calibration[i].options,
         "calibration, " + describe_generation(calibration[i].options) + ", run " +
             std::to_string(i + 1) + " of " + std::to_string(calibration.size()),
         t.cost.calibration_s);
  }
  for (const LmConfirmation& c : confirmed) {
    for (size_t i = 0; i < c.live.size(); ++i) {
      keep(c.live[i], c.predicted.options,
           "confirming " + describe_generation(c.predicted.options) + ", run " +
               std::to_string(i + 1) + " of " + std::to_string(c.live.size()),
           traffic.duration_s);
    }
  }
  kept.report();
}

// Each confirmation's live runs refine the kept step cost, per lane count.
void refine_with(const LocalModel& model, const std::vector<LmConfirmation>& confirmed,
                 const Say& say) {
  std::map<uint32_t, std::vector<StepRecord>> by_lanes;
  std::map<uint32_t, CompetingLoad> busiest;  // the busiest run's, per lane count
  for (const LmConfirmation& c : confirmed) {
    const uint32_t lanes = c.predicted.options.num_lanes;
    std::vector<StepRecord>& steps = by_lanes[lanes];
    for (const GenRun& run : c.live) {
      steps.insert(steps.end(), run.steps.begin(), run.steps.end());
      if (run.others && run.others->cores >= busiest[lanes].cores) busiest[lanes] = *run.others;
    }
  }
  for (const auto& [lanes, steps] : by_lanes) {
    if (!steps.empty()) refine_kept_steps(model, steps, lanes, say, &busiest[lanes]);
  }
}

}  // namespace

std::optional<WorkError> tune_lm(const LmTuneRequest& request, LmTuneReport& report) {
  if (request.plan) return tune_planned_lm(request, report);
  LmTuneRequest t = request;  // a trace's lengths are fitted to the model's context
  const Say& say = report.say();
  const SteadyTime deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(Seconds(t.budget_s));
  auto model = LocalModel::open(t.model);
  if (!model) return failed(model.error().message);
  const LmInfo info = model->lm_info();
  if (Status s = check_cache(info); !s) return failed(s.message());
  auto space = parse_gen_space(t.space_text);
  if (!space) return refused("--space: " + space.error().message);
  const auto context = static_cast<uint32_t>(std::max(2, info.context_length));
  if (const ContextFit fit = fit_to_context(t.lengths.replay, context); fit.any()) {
    say.out("  trace: %s\n", fit.describe(context).c_str());
  }
  std::vector<GenCalibration> calibration;  // live runs that measured the step cost: kept
  auto priced = price_gen_steps(*model, t.base, t.traffic, t.lengths, t.cost, say,
                                lane_counts(*space, t.base), &calibration);
  if (!priced) {
    return WorkError{priced.error().message, !t.cost.file.empty()};
  }
  const GenStepCost cost = priced->cost;
  if (cost.of_step(1, 0) <= Duration(0)) {
    return failed("a step that costs nothing cannot be predicted (" + priced->source + ")");
  }
  say.out("tune %s: %s, %s, objective %s\n", info.name.c_str(), t.traffic.describe().c_str(),
          t.slo.describe().c_str(), gen_objective_name(t.objective));
  say.out("  requests: %s\n", t.lengths.describe().c_str());
  say.out("  step cost: %s (%s)\n", cost.text().c_str(), priced->source.c_str());
  say.out("  space: %s (%llu combinations)\n", space->text().c_str(),
          static_cast<unsigned long long>(space->size()));

  auto evaluator_at = [&](const ArrivalSpec& traffic) {
    return predicted_evaluator(
        traffic, [&](uint64_t seed) { return t.lengths.workload(seed); }, info, cost, t.slo);
  };
  GenTuneSettings settings;
  settings.slo = t.slo;
  settings.objective = t.objective;
  settings.context = static_cast<uint32_t>(std::max(0, info.context_length));

  ArrivalSpec traffic = t.traffic;
  std::string max_rate_json;
  if (t.max_rate) {
    auto found = find_max_rate(t, *space, settings, deadline, evaluator_at, say);
    if (!found) return failed(found.error().message);
    traffic = found->traffic;
    max_rate_json = found->json;
  }

  settings.max_seconds = half_of_what_is_left(deadline);  // the rest is for confirming
  const auto search_start = std::chrono::steady_clock::now();
  GenTuneResult result = gen_search(*space, t.base, settings, evaluator_at(traffic));
  // Bands and headroom (tuning/gen_headroom.h): on the machine as it moves.
  HeadroomSettings hs;
  hs.band = band_factors(priced->drift, t.headroom);
  hs.needed = hs.band.high;
  hs.source = hs.band.source;
  hs.rate_applies = rate_scales(traffic);
  const GenScaledEvaluator scaled = scaled_predicted_evaluator(
      traffic, [&](uint64_t seed) { return t.lengths.workload(seed); }, info, cost, t.slo);
  GenHeadroomResult headroom;
  if (result.best) {
    headroom = gen_rank_by_headroom(result, scaled, hs);
    if (const GenEvaluated* c = headroom.chosen()) result.best = *c;
    band_gen_front(result.pareto, headroom, scaled);
  }
  report.searched(result, Seconds(std::chrono::steady_clock::now() - search_start).count());
  if (result.best) say.out("%s", gen_headroom_table(headroom, t.slo).c_str());

  std::vector<std::pair<std::string, std::string>> members;
  auto member_string = [&](const char* key, const std::string& value) {
    std::string v;
    append_json_string(v, value);
    members.emplace_back(key, v);
  };
  member_string("model", info.name);
  members.emplace_back("lm", gen_model_json(info));
  member_string("model_file", t.model.file());
  member_string("traffic", traffic.describe());
  member_string("workload", t.lengths.describe());
  {
    std::string c = "{\"step_us\":";
    append_json_number(c, cost.step_us);
    c += ",\"decode_us\":";
    append_json_number(c, cost.decode_us);
    c += ",\"prefill_token_us\":";
    append_json_number(c, cost.prefill_token_us);
    c += ",\"source\":";
    append_json_string(c, priced->source);
    members.emplace_back("step_cost", c + '}');
  }
  if (!max_rate_json.empty()) members.emplace_back("max_rate", max_rate_json);
  if (result.best) members.emplace_back("headroom", gen_headroom_json(headroom));
  auto finish_without = [&](const std::string& why) {
    report.finished(
        LmTuneFinish{with_measured_on(gen_tune_json(result, std::nullopt, members), t.model.device),
                     std::nullopt, std::nullopt, t.slo.quantile});
    return failed(why);
  };
  if (!result.best) return finish_without(result.best.error().message);
  say.out("\nbest predicted: %s%s\n", describe_generation(result.best->options).c_str(),
          headroom.fragile() ? " (fragile)" : "");

  std::vector<LmConfirmation> confirmed;
  if (t.confirm > 0) {
    say.out("\nconfirming live (the same traffic in process, %d run%s each, their medians):\n",
            t.confirm_runs, t.confirm_runs > 1 ? "s" : "");
    for (const GenEvaluated& e : confirm_order_of(headroom, static_cast<size_t>(t.confirm))) {
      LmConfirmation c;
      c.predicted = e;
      for (int i = 0; i < t.confirm_runs && std::chrono::steady_clock::now() < deadline; ++i) {
        GenWorkload workload = t.lengths.workload(traffic.seed);
        auto live = run_gen_inproc(*model, e.options, traffic, workload, std::chrono::seconds(60));
        if (!live) {
          return failed("confirming " + describe_generation(e.options) + ": " +
                        live.error().message);
        }
        live->pattern = traffic.describe();
        live->workload = t.lengths.describe();
        live->target = "inproc";
        live->options = describe_generation(e.options);
        live->seed = traffic.seed;
        c.runs.push_back(gen_evaluated_from(
            e.options, summarize_gen(*live, t.slo.ttft_ms, t.slo.itl_ms), t.slo.quantile));
        c.live.push_back(std::move(*live));
      }
      if (c.runs.empty()) {
        say.out("  %s: not confirmed, --budget-s ran out\n",
                describe_generation(e.options).c_str());
        break;
      }
      c.measured = median_of_runs(c.runs);
      report.confirmed(c, t.slo);
      confirmed.push_back(std::move(c));
    }
  }
  members.emplace_back("confirmed", confirmed_json(confirmed, t.slo.quantile));
  // Each confirmation run is a live run of the model here.
  refine_with(*model, confirmed, say);

  GenEvaluated winner = *result.best;
  std::optional<GenEvaluated> measured;
  if (!confirmed.empty()) {
    // Of those predicted to hold, where one meets the objective live; else of all.
    std::vector<GenEvaluated> live, holding;
    for (const LmConfirmation& c : confirmed) {
      live.push_back(c.measured);
      if (c.predicted.headroom && c.predicted.headroom->slowdown >= headroom.needed) {
        holding.push_back(c.measured);
      }
    }
    auto best_live = choose_gen_best(holding, t.slo, t.objective);
    if (!best_live) best_live = choose_gen_best(live, t.slo, t.objective);
    if (!best_live) {
      // No best: what export and serve read from the JSON must not be a
      // configuration that missed live.
      result.best = Error{best_live.error().code, "measured live, " + best_live.error().message};
      return finish_without(result.best.error().message);
    }
    for (const LmConfirmation& c : confirmed) {
      if (c.measured.options == best_live->options) winner = c.predicted;
    }
    measured = *best_live;
    result.best = winner;
  }
  const std::string result_json =
      with_measured_on(gen_tune_json(result, measured, members), t.model.device);
  report.finished(LmTuneFinish{result_json, winner, measured, t.slo.quantile});
  keep_tune(t, info.name, winner.options,
            "tune: " + traffic.describe() + " within " + t.slo.describe() + ", " +
                gen_objective_name(t.objective),
            result_json, confirmed, calibration, traffic, say);
  return std::nullopt;
}

}  // namespace batchscope

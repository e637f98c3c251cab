// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/gen_predict.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/cost_setup.h"
#include "app/model_setup.h"
#include "app/run_output.h"
#include "generation/gen_engine.h"
#include "traffic/gen_load.h"
#include "traffic/llm_trace.h"
#include "tuning/cost_cache.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_cost.h"

namespace batchscope {

namespace {

int fail(const std::string& message, int code = 2) {
  std::cerr << "batchscope bench: " << message << "\n";
  return code;
}

Expected<StepCost> read_cost(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("--cost " + path + ": cannot read it");
  std::ostringstream text;
  text << in.rdbuf();
  auto cost = parse_step_cost_json(text.str());
  if (!cost) return invalid_argument("--cost " + path + ": " + cost.error().message);
  return cost;
}

// Where `choice`'s step cost is kept on this machine; none for the synthetic
// model or a build that keeps no costs.
struct StepCache {
  CostKey key;
  std::string path;
};
std::optional<StepCache> step_cache_for(const LmChoice& choice) {
  if (choice.synthetic) return std::nullopt;
  const std::string dir = cost_cache_dir();
  if (dir.empty()) return std::nullopt;
  ModelChoice m;
  m.path = choice.path;
  m.device = choice.device;
  auto key = cost_key_for(m);
  if (!key) return std::nullopt;
  if (auto info = lm_info(choice)) key->model = info->name;
  return StepCache{*key, step_cost_cache_path(*key, dir)};
}

}  // namespace

void refine_kept_steps(const LmChoice& choice, std::span<const StepRecord> steps, uint32_t lanes) {
  auto cache = step_cache_for(choice);
  if (!cache) return;
  lanes = std::max<uint32_t>(lanes, 1);
  auto kept = read_cached_step_cost(cache->path, cache->key);
  if (!kept) {
    std::fprintf(stderr, "  the kept step cost was not refined: %s\n",
                 kept.error().message.c_str());
    return;
  }
  const std::optional<StepCost> before = *kept ? std::optional<StepCost>(**kept) : std::nullopt;
  auto learned = learn_step_cost(before, steps, lanes);
  if (!learned) return;
  const StepCost& now = *learned;
  char buf[512];
  if (before && before->lanes != lanes) {
    const std::optional<StepCost> was = at_lanes(*before, lanes), is = at_lanes(now, lanes);
    std::snprintf(buf, sizeof buf, "  kept step cost at %u lane%s %s: %.1f us + %.3f us per decode",
                  lanes, lanes == 1 ? "" : "s", was ? "refined" : "measured",
                  is ? is->step_us : 0.0, is ? is->token_us : 0.0);
  } else if (before) {
    std::snprintf(buf, sizeof buf,
                  "  kept step cost refined by %llu steps: %.1f -> %.1f us + %.3f -> %.3f us per "
                  "decode, %.1f -> %.1f us between steps",
                  static_cast<unsigned long long>(now.steps - before->steps), before->step_us,
                  now.step_us, before->token_us, now.token_us, before->between_us, now.between_us);
  } else {
    std::snprintf(buf, sizeof buf,
                  "  step cost kept from %llu steps at %u lane%s: %.1f us + %.3f us per decode",
                  static_cast<unsigned long long>(now.steps), lanes, lanes == 1 ? "" : "s",
                  now.step_us, now.token_us);
  }
  const std::string line = buf;
  if (Status s = write_cached_step_cost(cache->path, cache->key, now); !s) {
    std::fprintf(stderr, "  the step cost was not kept: %s\n", s.message().c_str());
    return;
  }
  std::printf("%s (%s)\n", line.c_str(), cache->path.c_str());
}

std::optional<std::pair<StepCost, std::string>> kept_step_cost(const LmChoice& choice) {
  auto cache = step_cache_for(choice);
  if (!cache) return std::nullopt;
  auto kept = read_cached_step_cost(cache->path, cache->key);
  if (!kept || !*kept) return std::nullopt;
  return std::pair{**kept,
                   "kept in " + cache->path + ", " + std::to_string((*kept)->steps) + " steps"};
}

Expected<GenRun> run_gen_inproc(const LmChoice& choice, const Options& options,
                                const ArrivalSpec& spec, GenWorkload& workload, Duration drain) {
  LmChoice sharing = choice;
  sharing.lanes = static_cast<int>(options.num_lanes);
  auto lm = make_lm(sharing);
  if (!lm) return lm.error();
  GenEngine engine(std::move(lm->runner), options, nullptr, lm_factory(sharing));
  if (Status s = engine.start(); !s) return s.error();
  GenEngineTarget target(engine);
  SteadyClock clock;
  GenRun live = run_gen_load(spec, workload, target, clock, drain);
  engine.stop(std::chrono::seconds(1));
  std::vector<GenRecord> records;
  engine.drain(records, live.steps);
  live.model = engine.info().name;
  return live;
}

namespace {

// `calibration_s` of the traffic, live at `lanes` lanes: its steps; the run
// goes to `kept` when given.
Expected<std::vector<StepRecord>> calibrate(const LmChoice& choice, Options options, uint32_t lanes,
                                            const ArrivalSpec& spec, const GenLengthFlags& lengths,
                                            double calibration_s,
                                            std::vector<GenCalibration>* kept) {
  std::printf(
      "  measuring the step cost at %u lane%s: %.0f s of this traffic, live (--cost FILE "
      "skips it)\n",
      lanes, lanes == 1 ? "" : "s", calibration_s);
  std::fflush(stdout);
  // The steps so far are the measurement: whatever is still running a
  // second after the last send is left.
  ArrivalSpec calibration = spec;
  calibration.duration_s = calibration_s;
  if (calibration.pattern == Pattern::kTrace) calibration.max_requests = 0;
  options.num_lanes = lanes;
  GenWorkload workload = lengths.workload(spec.seed + 99);
  auto live = run_gen_inproc(choice, options, calibration, workload, std::chrono::seconds(1));
  if (!live) return Error{live.error().code, "calibration: " + live.error().message};
  if (kept) kept->push_back(GenCalibration{*live, options});
  return std::move(live->steps);
}

}  // namespace

Expected<PricedSteps> price_gen_steps(const LmChoice& choice, const Options& options,
                                      const ArrivalSpec& spec, const GenLengthFlags& lengths,
                                      const GenCostChoice& priced, std::vector<uint32_t> lanes,
                                      std::vector<GenCalibration>* calibration) {
  if (lanes.empty()) lanes.push_back(std::max<uint32_t>(options.num_lanes, 1));
  if (choice.synthetic) {
    return PricedSteps{GenStepCost::synthetic(choice.synthetic->first, choice.synthetic->second),
                       "the synthetic model's own cost"};
  }
  if (!priced.file.empty()) {
    auto c = read_cost(priced.file);
    if (!c) return c.error();
    for (uint32_t n : lanes) {
      if (at_lanes(*c, n)) continue;
      return invalid_argument(
          "--cost " + priced.file + " was measured at " + std::to_string(c->lanes) +
          " lane(s) and has no fit at " + std::to_string(n) +
          ": leave out --cost to measure it live, or give a cost measured at " + std::to_string(n) +
          " (bench --lanes " + std::to_string(n) + " --cost-out FILE)");
    }
    return PricedSteps{GenStepCost::of(*c), priced.file};
  }
  const auto cache = step_cache_for(choice);
  std::optional<StepCost> cost;
  std::string source;
  if (cache && !priced.recalibrate) {
    auto kept = read_cached_step_cost(cache->path, cache->key);
    if (kept && *kept) {
      cost = **kept;
      source = "kept in " + cache->path + ", " + std::to_string((*kept)->steps) + " steps";
    }
    if (!kept) std::printf("  %s; measuring it anew\n", kept.error().message.c_str());
  }
  bool changed = false;
  if (!cost) {
    auto steps =
        calibrate(choice, options, lanes.front(), spec, lengths, priced.calibration_s, calibration);
    if (!steps) return steps.error();
    auto c = measure_step_cost(*steps, lanes.front());
    if (!c) return Error{c.error().code, "calibration: " + c.error().message};
    cost = *c;
    source = "a live calibration of " + std::to_string(c->steps) + " steps";
    changed = true;
  }
  // Every other lane count priced needs its own fit, measured as the first.
  for (uint32_t n : lanes) {
    if (at_lanes(*cost, n)) continue;
    auto steps = calibrate(choice, options, n, spec, lengths, priced.calibration_s, calibration);
    if (!steps) return steps.error();
    auto learned = learn_step_cost(cost, *steps, n);
    if (!learned) return Error{learned.error().code, "calibration: " + learned.error().message};
    cost = *learned;
    source += ", " + std::to_string(n) + (n == 1 ? " lane" : " lanes") + " measured live";
    changed = true;
  }
  if (cache && changed) {
    if (Status s = write_cached_step_cost(cache->path, cache->key, *cost); !s) {
      std::fprintf(stderr, "  the step cost was not kept: %s\n", s.message().c_str());
    } else if (source.find("kept in") == std::string::npos) {
      source += ", kept in " + cache->path;
    }
  }
  return PricedSteps{GenStepCost::of(*cost), source};
}

int run_gen_predict(const LmChoice& choice, const Options& options, const ArrivalSpec& spec,
                    GenLengthFlags lengths, const GenCostChoice& cost_choice,
                    const GenPredictOutputs& out) {
  // The model's context and cache, as the engine would have them.
  auto described = lm_info(choice);
  if (!described) return fail(described.error().message, 1);
  const LmInfo info = *described;
  if (Status s = check_cache(info); !s) return fail(s.message(), 1);
  if (Status s = options.validate(); !s) return fail(s.message());
  const auto context = static_cast<uint32_t>(std::max(2, info.context_length));
  if (const ContextFit fit = fit_to_context(lengths.replay, context); fit.any()) {
    std::printf("  trace: %s\n", fit.describe(context).c_str());
  }
  auto priced_steps = price_gen_steps(choice, options, spec, lengths, cost_choice);
  if (!priced_steps) {
    // A cost file that cannot be read is the caller's; a calibration that failed is not.
    return fail(priced_steps.error().message, cost_choice.file.empty() ? 1 : 2);
  }
  const GenStepCost cost = priced_steps->cost;
  const std::string& priced = priced_steps->source;
  std::printf("  step cost: %s (%s)\n", cost.text().c_str(), priced.c_str());
  if (cost.of_step(1, 0) <= Duration(0)) {
    return fail("a step that costs nothing cannot be predicted (" + priced +
                "): give the model a cost, for example --synthetic-lm 2000,20");
  }

  GenWorkload workload = lengths.workload(spec.seed);
  GenRun run = predict_gen(spec, workload, options, info, cost);
  run.pattern = spec.describe();
  run.workload = lengths.describe();
  run.target = "predict";
  run.model = info.name;
  run.options = describe_generation(options);
  run.seed = spec.seed;
  std::printf("Batchscope bench: %s -> predict\n", run.pattern.c_str());
  const GenSummary summary = summarize_gen(run, out.slo_ttft_ms, out.slo_itl_ms);
  std::printf("%s", gen_summary_text(run, summary).c_str());
  int rc = 0;
  auto save = [&](const std::string& path, const std::string& text, const char* what) {
    if (!save_export(path, text, what)) rc = 1;
  };
  save(out.json, gen_summary_json(run, summary), "JSON summary");
  if (!out.csv_prefix.empty()) {
    save(out.csv_prefix + "_requests.csv", gen_requests_csv(run), "CSV per request");
  }
  save(out.trace, gen_trace_json(run), "Chrome trace, one row of steps; open in Perfetto");
  return rc;
}

}  // namespace batchscope

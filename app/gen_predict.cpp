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

void refine_kept_steps(const LmChoice& choice, std::span<const StepRecord> steps) {
  auto cache = step_cache_for(choice);
  if (!cache) return;
  auto seen = measure_step_cost(steps);
  if (!seen) return;
  auto kept = read_cached_step_cost(cache->path, cache->key);
  if (!kept) {
    std::fprintf(stderr, "  the kept step cost was not refined: %s\n", kept.error().message.c_str());
    return;
  }
  const StepCost now = *kept ? refine_step_cost(**kept, *seen) : *seen;
  if (Status s = write_cached_step_cost(cache->path, cache->key, now); !s) {
    std::fprintf(stderr, "  the step cost was not kept: %s\n", s.message().c_str());
    return;
  }
  if (*kept) {
    std::printf(
        "  kept step cost refined by %llu steps: %.1f -> %.1f us + %.3f -> %.3f us per "
        "decode, %.1f -> %.1f us between steps (%s)\n",
        static_cast<unsigned long long>(seen->steps), (*kept)->step_us, now.step_us,
        (*kept)->token_us, now.token_us, (*kept)->between_us, now.between_us, cache->path.c_str());
  } else {
    std::printf("  step cost kept from %llu steps: %.1f us + %.3f us per decode (%s)\n",
                static_cast<unsigned long long>(seen->steps), now.step_us, now.token_us,
                cache->path.c_str());
  }
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
  auto lm = make_lm(choice);
  if (!lm) return lm.error();
  GenEngine engine(std::move(lm->runner), options);
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

Expected<PricedSteps> price_gen_steps(const LmChoice& choice, const Options& options,
                                      const ArrivalSpec& spec, const GenLengthFlags& lengths,
                                      const GenCostChoice& priced) {
  if (choice.synthetic) {
    return PricedSteps{GenStepCost::synthetic(choice.synthetic->first, choice.synthetic->second),
                       "the synthetic model's own cost"};
  }
  if (!priced.file.empty()) {
    auto c = read_cost(priced.file);
    if (!c) return c.error();
    return PricedSteps{GenStepCost::of(*c), priced.file};
  }
  const auto cache = step_cache_for(choice);
  if (cache && !priced.recalibrate) {
    auto kept = read_cached_step_cost(cache->path, cache->key);
    if (kept && *kept) {
      return PricedSteps{GenStepCost::of(**kept), "kept in " + cache->path + ", " +
                                                      std::to_string((*kept)->steps) + " steps"};
    }
    if (!kept) std::printf("  %s; measuring it anew\n", kept.error().message.c_str());
  }
  const double calibration_s = priced.calibration_s;
  std::printf("  measuring the step cost: %.0f s of this traffic, live (--cost FILE skips it)\n",
              calibration_s);
  std::fflush(stdout);
  // The steps so far are the measurement: whatever is still running a
  // second after the last send is left.
  ArrivalSpec calibration = spec;
  calibration.duration_s = calibration_s;
  if (calibration.pattern == Pattern::kTrace) calibration.max_requests = 0;
  GenWorkload workload = lengths.workload(spec.seed + 99);
  auto live = run_gen_inproc(choice, options, calibration, workload, std::chrono::seconds(1));
  if (!live) return Error{live.error().code, "calibration: " + live.error().message};
  auto c = measure_step_cost(live->steps);
  if (!c) return Error{c.error().code, "calibration: " + c.error().message};
  std::string source = "a live calibration of " + std::to_string(c->steps) + " steps";
  if (cache) {
    if (Status s = write_cached_step_cost(cache->path, cache->key, *c); !s) {
      std::fprintf(stderr, "  the step cost was not kept: %s\n", s.message().c_str());
    } else {
      source += ", kept in " + cache->path;
    }
  }
  return PricedSteps{GenStepCost::of(*c), source};
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

// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/kept_steps.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "generation/gen_engine.h"
#include "traffic/gen_load.h"
#include "traffic/llm_trace.h"
#include "tuning/cost_cache.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_cost.h"

namespace batchscope {

namespace {

Expected<StepCost> read_cost(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("--cost " + path + ": cannot read it");
  std::ostringstream text;
  text << in.rdbuf();
  auto cost = parse_step_cost_json(text.str());
  if (!cost) return invalid_argument("--cost " + path + ": " + cost.error().message);
  return cost;
}

// Where `model`'s step cost is kept on this machine; none for the synthetic
// model or a build that keeps no costs.
struct StepCache {
  CostKey key;
  std::string path;
};
std::optional<StepCache> step_cache_for(const LocalModel& model) {
  if (model.choice().is_synthetic()) return std::nullopt;
  const std::string dir = cost_cache_dir();
  if (dir.empty()) return std::nullopt;
  auto key = cost_key_for(model.choice());
  if (!key) return std::nullopt;
  key->model = model.name();
  return StepCache{*key, step_cost_cache_path(*key, dir)};
}

}  // namespace

namespace {

// `cost` with `e` kept as evidence, the oldest dropped beyond kMaxEvidence.
void keep_evidence(StepCost& cost, CostEvidence e) {
  cost.evidence.push_back(std::move(e));
  if (cost.evidence.size() > kMaxEvidence) cost.evidence.erase(cost.evidence.begin());
}

}  // namespace

void refine_kept_steps(const LocalModel& model, std::span<const StepRecord> steps, uint32_t lanes,
                       const Say& say, const CompetingLoad* others) {
  auto cache = step_cache_for(model);
  if (!cache) return;
  lanes = std::max<uint32_t>(lanes, 1);
  auto kept = read_cached_step_cost(cache->path, cache->key);
  if (!kept) {
    say.err("  the kept step cost was not refined: %s\n", kept.error().message.c_str());
    return;
  }
  const std::optional<StepCost> before = *kept ? std::optional<StepCost>(**kept) : std::nullopt;
  // A busy run, or one far from what the kept cost has seen, is kept as
  // evidence and refines nothing; a far move is held short (cost_drift.h).
  CostEvidence evidence;
  evidence.at = utc_now_ms();
  evidence.lanes = lanes;
  RunVerdict verdict;
  if (before) {
    evidence.level = step_level(*before, steps, lanes);
    verdict = judge_level(evidence.level, drift_of_levels(before->evidence),
                          !at_lanes(*before, lanes), others, busy_cores(), "its steps");
  } else if (!refine_always() && others && others->cores >= busy_cores()) {
    verdict.busy = others->describe();
  }
  if (!verdict.busy.empty()) {
    say.out("  the kept step cost was not refined: %s%s\n", verdict.busy.c_str(),
            before ? "; the run is kept as evidence, labelled busy" : "");
    if (!before) return;
    StepCost labelled = *before;
    evidence.busy = verdict.busy;
    keep_evidence(labelled, std::move(evidence));
    if (Status s = write_cached_step_cost(cache->path, cache->key, labelled); !s) {
      say.err("  the step cost was not kept: %s\n", s.message().c_str());
    }
    return;
  }
  auto learned = learn_step_cost(before, steps, lanes, verdict.scale);
  if (!learned) return;
  if (evidence.level > 0) keep_evidence(*learned, std::move(evidence));
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
    say.err("  the step cost was not kept: %s\n", s.message().c_str());
    return;
  }
  say.out("%s (%s)\n", line.c_str(), cache->path.c_str());
  if (!verdict.held.empty()) say.out("    held short: %s\n", verdict.held.c_str());
}

std::optional<std::pair<StepCost, std::string>> kept_step_cost(const LocalModel& model) {
  auto cache = step_cache_for(model);
  if (!cache) return std::nullopt;
  auto kept = read_cached_step_cost(cache->path, cache->key);
  if (!kept || !*kept) return std::nullopt;
  return std::pair{**kept,
                   "kept in " + cache->path + ", " + std::to_string((*kept)->steps) + " steps"};
}

Expected<GenRun> run_gen_inproc(const LocalModel& model, const Options& options,
                                const ArrivalSpec& spec, GenWorkload& workload, Duration drain) {
  auto lm = model.lm(static_cast<int>(options.num_lanes));
  if (!lm) return lm.error();
  GenEngine engine(std::move(lm->runner), options, nullptr, lm->more_lanes);
  if (Status s = engine.start(); !s) return s.error();
  GenEngineTarget target(engine);
  SteadyClock clock;
  const LoadWatch others("/proc", false);
  GenRun live = run_gen_load(spec, workload, target, clock, drain);
  live.others = others.load();
  engine.stop(std::chrono::seconds(1));
  std::vector<GenRecord> records;
  engine.drain(records, live.steps);
  live.model = engine.info().name;
  return live;
}

namespace {

// `calibration_s` of the traffic, live at `lanes` lanes: its steps; the run
// goes to `kept` when given.
Expected<std::vector<StepRecord>> calibrate(const LocalModel& model, Options options,
                                            uint32_t lanes, const ArrivalSpec& spec,
                                            const GenWorkloadSpec& lengths, double calibration_s,
                                            const Say& say, std::vector<GenCalibration>* kept) {
  say.out(
      "  measuring the step cost at %u lane%s: %.0f s of this traffic, live (--cost FILE "
      "skips it)\n",
      lanes, lanes == 1 ? "" : "s", calibration_s);
  // The steps so far are the measurement: whatever is still running a
  // second after the last send is left.
  ArrivalSpec calibration = spec;
  calibration.duration_s = calibration_s;
  if (calibration.pattern == Pattern::kTrace) calibration.max_requests = 0;
  options.num_lanes = lanes;
  GenWorkload workload = lengths.workload(spec.seed + 99);
  auto live = run_gen_inproc(model, options, calibration, workload, std::chrono::seconds(1));
  if (!live) return Error{live.error().code, "calibration: " + live.error().message};
  if (kept) kept->push_back(GenCalibration{*live, options});
  return std::move(live->steps);
}

}  // namespace

Expected<PricedSteps> price_gen_steps(const LocalModel& model, const Options& options,
                                      const ArrivalSpec& spec, const GenWorkloadSpec& lengths,
                                      const CostChoice& priced, const Say& say,
                                      std::vector<uint32_t> lanes,
                                      std::vector<GenCalibration>* calibration) {
  if (lanes.empty()) lanes.push_back(std::max<uint32_t>(options.num_lanes, 1));
  if (const auto& synthetic = model.choice().synthetic_lm) {
    return PricedSteps{GenStepCost::synthetic(synthetic->step_us, synthetic->token_us),
                       "the synthetic model's own cost",
                       {}};
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
    return PricedSteps{GenStepCost::of(*c), priced.file, {}};
  }
  const auto cache = step_cache_for(model);
  std::optional<StepCost> cost;
  std::string source;
  if (cache && !priced.recalibrate) {
    auto kept = read_cached_step_cost(cache->path, cache->key);
    if (kept && *kept) {
      cost = **kept;
      source = "kept in " + cache->path + ", " + std::to_string((*kept)->steps) + " steps";
    }
    if (!kept) say.out("  %s; measuring it anew\n", kept.error().message.c_str());
  }
  bool changed = false;
  if (!cost) {
    auto steps = calibrate(model, options, lanes.front(), spec, lengths, priced.calibration_s, say,
                           calibration);
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
    auto steps =
        calibrate(model, options, n, spec, lengths, priced.calibration_s, say, calibration);
    if (!steps) return steps.error();
    auto learned = learn_step_cost(cost, *steps, n);
    if (!learned) return Error{learned.error().code, "calibration: " + learned.error().message};
    cost = *learned;
    source += ", " + std::to_string(n) + (n == 1 ? " lane" : " lanes") + " measured live";
    changed = true;
  }
  if (cache && changed) {
    if (Status s = write_cached_step_cost(cache->path, cache->key, *cost); !s) {
      say.err("  the step cost was not kept: %s\n", s.message().c_str());
    } else if (source.find("kept in") == std::string::npos) {
      source += ", kept in " + cache->path;
    }
  }
  return PricedSteps{GenStepCost::of(*cost), source, drift_of_levels(cost->evidence)};
}

}  // namespace batchscope

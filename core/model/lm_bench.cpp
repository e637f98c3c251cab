// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/lm_bench.h"

#include <algorithm>

#include "common/clock.h"
#include "common/text_out.h"
#include "model/kept_steps.h"
#include "traffic/llm_trace.h"
#include "tuning/cost_drift.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_cost.h"

namespace batchscope {

LmBench::LmBench(const LmBenchRequest& request, const Say& say) : request_(request), say_(say) {}

LmBench::~LmBench() {
  if (engine_) engine_->stop(std::chrono::seconds(1));
}

Expected<std::unique_ptr<LmBench>> LmBench::open(const LmBenchRequest& request, const Say& say) {
  std::unique_ptr<LmBench> b(new LmBench(request, say));
  LmBenchRequest& r = b->request_;
  const bool remote = r.target != "inproc" && r.target != "self-http";
  std::string model_name = "remote";
  if (!remote) {
    auto model = LocalModel::open(r.model);
    if (!model) return model.error();
    b->model_ = *model;
    auto lm = model->lm(static_cast<int>(r.options.num_lanes));
    if (!lm) return lm.error();
    model_name = lm->runner->info().name;
    b->engine_ =
        std::make_unique<GenEngine>(std::move(lm->runner), r.options, nullptr, lm->more_lanes);
    if (Status s = b->engine_->start(); !s) return s.error();
    const auto context = static_cast<uint32_t>(std::max(2, b->engine_->info().context_length));
    if (const ContextFit fit = fit_to_context(r.lengths.replay, context); fit.any()) {
      say.out("  trace: %s\n", fit.describe(context).c_str());
    }
  }
  GenRun& run = b->run_;
  run.pattern = r.traffic.describe();
  run.workload = r.lengths.describe();
  run.target = r.target;
  run.model = model_name;
  run.options = remote ? "the remote server's own" : describe_generation(r.options);
  run.seed = r.traffic.seed;
  // The run is kept as it goes (kept_run.h): its requests, and our own
  // engine's steps, every half second.
  b->writer_ = open_history_writer(r.history, "batchscope bench", say);
  RunConfig config;
  config.pattern = run.pattern;
  config.target = run.target;
  config.model = run.model;
  config.options = r.options;
  config.seed = run.seed;
  config.duration_s = r.traffic.duration_s;
  b->kept_ =
      std::make_unique<KeptRun>(b->writer_.get(), "generation", run.pattern + " -> " + run.target,
                                config, run_context_json(r.model.file(), r.model.device), say);
  return b;
}

Expected<GenRun> LmBench::run(LmHttpFront* front, const std::atomic<bool>* stop) {
  say_.out("Batchscope bench: %s -> %s\n", run_.pattern.c_str(), request_.target.c_str());
  GenLoadOptions load;
  load.stop = stop;
  std::vector<StepRecord> steps_so_far;  // what the progress drained from the engine
  std::vector<GenRecord> drained;
  load.progress = kept_->gen_progress([&]() -> std::vector<StepRecord> {
    if (!engine_) return {};
    std::vector<StepRecord> steps;
    engine_->drain(drained, steps);
    steps_so_far.insert(steps_so_far.end(), steps.begin(), steps.end());
    return steps;
  });
  GenWorkload workload = request_.lengths.workload(request_.traffic.seed);
  SteadyClock clock;
  GenRun measured;
  const LoadWatch others("/proc", false);
  if (request_.target == "inproc") {
    GenEngineTarget t(*engine_);
    measured = run_gen_load(request_.traffic, workload, t, clock, load);
  } else {
    if (!front)
      return invalid_argument("--target " + request_.target + " needs a client over HTTP");
    auto t = front->open(engine_.get(), run_);
    if (!t) return t.error();
    measured = run_gen_load(request_.traffic, workload, **t, clock, load);
    front->close();
  }
  measured.pattern = run_.pattern;
  measured.workload = run_.workload;
  measured.target = run_.target;
  measured.model = run_.model;
  measured.options = run_.options;
  measured.seed = run_.seed;
  if (engine_) {
    engine_->stop(std::chrono::seconds(1));
    std::vector<StepRecord> last;
    engine_->drain(drained, last);
    measured.steps = std::move(steps_so_far);
    measured.steps.insert(measured.steps.end(), last.begin(), last.end());
    // A live run of the model here: its steps refine the kept step cost.
    measured.others = others.load();
    refine_kept_steps(*model_, measured.steps, request_.options.num_lanes, say_, &*measured.others);
  }
  return measured;
}

void LmBench::keep(const GenRun& run, const std::string& summary_json, double duration_s,
                   const std::string& stopped) {
  kept_->finish_generation(run, summary_json, duration_s, stopped);
}

Expected<std::string> LmBench::cost_out(const GenRun& run) const {
  auto cost = measure_step_cost(run.steps, request_.options.num_lanes);
  if (!cost) return invalid_argument("--cost-out: " + cost.error().message);
  say_.out("  step cost: %s over %llu steps\n", GenStepCost::of(*cost).text().c_str(),
           static_cast<unsigned long long>(cost->steps));
  return step_cost_json(*cost, run.model, request_.model.device);
}

std::optional<WorkError> predict_lm_bench(const LmBenchRequest& r, const Say& say, GenRun& run,
                                          GenPredictionBand* band) {
  auto failed = [](const Error& e, bool refused) { return WorkError{e.message, refused}; };
  if (Status s = r.options.validate(); !s) return failed(s.error(), true);
  // The model's context and cache, as the engine would have them: here, or
  // on the GPU planned for.
  std::optional<LocalModel> model;
  std::optional<PlannedLm> planned;
  LmInfo info;
  if (r.plan) {
    auto p = plan_lm(*r.plan, r.options);
    if (!p) return failed(p.error(), true);
    planned = std::move(*p);
    info = planned->info;
    say.out("  planned: %s\n", planned->describe().c_str());
  } else {
    auto m = LocalModel::open(r.model);
    if (!m) return failed(m.error(), false);
    model = std::move(*m);
    info = model->lm_info();
  }
  if (Status s = check_cache(info); !s) return failed(s.error(), false);
  GenWorkloadSpec lengths = r.lengths;
  const auto context = static_cast<uint32_t>(std::max(2, info.context_length));
  if (const ContextFit fit = fit_to_context(lengths.replay, context); fit.any()) {
    say.out("  trace: %s\n", fit.describe(context).c_str());
  }
  GenStepCost cost;
  std::string source;
  CostDrift drift;  // none for a plan: its band is +-15%
  if (planned) {
    cost = planned->cost;
    source = "the roofline's constants: " + planned->roofline.constants().fitted_on;
  } else {
    auto priced = price_gen_steps(*model, r.options, r.traffic, lengths, r.cost, say);
    // A cost file that cannot be read is the caller's; a calibration that failed is not.
    if (!priced) return failed(priced.error(), !r.cost.file.empty());
    cost = priced->cost;
    source = priced->source;
    drift = priced->drift;
  }
  say.out("  step cost: %s (%s)\n", cost.text().c_str(), source.c_str());
  if (cost.of_step(1, 0) <= Duration(0)) {
    return WorkError{"a step that costs nothing cannot be predicted (" + source +
                         "): give the model a cost, for example --synthetic-lm 2000,20",
                     true};
  }
  GenWorkload workload = lengths.workload(r.traffic.seed);
  run = predict_gen(r.traffic, workload, r.options, info, cost);
  run.cache_tokens =
      static_cast<uint64_t>(info.num_blocks) * static_cast<uint64_t>(info.block_size);
  run.pattern = r.traffic.describe();
  run.workload = lengths.describe();
  run.target = "predict";
  run.model = info.name;
  run.options = describe_generation(r.options);
  run.seed = r.traffic.seed;
  if (band) {
    const BandFactors f = band_factors(drift);
    band->fast = f.low;
    band->slow = f.high;
    band->source = planned ? "the default +-15%: a GPU that is not here keeps no drift" : f.source;
    auto at = [&](double factor) {
      GenWorkload w = lengths.workload(r.traffic.seed);
      return summarize_gen(predict_gen(r.traffic, w, r.options, info, cost.scaled(factor)), 0, 0);
    };
    band->at_fast = at(f.low);
    band->at_slow = at(f.high);
  }
  say.out("Batchscope bench: %s -> predict\n", run.pattern.c_str());
  return std::nullopt;
}

namespace {

// [lo, hi] of a figure at the band's two ends.
std::pair<double, double> range(double a, double b) { return {std::min(a, b), std::max(a, b)}; }

}  // namespace

std::string GenPredictionBand::text() const {
  std::string out;
  append_format(out, "  band (the step cost x%.2f..x%.2f, %s):\n", fast, slow, source.c_str());
  auto line = [&](const char* name, double a, double b, const char* unit) {
    const auto [lo, hi] = range(a, b);
    append_format(out, "    %-18s %.2f..%.2f %s\n", name, lo, hi, unit);
  };
  line("TTFT mean", at_fast.ttft.mean, at_slow.ttft.mean, "ms");
  line("TTFT p99", at_fast.ttft.p99, at_slow.ttft.p99, "ms");
  line("ITL mean", at_fast.itl.mean, at_slow.itl.mean, "ms");
  line("ITL p99", at_fast.itl.p99, at_slow.itl.p99, "ms");
  line("output tokens/s", at_fast.tokens_per_s, at_slow.tokens_per_s, "");
  return out;
}

std::string GenPredictionBand::json() const {
  std::string j = "{\"fast\":";
  append_json_number(j, fast);
  j += ",\"slow\":";
  append_json_number(j, slow);
  j += ",\"source\":";
  append_json_string(j, source);
  auto pair = [&](const char* key, double a, double b) {
    const auto [lo, hi] = range(a, b);
    j += std::string(",\"") + key + "\":[";
    append_json_number(j, lo);
    j += ',';
    append_json_number(j, hi);
    j += ']';
  };
  pair("ttft_mean_ms", at_fast.ttft.mean, at_slow.ttft.mean);
  pair("ttft_p99_ms", at_fast.ttft.p99, at_slow.ttft.p99);
  pair("itl_mean_ms", at_fast.itl.mean, at_slow.itl.mean);
  pair("itl_p99_ms", at_fast.itl.p99, at_slow.itl.p99);
  pair("tpot_mean_ms", at_fast.tpot_mean_ms, at_slow.tpot_mean_ms);
  pair("output_tokens_per_s", at_fast.tokens_per_s, at_slow.tokens_per_s);
  return j + '}';
}

}  // namespace batchscope

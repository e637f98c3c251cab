// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/tensor_bench.h"

#include <algorithm>
#include <fstream>

#include "common/clock.h"
#include "traffic/inproc_run.h"
#include "traffic/varied_inputs.h"
#include "tuning/adaptive_planner.h"

namespace batchscope {

TensorBench::TensorBench(const BenchRequest& request, LocalModel model, const Say& say)
    : request_(request), model_(std::move(model)), say_(say), planner_(make_adaptive_plan) {}

Status TensorBench::check(BenchRequest& r) {
  const std::string& target = r.target;
  const bool predicted = target == "predict";
  const bool remote = target != "inproc" && target != "self-http" && !predicted;
  const std::string& cost_file = r.cost.file;
  const std::string& plan_file = r.plan_cost;
  // A live run would not read --cost: say so rather than ignore it.
  if (!cost_file.empty() && !predicted) {
    return invalid_argument("--cost " + cost_file + " is read by --target predict alone; this " +
                            "run has target " + target + " (--plan-cost FILE makes the adaptive " +
                            "strategy plan on a cost file)");
  }
  if (!plan_file.empty() && (remote || r.options.strategy != StrategyKind::kAdaptive)) {
    return invalid_argument("--plan-cost " + plan_file + " is read by the adaptive strategy of " +
                            "an inproc, self-http or predict run; this run has target " + target +
                            " and strategy " + strategy_name(r.options.strategy));
  }
  // With --plan-cost, the predictor plans on the cost it predicts with.
  if (predicted && !plan_file.empty() && !cost_file.empty() && plan_file != cost_file) {
    return invalid_argument("--plan-cost " + plan_file + " and --cost " + cost_file +
                            " differ; with --target predict the adaptive strategy plans on the " +
                            "cost it is predicted with, so give one file");
  }
  // An existing cost file is refined by the run, so it is read first: a
  // file that is not one is refused before the run, not after it.
  if (!r.cost_out.empty()) {
    if (remote || predicted) {
      return invalid_argument("--cost-out " + r.cost_out + " needs --target inproc or " +
                              "self-http, whose batches this process runs and times");
    }
    if (std::ifstream(r.cost_out).good()) {
      auto before = CostModel::from_file(r.cost_out);
      if (!before) {
        return invalid_argument("--cost-out: " + before.error().message +
                                "; it would be refined by this run, so give a new path or a " +
                                "cost file");
      }
      r.refining = *before;
    }
  }
  if (r.seq_len) {
    auto m = LocalModel::open(r.model);
    if (m && !has_variable_inputs(m->metadata())) {
      return invalid_argument("--seq-len " + r.seq_len->describe() + ": model '" + m->name() +
                              "' has no input that varies in length");
    }
  }
  return Status::Ok();
}

Expected<std::unique_ptr<TensorBench>> TensorBench::open(const BenchRequest& request,
                                                         const Say& say) {
  BenchRequest r = request;
  if (!r.batch_given) fit_default_batch(r.model, r.options);
  auto model = LocalModel::open(r.model);
  if (!model) return model.error();
  std::unique_ptr<TensorBench> b(new TensorBench(r, std::move(*model), say));
  const ModelMetadata& metadata = b->metadata();
  if (b->live_here()) {
    auto factory = b->model_.runners(r.options);
    if (!factory) return factory.error();
    b->factory_ = *factory;
    b->stage_ = b->model_.prepare_stage(r.options);
    if (!r.plan_cost.empty() || r.options.strategy == StrategyKind::kAdaptive) {
      auto planner = live_planner(r.model, r.plan_cost, "bench", say);
      if (!planner) return planner.error();
      b->planner_ = *planner;
    }
  }
  // A model whose inputs vary in length: requests of lengths drawn from --seq-len.
  if (has_variable_inputs(metadata) && !r.own_bodies && !b->predicted()) {
    const LengthDist lengths = r.seq_len.value_or(default_lengths(metadata));
    b->varied_ = varied_inputs(metadata, lengths, r.traffic.seed, kVariedPool);
    say.out("lengths: %s\n", lengths.describe().c_str());
  }
  RunConfig& cfg = b->config_;
  cfg.pattern = r.traffic.describe();
  cfg.target = r.target;
  cfg.model = metadata.name;
  cfg.options = r.options;
  cfg.duration_s = r.traffic.duration_s;
  cfg.seed = r.traffic.seed;
  // A measured run is kept as it goes (kept_run.h); a predicted one at its end.
  b->writer_ = open_history_writer(r.history, "batchscope bench", say);
  b->context_ = run_context_json(r.model.file(), r.model.device,
                                 python_context(b->model_, r.options.num_lanes));
  b->kept_ = std::make_unique<KeptRun>(b->predicted() ? nullptr : b->writer_.get(), "bench",
                                       cfg.pattern + " -> " + cfg.target, cfg, b->context_, say);
  return b;
}

Expected<RunData> TensorBench::run(const std::vector<Tensors>& payload, HttpFront* front,
                                   const std::atomic<bool>* stop) {
  const BenchRequest& r = request_;
  if (predicted()) {
    CostChoice use = r.cost;
    if (!r.plan_cost.empty()) use.file = r.plan_cost;  // the adaptive strategy plans on it too
    return predict_bench(model_, r.options, r.traffic, use, r.seq_len, config_, say_);
  }
  if (r.target == "inproc") {
    say_.out("Batchscope bench: %s -> inproc\n", config_.pattern.c_str());
    return run_inproc(factory_, metadata(), r.options, planner_, r.traffic, config_,
                      payload.empty() ? varied_ : payload, stop, kept_->progress(), stage_);
  }
  if (!front) return invalid_argument("--target " + r.target + " needs a client over HTTP");
  return run_http(*front, stop);
}

Expected<RunData> TensorBench::run_http(HttpFront& front, const std::atomic<bool>* stop) {
  std::unique_ptr<Engine> engine;
  if (request_.target == "self-http") {
    engine = std::make_unique<Engine>(factory_, request_.options);
    bind_model(*engine, metadata(), stage_);
    engine->set_adaptive_planner(planner_);
    if (Status s = engine->start(); !s) return s.error();
  }
  auto target = front.open(engine.get(), metadata(), varied_);
  if (!target) return target.error();
  say_.out("Batchscope bench: %s -> %s\n", config_.pattern.c_str(), request_.target.c_str());
  LoadOptions load;
  load.stop = stop;
  // Our own engine's batches go to the history with the requests.
  std::optional<EngineRecords> records;
  if (engine) records.emplace(*engine);
  if (ProgressFn keep = kept_->progress()) {
    load.progress = [&records, keep](RunProgress&& p) {
      if (records) records->hand(p);
      keep(std::move(p));
    };
  }
  SteadyClock clock;
  RunData run = run_load(request_.traffic, **target, config_, clock, load);
  front.close();
  if (engine) {
    engine->stop(StopMode::kDrain);
    records->join(run);
  }
  return run;
}

std::optional<Expected<CostOut>> TensorBench::keep(const RunData& run,
                                                   const std::string& summary_json,
                                                   const std::string& stopped) {
  const BenchRequest& r = request_;
  if (writer_ && predicted()) {
    keep_run(*writer_, "bench", run, summary_json, context_, say_);
  } else if (writer_) {
    kept_->finish(run, summary_json, run.config.duration_s, stopped);
  }
  // An in-process run of the model refines its kept cost on this machine
  // (not where lengths vary: refine_cost_cache).
  if (r.target == "inproc" && !r.own_bodies) {
    refine_cost_cache(r.model, run, r.options.num_lanes, "bench", say_);
  }
  if (r.cost_out.empty()) return std::nullopt;
  return cost_out_of(run, r.model, r.refining, r.options.num_lanes, r.cost_out, say_);
}

}  // namespace batchscope

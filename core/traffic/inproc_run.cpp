// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/inproc_run.h"

#include "runs/machine_load.h"
#include "traffic/load_driver.h"

namespace batchscope {

void EngineRecords::drain() {
  engine_.drain_records(records_);
  for (const RequestRecord& r : records_.requests) {
    stages_.add(r);
    keep_prepared(r, prepared_);
  }
  batches_.insert(batches_.end(), records_.batches.begin(), records_.batches.end());
  depth_.insert(depth_.end(), records_.depth.begin(), records_.depth.end());
}

void EngineRecords::hand(RunProgress& p) {
  drain();
  p.batches = records_.batches;
  p.depth = records_.depth;
}

void EngineRecords::join(RunData& run) {
  drain();
  run.batches = std::move(batches_);
  run.depth = std::move(depth_);
  run.stages = std::move(stages_);
  run.prepared = std::move(prepared_);
}

Expected<RunData> run_inproc(const RunnerFactory& factory, const ModelMetadata& metadata,
                             const Options& options, AdaptivePlanner planner,
                             const ArrivalSpec& spec, const RunConfig& config,
                             std::vector<Tensors> inputs, const std::atomic<bool>* stop,
                             ProgressFn progress, const StageMaker& stage) {
  if (inputs.empty()) {
    for (uint64_t i = 0; i < 64; ++i) inputs.push_back(random_inputs(metadata, spec.seed + i));
  }
  Engine engine(factory, options);
  bind_model(engine, metadata, stage);
  engine.set_adaptive_planner(planner);
  if (Status s = engine.start(); !s) return s.error();
  SteadyClock clock;
  EngineTarget target(engine, [&inputs](uint64_t i) { return inputs[i % inputs.size()]; });
  LoadOptions load;
  load.stop = stop;
  // What the engine recorded while the run went on, handed over with the
  // requests and joined to the run at its end.
  EngineRecords records(engine);
  if (progress) {
    load.progress = [&](RunProgress&& p) {
      records.hand(p);
      progress(std::move(p));
    };
  }
  const LoadWatch watch("/proc", false);
  RunData run = run_load(spec, target, config, clock, load);
  engine.stop(StopMode::kDrain);
  records.join(run);
  run.others = watch.load();
  return run;
}

}  // namespace batchscope

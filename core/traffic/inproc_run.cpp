// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/inproc_run.h"

#include "traffic/load_driver.h"

namespace batchscope {

Expected<RunData> run_inproc(const RunnerFactory& factory, const ModelMetadata& metadata,
                             const Options& options, AdaptivePlanner planner,
                             const ArrivalSpec& spec, const RunConfig& config,
                             std::vector<Tensors> inputs, const std::atomic<bool>* stop) {
  if (inputs.empty()) {
    for (uint64_t i = 0; i < 64; ++i) inputs.push_back(random_inputs(metadata, spec.seed + i));
  }
  Engine engine(factory, options);
  bind_model(engine, metadata);
  engine.set_adaptive_planner(planner);
  if (Status s = engine.start(); !s) return s.error();
  SteadyClock clock;
  EngineTarget target(engine, [&inputs](uint64_t i) { return inputs[i % inputs.size()]; });
  LoadOptions load;
  load.stop = stop;
  RunData run = run_load(spec, target, config, clock, load);
  engine.stop(StopMode::kDrain);
  RecordBatch records;
  engine.drain_records(records);
  run.batches = std::move(records.batches);
  run.depth = std::move(records.depth);
  return run;
}

}  // namespace batchscope

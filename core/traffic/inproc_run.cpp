// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/inproc_run.h"

#include "traffic/load_driver.h"

namespace batchscope {

Expected<RunData> run_inproc(const RunnerFactory& factory, const ModelMetadata& metadata,
                             const Options& options, AdaptivePlanner planner,
                             const ArrivalSpec& spec, const RunConfig& config,
                             std::vector<Tensors> inputs, const std::atomic<bool>* stop,
                             ProgressFn progress) {
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
  // What the engine recorded while the run went on, handed over with the
  // requests and joined to the run at its end.
  RecordBatch records;
  std::vector<BatchRecord> batches;
  std::vector<DepthSample> depth;
  if (progress) {
    load.progress = [&](RunProgress&& p) {
      engine.drain_records(records);
      batches.insert(batches.end(), records.batches.begin(), records.batches.end());
      depth.insert(depth.end(), records.depth.begin(), records.depth.end());
      p.batches = records.batches;
      p.depth = records.depth;
      progress(std::move(p));
    };
  }
  RunData run = run_load(spec, target, config, clock, load);
  engine.stop(StopMode::kDrain);
  engine.drain_records(records);
  batches.insert(batches.end(), records.batches.begin(), records.batches.end());
  depth.insert(depth.end(), records.depth.begin(), records.depth.end());
  run.batches = std::move(batches);
  run.depth = std::move(depth);
  return run;
}

}  // namespace batchscope

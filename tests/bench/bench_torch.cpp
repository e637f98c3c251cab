// SPDX-License-Identifier: GPL-3.0-or-later
// The LibTorch runner under the engine, on the mlp model:
//   engine_over_loop    requests/s through the engine at saturation (batch
//                       32) over a plain loop of batched forwards of 32
//   batching_speedup    engine throughput at batch 32 over batch 1
//   of_predicted        that speedup over what `batchscope profile`
//                       predicts at 32 (t(1) * 32 / t(32))
// Run: build/bin/bench_torch (or scripts/bench). Figures are in docs/benchmarks.md.

#include <benchmark/benchmark.h>

#include <chrono>

#include "tests/bench/closed_loop.h"
#include "torch/profile.h"
#include "torch/torch_model.h"

namespace batchscope {
namespace {

const std::string kMlp = std::string(BATCHSCOPE_SOURCE_DIR) + "/models/mlp.pt";

double engine_rate(uint32_t batch, size_t total, const ModelMetadata& meta) {
  TorchOptions to;
  to.warmup_max_batch = batch;
  Engine engine(torch_runner_factory(kMlp, to),
                Options{.max_batch_size = batch, .max_wait_us = 2000, .queue_capacity = 4096});
  if (!engine.start().ok()) return 0;
  std::vector<Tensors> inputs;
  for (uint64_t i = 0; i < 64; ++i) inputs.push_back(random_inputs(meta, i));
  bench::ClosedLoop loop(engine, 4 * size_t{batch}, 2 * size_t{batch},
                         [&](size_t i) { return inputs[i % inputs.size()]; });
  const auto t0 = std::chrono::steady_clock::now();
  const size_t errors = loop.run(total);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return errors == 0 ? double(total) / s : 0;
}

void BM_MlpEngineOverLoop(benchmark::State& state) {
  const uint32_t b = 32;
  const size_t batches = 300;
  double ratio = 0, loop_rps = 0, engine_rps = 0;
  for (auto _ : state) {
    TorchOptions to;
    to.warmup_max_batch = b;
    auto model = TorchModel::load(kMlp, to);
    if (!model) {
      state.SkipWithError(model.error().message.c_str());
      return;
    }
    std::vector<Tensors> batch;
    for (uint64_t i = 0; i < b; ++i) batch.push_back(random_inputs((*model)->metadata(), i));
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < batches; ++i) {
      auto out = (*model)->run(batch);
      benchmark::DoNotOptimize(out);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    loop_rps = double(b * batches) / s;
    engine_rps = engine_rate(b, b * batches, (*model)->metadata());
    ratio = engine_rps / loop_rps;
  }
  state.counters["engine_over_loop"] = ratio;
  state.counters["loop_per_s"] = loop_rps;
  state.counters["engine_per_s"] = engine_rps;
}
BENCHMARK(BM_MlpEngineOverLoop)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MlpBatchingSpeedup(benchmark::State& state) {
  double measured = 0, predicted = 0, rate1 = 0, rate32 = 0;
  for (auto _ : state) {
    ProfileOptions po;
    po.max_batch = 32;
    po.seconds_per_point = 0.2;
    auto prof = profile_model(kMlp, po);
    if (!prof) {
      state.SkipWithError(prof.error().message.c_str());
      return;
    }
    predicted = prof->points.back().speedup;
    auto model = TorchModel::load(kMlp, TorchOptions{.warmup_max_batch = 1});
    const ModelMetadata meta = (*model)->metadata();
    rate1 = engine_rate(1, 600, meta);
    rate32 = engine_rate(32, 32 * 300, meta);
    measured = rate32 / rate1;
  }
  state.counters["batching_speedup"] = measured;
  state.counters["predicted_speedup"] = predicted;
  state.counters["of_predicted"] = measured / predicted;
  state.counters["batch1_per_s"] = rate1;
  state.counters["batch32_per_s"] = rate32;
}
BENCHMARK(BM_MlpBatchingSpeedup)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace batchscope

BENCHMARK_MAIN();

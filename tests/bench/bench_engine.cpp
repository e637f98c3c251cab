// SPDX-License-Identifier: GPL-3.0-or-later
// Engine benchmarks. Each reports its figure as a counter:
//   us_per_request     whole-process CPU time per request, no-op runner, P
//                      producer threads (1 or 8), records drained every 10 ms
//   wakeups_per_batch  cross-thread wake-ups the engine sends per batch
//   efficiency         completed/s at saturation over the ideal B/(a + c*B)
//   added_p50_us       median end-to-end latency minus run time at 10% load
//   arrivals_per_s     scheduled arrivals the load driver sends per second
//   us_per_sequence_step  generation scheduler CPU per sequence per step, zero-cost model
//   simulated_rps      requests the predictor replays per second of CPU
//   FutexWakeNoWaiter  one futex wake with nobody waiting: what a system call
//                      costs on this machine, to read the other figures by
//   FutureHandOff      a value set and taken on one thread, through
//                      batchscope::Future (0) or std::future (1)
// Run: build/bin/bench_engine (or scripts/bench). Figures are in docs/benchmarks.md.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <future>

#include "batching/adaptive.h"
#include "batching/engine.h"
#include "batching/future.h"
#include "batching/synthetic_runner.h"
#include "generation/gen_scheduler.h"
#include "generation/synthetic_lm.h"
#include "tests/bench/closed_loop.h"
#include "traffic/load_driver.h"
#include "tuning/adaptive_planner.h"
#include "tuning/predictor.h"

namespace batchscope {
namespace {

double process_cpu_us() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) { return double(t.tv_sec) * 1e6 + double(t.tv_usec); };
  return us(u.ru_utime) + us(u.ru_stime);
}

// Hands inputs back as outputs: the engine's own cost, with no model.
class NoopRunner final : public Runner {
 public:
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    return std::vector<Tensors>(std::make_move_iterator(inputs.begin()),
                                std::make_move_iterator(inputs.end()));
  }
};

Tensors small_input(size_t) {
  static const std::vector<float> x(4, 1.0f);
  Tensors in;
  in.push_back(Tensor::from_floats(x));
  return in;
}

// B = max_batch_size; many = 1: each top-up of the closed loop goes in one
// submit_many(); P producer threads share the 8 B requests in flight, each
// topping up its share.
void BM_PerRequest(benchmark::State& state) {
  const auto b = static_cast<uint32_t>(state.range(0));
  const bool many = state.range(1) == 1;
  const auto producers = static_cast<size_t>(state.range(2));
  const size_t per = 200'000 / producers;
  const size_t total = per * producers;
  const size_t window = std::max<size_t>(8 * b / producers, 2);
  double cpu = 0;
  EngineCounters c;
  for (auto _ : state) {
    Engine engine([](int) { return std::make_unique<NoopRunner>(); },
                  Options{.max_batch_size = b, .max_wait_us = 200, .queue_capacity = 1u << 16});
    if (!engine.start().ok()) state.SkipWithError("start failed");
    const double before = process_cpu_us();
    // Records are taken as a long-running consumer takes them (serve, the
    // workbench): drained often into storage that is reused, so the run
    // measures the engine's steady state rather than first-touch page faults.
    std::atomic<bool> done{false};
    std::thread drainer([&] {
      RecordBatch records;
      while (!done.load()) {
        engine.drain_records(records);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    std::vector<std::thread> threads;
    for (size_t p = 0; p < producers; ++p) {
      threads.emplace_back([&] {
        bench::ClosedLoop loop(engine, window, window / 2, small_input);
        if (many) loop.use_submit_many();
        loop.run(per);
      });
    }
    for (std::thread& t : threads) t.join();
    done = true;
    drainer.join();
    cpu = process_cpu_us() - before;
    c = engine.status().counters;
    engine.stop();
  }
  state.counters["us_per_request"] = cpu / double(total);
  state.counters["wakeups_per_batch"] =
      double(c.wakeups) / double(std::max<uint64_t>(c.batches, 1));
  state.counters["mean_batch"] = double(c.ok) / double(std::max<uint64_t>(c.batches, 1));
  state.SetItemsProcessed(int64_t(total) * state.iterations());
}
BENCHMARK(BM_PerRequest)
    ->ArgNames({"B", "many", "P"})
    ->Args({1, 0, 1})
    ->Args({8, 0, 1})
    ->Args({32, 0, 1})
    ->Args({128, 0, 1})
    ->Args({32, 1, 1})
    ->Args({32, 0, 8})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_Efficiency(benchmark::State& state) {
  const SyntheticCost cost{.fixed_us = 500, .per_item_us = 20, .busy_spin = true};
  const uint32_t b = 32;
  const size_t total = 32 * 200;  // 200 full batches, about 0.23 s of model time
  double seconds = 0;
  EngineCounters c;
  for (auto _ : state) {
    Engine engine(SyntheticRunner::factory(cost),
                  Options{.max_batch_size = b, .max_wait_us = 2000, .queue_capacity = 4096});
    if (!engine.start().ok()) state.SkipWithError("start failed");
    bench::ClosedLoop loop(engine, 4 * b, 2 * b, small_input);
    const auto t0 = std::chrono::steady_clock::now();
    loop.run(total);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    c = engine.status().counters;
    engine.stop();
  }
  const double ideal = double(b) / (cost.cost_us(b) * 1e-6);
  const double achieved = double(total) / seconds;
  state.counters["efficiency"] = achieved / ideal;
  state.counters["requests_per_s"] = achieved;
  state.counters["ideal_per_s"] = ideal;
  state.counters["wakeups_per_batch"] =
      double(c.wakeups) / double(std::max<uint64_t>(c.batches, 1));
  state.counters["mean_batch"] = double(c.ok) / double(std::max<uint64_t>(c.batches, 1));
}
BENCHMARK(BM_Efficiency)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_AddedLatency(benchmark::State& state) {
  // Capacity one at a time is 1/(a + c); offer 10% of it, Poisson, max_wait 0.
  const SyntheticCost cost{.fixed_us = 100, .per_item_us = 10, .busy_spin = true};
  const double rate = 0.1 * 1e6 / cost.cost_us(1);
  const size_t total = 1500;
  std::vector<double> added;
  for (auto _ : state) {
    Engine engine(SyntheticRunner::factory(cost), Options{.max_batch_size = 32, .max_wait_us = 0});
    if (!engine.start().ok()) state.SkipWithError("start failed");
    std::mutex mu;
    added.clear();
    added.reserve(total);
    std::mt19937_64 rng(1);
    std::exponential_distribution<double> gap(rate);
    std::vector<float> x(4, 1.0f);
    auto next = std::chrono::steady_clock::now();
    for (size_t i = 0; i < total; ++i) {
      next += std::chrono::nanoseconds(int64_t(gap(rng) * 1e9));
      std::this_thread::sleep_until(next);
      Tensors in;
      in.push_back(Tensor::from_floats(x));
      const auto sent = std::chrono::steady_clock::now();
      engine.submit(std::move(in), [&, sent](TensorResponse&& r) {
        const auto done = std::chrono::steady_clock::now();
        const double e2e = std::chrono::duration<double, std::micro>(done - sent).count();
        const double run = to_us(r.times.run_end - r.times.run_start);
        std::lock_guard g(mu);
        added.push_back(e2e - run);
      });
    }
    engine.stop();
  }
  std::sort(added.begin(), added.end());
  state.counters["added_p50_us"] = added[added.size() / 2];
  state.counters["added_p99_us"] = added[added.size() * 99 / 100];
  state.counters["offered_per_s"] = rate;
}
BENCHMARK(BM_AddedLatency)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// The load generator alone: a target that answers at once, so what is
// measured is how many scheduled arrivals the driver sends per second.
class NullTarget final : public LoadTarget {
 public:
  void send(uint64_t, Done done) override { done(Result{}); }
};

void BM_LoadDriverArrivals(benchmark::State& state) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 5e6;  // more than it can send: it runs flat out, behind schedule
  spec.duration_s = 0.5;
  double per_s = 0;
  for (auto _ : state) {
    NullTarget target;
    SteadyClock clock;
    const auto t0 = std::chrono::steady_clock::now();
    RunData run = run_load(spec, target, RunConfig{}, clock);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    per_s = double(run.requests.size()) / s;
  }
  state.counters["arrivals_per_s"] = per_s;
}
BENCHMARK(BM_LoadDriverArrivals)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// The generation scheduler's own cost: steps of N sequences decoding on a
// model that costs nothing, new requests joining as others finish.
// Reported: CPU per step and per sequence-step (the target is <= 5 us).
void BM_GenSchedulerStep(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  SteadyClock clock;
  SyntheticLmOptions mo;
  mo.num_blocks = 8192;
  SyntheticLm lm(mo);
  GenScheduler sched(lm, clock);
  Options o;
  o.max_num_seqs = n;
  o.max_num_batched_tokens = std::max(n * 2, 64u);
  uint64_t next = 1, seq_steps = 0;
  const auto top_up = [&] {
    while (sched.waiting() + sched.running() < n + 2) {
      GenRequest r;
      r.prompt = {65, 110, 100, 32};
      r.max_tokens = 64;
      r.sampling.temperature = 0;
      sched.add(next++, std::move(r), clock.now(), kNever);
    }
  };
  for (auto _ : state) {
    top_up();
    const StepOutcome out = sched.step(o);
    seq_steps += out.step.decodes + out.step.prefills;
    benchmark::DoNotOptimize(out.step.step);
  }
  state.counters["us_per_sequence_step"] = benchmark::Counter(
      static_cast<double>(seq_steps), benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
  state.counters["seqs_per_step"] =
      static_cast<double>(seq_steps) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_GenSchedulerStep)->Arg(8)->Arg(32)->Arg(128)->Unit(benchmark::kMicrosecond);

// The predictor replaying poisson traffic at 20,000 req/s through a synthetic
// model (500 us + 20 us per item, 64 at most, two lanes): simulated requests
// per second of CPU, for fifo (0) and adaptive (1; its plans, made on the
// way, are counted in).
void BM_Predictor(benchmark::State& state) {
  PredictSpec spec;
  spec.arrivals.pattern = Pattern::kPoisson;
  spec.arrivals.rate = 20'000;
  spec.arrivals.duration_s = 10;
  spec.arrivals.max_requests = 200'000;
  spec.options = {.max_batch_size = 64,
                  .max_wait_us = 2000,
                  .num_lanes = 2,
                  .strategy = state.range(0) == 0 ? StrategyKind::kFifo : StrategyKind::kAdaptive,
                  .target_p99_ms = 4};
  spec.cost = CostModel::from_synthetic({.fixed_us = 500, .per_item_us = 20}, 64);
  uint64_t requests = 0;
  double batch_mean = 0;
  for (auto _ : state) {
    const RunData run = predict_run(spec);
    requests += run.requests.size();
    batch_mean = double(run.requests.size()) / double(std::max<size_t>(run.batches.size(), 1));
    benchmark::DoNotOptimize(run.requests.data());
  }
  state.counters["simulated_rps"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["batch_mean"] = batch_mean;
}
BENCHMARK(BM_Predictor)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// One plan of the adaptive strategy (t(b) = 500 + 20 b us, target 10 ms,
// max_wait 20 ms): the CPU a lane spends on it after a batch, for
// (max_batch_size, lanes, rate) at light and heavy load.
void BM_AdaptivePlan(benchmark::State& state) {
  AdaptiveCostModel m;
  m.intercept_us = 500;
  m.per_item_us = 20;
  const Options o = {.max_batch_size = static_cast<uint32_t>(state.range(0)),
                     .max_wait_us = 20'000,
                     .num_lanes = static_cast<uint32_t>(state.range(1)),
                     .strategy = StrategyKind::kAdaptive,
                     .target_p99_ms = 10};
  for (auto _ : state) {
    benchmark::DoNotOptimize(make_adaptive_plan(static_cast<double>(state.range(2)), m, o));
  }
}
BENCHMARK(BM_AdaptivePlan)
    ->Args({32, 1, 1000})
    ->Args({32, 1, 30'000})
    ->Args({256, 2, 1000})
    ->Args({256, 2, 30'000})
    ->Args({4096, 64, 30'000})
    ->Unit(benchmark::kMillisecond);

void BM_FutexWakeNoWaiter(benchmark::State& state) {
  uint32_t word = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0));
  }
}
BENCHMARK(BM_FutexWakeNoWaiter);

void BM_FutureHandOff(benchmark::State& state) {
  const bool std_future = state.range(0) == 1;
  for (auto _ : state) {
    if (std_future) {
      std::promise<int> p;
      std::future<int> f = p.get_future();
      p.set_value(1);
      benchmark::DoNotOptimize(f.get());
    } else {
      Promise<int> p;
      Future<int> f = p.get_future();
      p.set_value(1);
      benchmark::DoNotOptimize(f.get());
    }
  }
}
BENCHMARK(BM_FutureHandOff)->ArgName("std")->Arg(0)->Arg(1);

}  // namespace
}  // namespace batchscope

BENCHMARK_MAIN();

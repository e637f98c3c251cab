// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <random>
#include <thread>

#include "app/cli_args.h"
#include "batching/engine.h"
#include "batching/synthetic_runner.h"
#include "model/local_model.h"
#include "runs/metrics.h"
#include "tuning/adaptive_planner.h"

namespace batchscope {

namespace {

std::atomic<bool> g_interrupted{false};

void on_signal(int) { g_interrupted = true; }

struct DemoConfig {
  double seconds = 20;
  double rate = 1500;
  SyntheticCost cost{.fixed_us = 500, .per_item_us = 20};
  Options options;
  bool retune = true;
  uint64_t seed = 1;
};

Expected<DemoConfig> parse(const std::vector<std::string>& args) {
  auto flags = cli::parse_flags(args, {"no-retune"});
  if (!flags) return flags.error();
  DemoConfig c;
  auto opts = cli::take_options(*flags);
  if (!opts) return opts.error();
  c.options = *opts;
  std::string synthetic;
  if (Status s = cli::take_fields(
          *flags, {cli::number("seconds", 0, 86400, c.seconds), cli::number("rate", 1, 1e7, c.rate),
                   cli::text("synthetic", synthetic), cli::number("seed", 0, 1e18, c.seed)});
      !s) {
    return s.error();
  }
  if (flags->erase("no-retune")) c.retune = false;
  if (Status s = cli::no_flags_left(*flags, "demo"); !s) return s.error();
  if (!synthetic.empty()) {
    auto v = parse_synthetic(synthetic);
    if (!v) return v.error();
    c.cost = *v;
  }
  return c;
}

void print_line(double t, const MetricsWindow& w, uint64_t sent, const EngineStatus& s) {
  const LatencySummary lat = summarize(w.total_ns);
  std::printf(
      "%5.0fs  sent %6llu  ok %6llu  rejected %4llu  timed out %3llu  queue max %4u  "
      "batch %5.1f  p50 %7.2f ms  p99 %7.2f ms  [v%llu %s, max_batch %u, max_wait %.2f ms]\n",
      t, static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(w.count(Outcome::kOk)),
      static_cast<unsigned long long>(w.count(Outcome::kRejected)),
      static_cast<unsigned long long>(w.count(Outcome::kTimedOut)), w.max_queue_depth,
      w.mean_batch_size(), lat.p50_us / 1000.0, lat.p99_us / 1000.0,
      static_cast<unsigned long long>(s.options_version), strategy_name(s.options.strategy),
      s.options.max_batch_size, static_cast<double>(s.options.max_wait_us) / 1000.0);
  if (s.options.strategy == StrategyKind::kAdaptive) {
    std::printf("       adaptive now applies: batch cap %zu, wait %.2f ms (target p99 %.2f ms)\n",
                s.limits.max_batch, to_ms(s.limits.max_wait), s.options.target_p99_ms);
  }
  std::fflush(stdout);
}

}  // namespace

std::string demo_help() {
  return "usage: batchscope demo [--seconds S] [--rate R] [--synthetic A_US,C_US] [--seed N]\n"
         "                       [--no-retune] [serving options]\n"
         "Serves Poisson traffic at R requests/s (default 1500) through the batching engine\n"
         "and a synthetic model whose batch of b costs A + C*b microseconds (default\n"
         "500,20), printing a summary each second for S seconds (default 20; 0 runs until\n"
         "Ctrl-C). Half way through it retunes max_wait live, unless --no-retune.\n"
         "Serving options:\n" +
         cli::options_help();
}

int run_demo(const std::vector<std::string>& args) {
  auto parsed = parse(args);
  if (!parsed) {
    std::cerr << "batchscope demo: " << parsed.error().message << "\n";
    return 2;
  }
  const DemoConfig cfg = *parsed;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  Engine engine(SyntheticRunner::factory(cfg.cost), cfg.options);
  engine.set_adaptive_planner(make_adaptive_plan);
  if (Status s = engine.start(); !s) {
    std::cerr << "batchscope demo: " << s.message() << "\n";
    return 1;
  }
  std::printf(
      "Batchscope demo: Poisson traffic at %.0f req/s into a synthetic model costing "
      "%.0f + %.0f*b us per batch\n  %s\n",
      cfg.rate, cfg.cost.fixed_us, cfg.cost.per_item_us, describe(cfg.options).c_str());
  std::printf(
      "  (an ideal batch of %u costs %.2f ms; one at a time the model saturates at %.0f req/s)\n",
      cfg.options.max_batch_size, cfg.cost.cost_us(cfg.options.max_batch_size) / 1000.0,
      1e6 / cfg.cost.cost_us(1));

  std::atomic<uint64_t> sent{0}, answered{0}, admitted{0};
  std::atomic<bool> stop_traffic{false};
  std::thread traffic([&] {
    std::mt19937_64 rng(cfg.seed);
    std::exponential_distribution<double> gap(cfg.rate);
    std::vector<float> x(16);
    auto next = std::chrono::steady_clock::now();
    while (!stop_traffic) {
      next += std::chrono::nanoseconds(static_cast<int64_t>(gap(rng) * 1e9));
      std::this_thread::sleep_until(next);
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rng() % 1000) / 10.0f;
      Tensors in;
      in.push_back(Tensor::from_floats(x));
      ++sent;
      auto id = engine.submit(std::move(in), [&](TensorResponse&&) { ++answered; });
      if (id.ok()) ++admitted;
    }
  });

  MetricsAggregator overall(std::chrono::seconds(1), 3600);
  RecordBatch records;
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t sent_before = 0;
  bool retuned = false;
  for (int tick = 1; !g_interrupted; ++tick) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(tick));
    engine.drain_records(records);
    MetricsAggregator interval(std::chrono::hours(24), 1);
    interval.fold(records);
    overall.fold(records);
    const uint64_t s = sent.load();
    print_line(tick, interval.totals(), s - sent_before, engine.status());
    sent_before = s;
    if (cfg.retune && !retuned && cfg.seconds > 0 && tick >= cfg.seconds / 2) {
      Options o = engine.status().options;
      o.max_wait_us = o.max_wait_us > 0 ? o.max_wait_us / 4 : 1000;
      if (Status st = engine.set_options(o); st) {
        std::printf("  -- retuned live: max_wait now %.2f ms; the next lines show its effect\n",
                    static_cast<double>(o.max_wait_us) / 1000.0);
      }
      retuned = true;
    }
    if (cfg.seconds > 0 && tick >= cfg.seconds) break;
  }
  stop_traffic = true;
  traffic.join();
  engine.stop(StopMode::kDrain);
  engine.drain_records(records);
  overall.fold(records);

  const MetricsWindow& t = overall.totals();
  const LatencySummary lat = summarize(t.total_ns);
  const EngineCounters c = engine.status().counters;
  std::printf(
      "\nTotal: %llu sent, %llu ok, %llu rejected, %llu timed out, %llu batches "
      "(mean size %.1f), latency p50 %.2f ms p90 %.2f ms p99 %.2f ms max %.2f ms\n",
      static_cast<unsigned long long>(sent.load()), static_cast<unsigned long long>(c.ok),
      static_cast<unsigned long long>(c.rejected), static_cast<unsigned long long>(c.timed_out),
      static_cast<unsigned long long>(c.batches), t.mean_batch_size(), lat.p50_us / 1000.0,
      lat.p90_us / 1000.0, lat.p99_us / 1000.0, lat.max_us / 1000.0);
  const uint64_t a = admitted.load(), r = answered.load();
  const uint64_t rejected_answers = c.rejected;  // rejections are answered too, at once
  if (r == a + rejected_answers && c.completed() == a) {
    std::printf("every admitted request answered exactly once (%llu admitted, %llu answered)\n",
                static_cast<unsigned long long>(a), static_cast<unsigned long long>(c.completed()));
    return 0;
  }
  std::printf("ERROR: %llu admitted but %llu answered\n", static_cast<unsigned long long>(a),
              static_cast<unsigned long long>(r));
  return 1;
}

}  // namespace batchscope

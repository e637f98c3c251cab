// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <cstdio>

#include "app/cli_args.h"
#include "app/run_output.h"
#include "app/stop_signal.h"
#include "model/demo_run.h"
#include "model/local_model.h"

namespace batchscope {
namespace {

const Fail fail{"demo"};

Expected<DemoRequest> parse(const std::vector<std::string>& args) {
  auto flags = cli::parse_flags(args, {"no-retune"});
  if (!flags) return flags.error();
  DemoRequest c;
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

unsigned long long u(uint64_t v) { return static_cast<unsigned long long>(v); }

void print_second(const DemoSecond& d) {
  const MetricsWindow& w = d.window;
  const EngineStatus& s = d.status;
  const LatencySummary lat = summarize(w.total_ns);
  std::printf(
      "%5ds  sent %6llu  ok %6llu  rejected %4llu  timed out %3llu  queue max %4u  "
      "batch %5.1f  p50 %7.2f ms  p99 %7.2f ms  [v%llu %s, max_batch %u, max_wait %.2f ms]\n",
      d.second, u(d.sent), u(w.count(Outcome::kOk)), u(w.count(Outcome::kRejected)),
      u(w.count(Outcome::kTimedOut)), w.max_queue_depth, w.mean_batch_size(), lat.p50_us / 1000.0,
      lat.p99_us / 1000.0, u(s.options_version), strategy_name(s.options.strategy),
      s.options.max_batch_size, static_cast<double>(s.options.max_wait_us) / 1000.0);
  if (s.options.strategy == StrategyKind::kAdaptive) {
    std::printf("       adaptive now applies: batch cap %zu, wait %.2f ms (target p99 %.2f ms)\n",
                s.limits.max_batch, to_ms(s.limits.max_wait), s.options.target_p99_ms);
  }
  if (d.retuned_wait_us) {
    std::printf("  -- retuned live: max_wait now %.2f ms; the next lines show its effect\n",
                static_cast<double>(*d.retuned_wait_us) / 1000.0);
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
  if (!parsed) return fail(parsed.error().message);
  const DemoRequest& cfg = *parsed;
  std::printf(
      "Batchscope demo: Poisson traffic at %.0f req/s into a synthetic model costing "
      "%.0f + %.0f*b us per batch\n  %s\n",
      cfg.rate, cfg.cost.fixed_us, cfg.cost.per_item_us, describe(cfg.options).c_str());
  std::printf(
      "  (an ideal batch of %u costs %.2f ms; one at a time the model saturates at %.0f req/s)\n",
      cfg.options.max_batch_size, cfg.cost.cost_us(cfg.options.max_batch_size) / 1000.0,
      1e6 / cfg.cost.cost_us(1));
  StopOnSignal stop;  // Ctrl-C ends the run, with its totals
  auto ran = run_demo_traffic(cfg, stop.flag(), print_second);
  if (!ran) return fail(ran.error().message, 1);
  const DemoTotals& t = *ran;
  const LatencySummary lat = summarize(t.window.total_ns);
  const EngineCounters& c = t.counters;
  std::printf(
      "\nTotal: %llu sent, %llu ok, %llu rejected, %llu timed out, %llu batches "
      "(mean size %.1f), latency p50 %.2f ms p90 %.2f ms p99 %.2f ms max %.2f ms\n",
      u(t.sent), u(c.ok), u(c.rejected), u(c.timed_out), u(c.batches), t.window.mean_batch_size(),
      lat.p50_us / 1000.0, lat.p90_us / 1000.0, lat.p99_us / 1000.0, lat.max_us / 1000.0);
  if (t.exactly_once) {
    std::printf("every admitted request answered exactly once (%llu admitted, %llu answered)\n",
                u(t.admitted), u(c.completed()));
    return 0;
  }
  std::printf("ERROR: %llu admitted but %llu answered\n", u(t.admitted), u(t.answered));
  return 1;
}

}  // namespace batchscope

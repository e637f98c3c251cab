// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "app/cli_args.h"
#include "app/model_flags.h"
#include "app/run_output.h"
#include "app/traffic_flags.h"
#include "model/tensor_tune.h"
#include "tuning/tune_text.h"
#ifdef BATCHSCOPE_WITH_QT
#include "export/export_config.h"
#endif

namespace batchscope {

std::string tune_help() {
  return "usage: batchscope tune [--model PATH | --synthetic A_US,C_US[,L_US]] --slo-p99-ms X\n"
         "                       [pattern options as in bench] [--objective throughput|latency]\n"
         "                       [--space TEXT] [--confirm K] [--budget-s S] [--cost FILE.json]\n"
         "                       [--recalibrate] [--calibration-seconds S]\n"
         "                       [--calibrate on|off] [--calibration-runs N] [--json FILE]\n"
         "                       [--export FORMAT --out PATH] [--history FILE | --no-history]\n"
         "                       [serving options]\n"
         "Finds the batching options that serve the traffic best within a p99 objective.\n"
         "Every configuration of the space is replayed on the predictor: the traffic run\n"
         "through the real strategies on a virtual clock against the model's cost curve\n"
         "t(b) as the lanes run it on this machine: the model's kept cost (made on first\n"
         "use, by the profile and a few seconds of live traffic per lane count of the\n"
         "space; refined by every live run of the model here, this tune's included), or\n"
         "--cost FILE (`batchscope profile --json`, `bench --cost-out`). Then, unless\n"
         "--calibrate off, the traffic runs live once per lane count of the space (fifo,\n"
         "the largest batch, a 2 ms wait), and each run refines t(b) for its lanes and\n"
         "the time requests spend outside their batches: the cost as the lanes see it\n"
         "under load, with the load generator and the engine's threads beside them.\n"
         "--calibration-runs N (1..9, default 1) runs it N times per lane count and\n"
         "refines with the run of the median level (its t(b) over the cost's), so that\n"
         "one run the machine slowed or sped does not set every prediction.\n"
         "It prints the Pareto\n"
         "front (throughput against p99 and losses) and the best configuration under the\n"
         "objective: the highest throughput with p99 <= X, throughputs within 1% of the best\n"
         "counting as equal and then the lowest p99 (throughput), or the lowest p99\n"
         "(latency); a configuration that rejects, times out or fails more than 0.1% of\n"
         "requests does not meet it. (A prediction stops at 5,000,000 requests.)\n"
         "Then the best K (default 3; 0: none) are confirmed live: the traffic is run\n"
         "against the in-process engine until three runs in a row agree within +-10%\n"
         "on throughput and p99 (at most 6 runs), and the winner is the best of them\n"
         "as measured.\n"
         "--space lists option=values entries separated by commas: a range LO..HI (powers\n"
         "of two for sizes, a 1-2-5 series for waits), LO..HI:STEP, a list a|b|c, or one\n"
         "value. Default (the batch sizes clipped to the model's maximum):\n  \"" +
         TuneSpace::default_text(0) +
         "\"\nAdaptive configurations target the SLO. --budget-s bounds the whole search\n"
         "and confirmation (default 600). --json writes the result (best with its\n"
         "options, predicted and measured figures; the Pareto front; how many were\n"
         "evaluated; the device and machine it was measured on); --export writes the\n"
         "winner in a production server's format (see batchscope export --help).\n"
         "Pattern options: --pattern, --rate, --duration, --seed, ... as in batchscope\n"
         "bench (default poisson at 1000 req/s for 10 s).\n"
         "A model whose inputs vary in length (a text model) gets requests of lengths drawn\n"
         "from --seq-len DIST (as bench's; default lognormal:32,1 up to its largest), and\n"
         "the default space also searches padding=longest|buckets|sorted and three bucket\n"
         "sets fitted to those lengths; predictions price each batch at its padded length\n"
         "by the cost's t(b, L) (batchscope profile measures it).\n"
         "The tune is kept in the run history (batchscope runs) with its result and, under\n"
         "it, every live run of its confirmations:\n" +
         history_flags_help() + "The cost (docs/tuning.md):\n" + cost_flags_help() +
         "Serving options (the base every configuration starts from):\n" + cli::options_help() +
         "\n" + gen_tune_help();
}

namespace {

const Fail fail{"tune"};

// What the command adds to the tune's request: where its result goes.
struct TuneArgs {
  TuneRequest tune;
  std::string json_out;
  std::string export_format;
  std::string export_out;
};

Expected<TuneArgs> parse_args(std::map<std::string, std::string> flags) {
  TuneArgs a;
  TuneRequest& t = a.tune;
  auto history = take_history_flags(flags);
  if (!history) return history.error();
  t.history = *history;
  auto options = cli::take_options(flags);
  if (!options) return options.error();
  t.base = *options;
  auto model = take_model_flags(flags, "models/mlp.pt");
  if (!model) return model.error();
  t.model = *model;
  t.traffic.pattern = Pattern::kPoisson;
  t.traffic.rate = 1000;
  t.traffic.duration_s = 10;
  const bool slo_given = flags.count("slo-p99-ms") > 0;
  std::string objective, seq_len, calibrate = "on";
  // --slo-p99-ms has target_p99_ms's range, as adaptive steers to it.
  if (Status s = cli::take_fields(
          flags, {cli::number("slo-p99-ms", 0.01, 600000, t.slo_p99_ms),
                  cli::text("objective", objective), cli::text("space", t.space_text),
                  cli::text("seq-len", seq_len), cli::number("confirm", 0, 100, t.confirm),
                  cli::number("budget-s", 1, 1e6, t.budget_s), cli::text("calibrate", calibrate),
                  cli::number("calibration-runs", 1, kMaxCalibrationRuns, t.calibration_runs),
                  cli::text("json", a.json_out), cli::text("export", a.export_format),
                  cli::text("out", a.export_out)});
      !s) {
    return s.error();
  }
  trace_sets_pattern(flags, t.traffic);
  for (auto& [name, value] : flags) {
    Status bad;
    if (!take_arrival_flag(name, value, t.traffic, bad) &&
        !take_cost_flag(name, value, t.cost, bad)) {
      bad = invalid_argument("unknown option --" + name + " (see batchscope tune --help)");
    }
    if (!bad) return bad.error();
  }
  if (!objective.empty()) {
    auto o = parse_objective(objective);
    if (!o) {
      return invalid_argument("--objective: expected throughput or latency, got '" + objective +
                              "'");
    }
    t.objective = *o;
  }
  if (!seq_len.empty()) {
    auto d = LengthDist::parse(seq_len, "--seq-len");
    if (!d) return d.error();
    t.seq_len = *d;
  }
  if (calibrate != "on" && calibrate != "off") {
    return invalid_argument("--calibrate: expected on or off, got '" + calibrate + "'");
  }
  t.calibrate = calibrate == "on";
  if (!slo_given) return invalid_argument("--slo-p99-ms is required: the p99 latency objective");
  if (Status s = t.traffic.validate(); !s) return s.error();
  if (t.traffic.pattern == Pattern::kClosed && t.traffic.max_requests == 0 &&
      t.traffic.duration_s <= 0) {
    return invalid_argument("--duration must be above 0");
  }
  if (!a.export_out.empty() && a.export_format.empty()) {
    return invalid_argument("--out needs --export FORMAT");
  }
  if (!a.export_format.empty()) {
#ifdef BATCHSCOPE_WITH_QT
    if (auto f = parse_export_format(a.export_format); !f) {
      return invalid_argument("--export: " + f.error().message);
    }
#else
    return invalid_argument("--export " + a.export_format +
                            ": this build has no Qt, which the exporters need; save --json "
                            "and run batchscope export where Qt is");
#endif
  }
  return a;
}

double loss_percent(const Evaluated& e) { return 100.0 * e.loss_rate(); }

// Prints the tune as it goes, and writes its result where the flags say.
class TunePrinter final : public TuneReport {
 public:
  explicit TunePrinter(const TuneArgs& a) : a_(a) {}
  const Say& say() const override { return say_; }
  void searched(const TuneResult& result, const SearchStats& s) override {
    std::printf(
        "evaluated %zu configurations (%s) in %.2f s: %.2f million simulated requests/s%s\n",
        result.evaluated.size(),
        result.method == TuneResult::Method::kExhaustive ? "every one" : "coarse, refined",
        s.seconds, s.seconds > 0 ? static_cast<double>(s.simulated) / s.seconds / 1e6 : 0.0,
        result.out_of_time ? "; stopped by --budget-s" : "");
    std::fputs(front_text(result, 20).c_str(), stdout);
    std::fflush(stdout);
  }
  void confirmed(const Confirmed& c) override {
    std::printf("  %s\n", describe_short(c.predicted.options).c_str());
    std::printf("    predicted %11.1f req/s  p50 %8.3f ms  p99 %8.3f ms  lost %.2f%%\n",
                c.predicted.throughput_rps, c.predicted.p50_ms, c.predicted.p99_ms,
                loss_percent(c.predicted));
    std::printf(
        "    measured  %11.1f req/s  p50 %8.3f ms  p99 %8.3f ms  lost %.2f%%  (%d runs, %s)\n",
        c.measured.throughput_rps, c.measured.p50_ms, c.measured.p99_ms, loss_percent(c.measured),
        c.runs, c.stable ? "stable" : "not stable within 6");
    std::fflush(stdout);
  }
  void finished(const TuneFinish& f) override {
    if (!f.winner) {
      save_export(a_.json_out, f.json, "JSON result");
      return;
    }
    const Evaluated& w = *f.winner;
    std::printf("\nbest: %s\n", describe(w.options).c_str());
    std::printf("  predicted %.1f req/s, p50 %.3f ms, p99 %.3f ms\n", w.throughput_rps, w.p50_ms,
                w.p99_ms);
    if (f.measured) {
      std::printf("  measured  %.1f req/s, p50 %.3f ms, p99 %.3f ms\n", f.measured->throughput_rps,
                  f.measured->p50_ms, f.measured->p99_ms);
    }
    if (!save_export(a_.json_out, f.json, "JSON result")) rc_ = 1;
#ifdef BATCHSCOPE_WITH_QT
    if (!a_.export_format.empty()) {
      ExportInput in;
      in.options = w.options;
      if (!a_.tune.model.synthetic) in.model = f.model;
      in.device = a_.tune.model.device;
      in.tuning.traffic = a_.tune.traffic.describe();
      const Evaluated& figures = f.measured ? *f.measured : w;
      in.tuning.measured = f.measured.has_value();
      in.tuning.p50_ms = figures.p50_ms;
      in.tuning.p99_ms = figures.p99_ms;
      in.tuning.throughput_rps = figures.throughput_rps;
      auto files = export_config(*parse_export_format(a_.export_format), in);
      if (!files) {
        rc_ = fail("--export: " + files.error().message, 1);
      } else if (write_export_files("tune", *files, a_.export_out) != 0) {
        rc_ = 1;
      }
    }
#endif
  }
  int rc() const { return rc_; }

 private:
  const TuneArgs& a_;
  Say say_ = terminal_say();
  int rc_ = 0;
};

}  // namespace

int run_tune(const std::vector<std::string>& args) {
  auto flags = cli::parse_flags(args, {"no-history", "recalibrate", "max-rate"});
  if (!flags) return fail(flags.error().message);
  if (wants_lm(*flags, "models/mlp.pt")) return run_gen_tune(std::move(*flags));
  if (flags->count("max-rate")) {
    return fail("--max-rate is a generative model's tune (--model LM.pt or --synthetic-lm S,T)");
  }
  auto parsed = parse_args(std::move(*flags));
  if (!parsed) return fail(parsed.error().message);
  TunePrinter printer(*parsed);
  if (auto e = tune_tensor(parsed->tune, printer)) return fail(e->message, e->refused ? 2 : 1);
  return printer.rc();
}

}  // namespace batchscope

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
#include "model/local_model.h"
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
         "                       [--recalibrate] [--calibration-seconds S] [--headroom X]\n"
         "                       [--calibrate on|off] [--calibration-runs N] [--json FILE]\n"
         "                       [--export FORMAT --out PATH] [--history FILE | --no-history]\n"
         "                       [serving options]\n"
         "Finds the batching options that serve the traffic best within a p99 objective\n"
         "(docs/tuning.md). Every configuration of the space is replayed on the predictor:\n"
         "the real strategies on a virtual clock against the model's t(b) as the lanes run\n"
         "it here, from its kept cost (made on first use; refined by every live run of the\n"
         "model) or --cost FILE (profile --json, bench --cost-out). Unless --calibrate off,\n"
         "the traffic first runs live once per lane count of the space (--calibration-runs\n"
         "N, 1..9: N times, refining by the median run), each run refining t(b) for its\n"
         "lanes under load.\n"
         "It prints the Pareto front (throughput against p99 and losses) and the best: the\n"
         "highest throughput with p99 <= X (throughput; within 1% counts as equal, then the\n"
         "lower p99) or the lowest p99 (latency), losing at most 0.1% of requests. The best\n"
         "K (--confirm, default 3; 0: none) are then run live until three runs in a row\n"
         "agree within +-10% (at most 6), and the winner is the best as measured by the\n"
         "median of the last 3 runs.\n"
         "Winners that hold: every prediction shown gets a band, made again with t(b) at the\n"
         "kept drift's p10 and p90 (how t(b) moved over the live runs that refined the kept\n"
         "cost; +-15% until three have), and the best few their headroom: the largest\n"
         "slowdown of t(b) and rise of the rate at which they still meet the objective. The\n"
         "choice is the best that still meets it with t(b) as slow as the drift's p90, or\n"
         "--headroom X (0.2: 20% slower); where none does, the one with the most headroom,\n"
         "marked fragile. Confirmation runs the chosen first, then the others that hold.\n"
         "--space lists option=values entries, comma-separated: LO..HI (powers of two for\n"
         "sizes, 1-2-5 for waits), LO..HI:STEP, a|b|c, or one value. Default (sizes clipped\n"
         "to the model's maximum):\n  \"" +
         TuneSpace::default_text(0) +
         "\"\nAdaptive configurations target the SLO. --budget-s bounds the search and the\n"
         "confirmations (default 600). --json writes the result; --export writes the winner\n"
         "in a production server's format (batchscope export --help).\n"
         "Pattern options as in bench: --pattern, --rate, --duration, --seed, ... (default\n"
         "poisson at 1000 req/s for 10 s). A model whose inputs vary in length gets --seq-len\n"
         "DIST as bench's, and the default space also\n"
         "searches padding=longest|buckets|sorted with bucket sets fitted to the lengths;\n"
         "a Python model with preprocess, preprocess_workers=0..(cores).\n"
         "The tune is kept in the run history with its confirmations' runs under it:\n" +
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
          flags,
          {cli::number("slo-p99-ms", 0.01, 600000, t.slo_p99_ms), cli::text("objective", objective),
           cli::text("space", t.space_text), cli::text("seq-len", seq_len),
           cli::number("confirm", 0, 100, t.confirm), cli::number("budget-s", 1, 1e6, t.budget_s),
           cli::text("calibrate", calibrate), cli::number("headroom", 0, 3, t.headroom),
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
  void ranked(const HeadroomResult& h) override {
    std::fputs(headroom_table(h, a_.tune.slo_p99_ms).c_str(), stdout);
    std::fflush(stdout);
  }
  void confirmed(const Confirmed& c) override {
    std::printf("  %s\n", describe_short(c.predicted.options).c_str());
    std::printf("    predicted %11.1f req/s  p50 %8.3f ms  p99 %8.3f ms  lost %.2f%%",
                c.predicted.throughput_rps, c.predicted.p50_ms, c.predicted.p99_ms,
                loss_percent(c.predicted));
    if (const auto& b = c.predicted.band) {
      std::printf("  (band: p50 %.3f..%.3f, p99 %.3f..%.3f)", b->p50_ms.low, b->p50_ms.high,
                  b->p99_ms.low, b->p99_ms.high);
    }
    std::printf(
        "\n    measured  %11.1f req/s  p50 %8.3f ms  p99 %8.3f ms  lost %.2f%%  (median of the "
        "last %d of %d runs, p99 %.3f..%.3f; %s)\n",
        c.measured.throughput_rps, c.measured.p50_ms, c.measured.p99_ms, loss_percent(c.measured),
        std::min(c.runs, 3), c.runs, c.p99_runs.low, c.p99_runs.high,
        c.stable ? "stable" : "not stable within 6");
    if (c.inside_band) {
      std::printf("    %s\n",
                  *c.inside_band ? "inside the predicted band" : "outside the predicted band");
    }
    std::fflush(stdout);
  }
  void finished(const TuneFinish& f) override {
    if (!f.winner) {
      save_export(a_.json_out, f.json, "JSON result");
      return;
    }
    const Evaluated& w = *f.winner;
    std::printf("\nbest: %s\n", describe(w.options).c_str());
    std::printf("  predicted %.1f req/s, p50 %.3f ms, p99 %.3f ms", w.throughput_rps, w.p50_ms,
                w.p99_ms);
    if (w.band) std::printf(" (band %.3f..%.3f ms)", w.band->p99_ms.low, w.band->p99_ms.high);
    std::printf("\n");
    if (w.headroom) {
      std::printf("  %s%s\n", headroom_text(*w.headroom).c_str(),
                  f.fragile ? ": fragile, it lacks the headroom asked for" : "");
    }
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
      const ModelChoice& m = a_.tune.model;
      Status handler = python_handler(in, m);
      auto files = handler ? export_config(*parse_export_format(a_.export_format), in)
                           : Expected<std::vector<ExportFile>>(handler.error());
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
#ifdef BATCHSCOPE_WITH_QT
  // A Python model's handler for its wrappers, with what its predict takes
  // and gives, which the tune's result does not carry: the model is opened
  // again, which reuses the description the tune's own opening kept.
  static Status python_handler(ExportInput& in, const ModelChoice& m) {
    if (!in.model || in.model->platform != "python") return {};
    auto opened = LocalModel::open(m);
    if (!opened) return opened.error();
    return add_python_handler(in, m.path, opened->lane_metadata(), m.python.class_name,
                              m.python.options);
  }
#endif

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

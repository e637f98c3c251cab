// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/tune_cmd.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "app/cli_args.h"
#include "app/cost_setup.h"
#include "app/gen_tune.h"
#include "app/history_setup.h"
#include "app/kept_tune.h"
#include "app/lm_setup.h"
#include "app/run_output.h"
#include "app/traffic_flags.h"
#include "tuning/adaptive_planner.h"
#ifdef BATCHSCOPE_WITH_QT
#include "app/export_cmd.h"
#endif
#include "app/model_setup.h"
#include "common/text_out.h"
#include "runs/machine_facts.h"
#include "traffic/varied_inputs.h"
#include "tuning/tune_run.h"
#include "tuning/tuner.h"

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

int fail(const std::string& message, int code = 2) {
  std::cerr << "batchscope tune: " << message << "\n";
  return code;
}

using Seconds = std::chrono::duration<double>;

struct TuneArgs {
  ModelChoice model;
  Options base;
  ArrivalSpec traffic;
  double slo_p99_ms = 0;
  TuneObjective objective = TuneObjective::kThroughput;
  std::string space_text;
  int confirm = 3;
  double budget_s = 600;
  CostChoice cost;
  std::string json_out;
  std::string export_format;
  std::string export_out;
  bool calibrate = true;
  int calibration_runs = 1;
  HistoryChoice history;
  // A model whose inputs vary in length: --seq-len, and what it gives: the
  // inputs sent live and each request's length for the predictor.
  std::optional<LengthDist> seq_len;
  std::vector<Tensors> inputs;
  std::vector<uint32_t> lengths;
};

Expected<TuneArgs> parse_args(const std::vector<std::string>& args) {
  auto flags = cli::parse_flags(args, {"no-history", "recalibrate"});
  if (!flags) return flags.error();
  TuneArgs t;
  auto history = take_history_flags(*flags);
  if (!history) return history.error();
  t.history = *history;
  auto options = cli::take_options(*flags);
  if (!options) return options.error();
  t.base = *options;
  auto model = take_model_flags(*flags, "models/mlp.pt");
  if (!model) return model.error();
  t.model = *model;
  t.traffic.pattern = Pattern::kPoisson;
  t.traffic.rate = 1000;
  t.traffic.duration_s = 10;
  bool slo_given = false;
  trace_sets_pattern(*flags, t.traffic);
  for (auto& [name, value] : *flags) {
    Status bad;
    auto number = [&](double lo, double hi, auto& field) {
      bad = cli::read_number(name, value, lo, hi, field);
    };
    if (take_arrival_flag(name, value, t.traffic, bad) ||
        take_cost_flag(name, value, t.cost, bad)) {
    } else if (name == "slo-p99-ms") {
      number(0.01, 600000, t.slo_p99_ms);  // target_p99_ms's range, as adaptive steers to it
      slo_given = true;
    } else if (name == "objective") {
      auto o = parse_objective(value);
      if (!o)
        bad = invalid_argument("--objective: expected throughput or latency, got '" + value + "'");
      else
        t.objective = *o;
    } else if (name == "space") {
      t.space_text = value;
    } else if (name == "seq-len") {
      auto d = LengthDist::parse(value, "--seq-len");
      if (!d)
        bad = d.error();
      else
        t.seq_len = *d;
    } else if (name == "confirm") {
      number(0, 100, t.confirm);
    } else if (name == "budget-s") {
      number(1, 1e6, t.budget_s);
    } else if (name == "calibrate") {
      if (value != "on" && value != "off") {
        bad = invalid_argument("--calibrate: expected on or off, got '" + value + "'");
      }
      t.calibrate = value == "on";
    } else if (name == "calibration-runs") {
      number(1, kMaxCalibrationRuns, t.calibration_runs);
    } else if (name == "json") {
      t.json_out = value;
    } else if (name == "export") {
      t.export_format = value;
    } else if (name == "out") {
      t.export_out = value;
    } else {
      bad = invalid_argument("unknown option --" + name + " (see batchscope tune --help)");
    }
    if (!bad) return bad.error();
  }
  if (!slo_given) return invalid_argument("--slo-p99-ms is required: the p99 latency objective");
  if (Status s = t.traffic.validate(); !s) return s.error();
  if (t.traffic.pattern == Pattern::kClosed && t.traffic.max_requests == 0 &&
      t.traffic.duration_s <= 0) {
    return invalid_argument("--duration must be above 0");
  }
  if (!t.export_out.empty() && t.export_format.empty()) {
    return invalid_argument("--out needs --export FORMAT");
  }
  if (!t.export_format.empty()) {
#ifdef BATCHSCOPE_WITH_QT
    if (auto f = parse_export_format(t.export_format); !f) {
      return invalid_argument("--export: " + f.error().message);
    }
#else
    return invalid_argument("--export " + t.export_format +
                            ": this build has no Qt, which the exporters need; save --json "
                            "and run batchscope export where Qt is");
#endif
  }
  return t;
}

std::string wait_text(const Options& o) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(o.max_wait_us) / 1000.0);
  return buf;
}

double loss_percent(const Evaluated& e) { return 100.0 * e.loss_rate(); }

void print_row(const char* mark, const Evaluated& e, size_t alike) {
  std::printf("%2s %-9s %6u %8s %6u %11.1f %9.3f %9.3f %7.2f%%", mark,
              strategy_name(e.options.strategy), e.options.max_batch_size,
              wait_text(e.options).c_str(), e.options.num_lanes, e.throughput_rps, e.p50_ms,
              e.p99_ms, loss_percent(e));
  if (e.options.padding != Padding::kLongest) {
    std::printf("  %s", padding_name(e.options.padding));
    if (e.options.padding == Padding::kBuckets) {
      std::printf(" %s", length_buckets_text(e.options).c_str());
    }
  }
  if (alike > 0) std::printf("  (+%zu alike)", alike);
  std::printf("\n");
}

void print_header() {
  std::printf("%2s %-9s %6s %8s %6s %11s %9s %9s %8s\n", "", "strategy", "batch", "wait ms",
              "lanes", "req/s", "p50 ms", "p99 ms", "lost");
}

// The Pareto front, at most `rows` of it spread evenly, with the best marked.
// Points with the same figures show once, as the cheapest of them.
void print_front(const TuneResult& r, size_t rows) {
  const std::vector<FrontPoint> distinct = distinct_front(r.pareto);
  std::printf(
      "\nPareto front (predicted; throughput against p99 and losses): %zu points, %zu "
      "distinct\n",
      r.pareto.size(), distinct.size());
  print_header();
  const size_t n = distinct.size();
  const size_t step = n > rows ? (n + rows - 1) / rows : 1;
  bool best_shown = false;
  for (size_t i = 0; i < n; i += step) {
    const Evaluated& e = r.pareto[distinct[i].index];
    const bool best = r.best && e.options == r.best->options;
    best_shown |= best;
    print_row(best ? "*" : "", e, distinct[i].alike);
  }
  if (r.best && !best_shown) print_row("*", *r.best, 0);
}

// Runs the traffic live against the prediction's options until the stability
// rule holds, an adaptive configuration planning on `cost` as its prediction
// did; nullopt when the budget ran out first.
Expected<std::optional<Confirmed>> confirm_one(const TuneArgs& t, const Evaluated& predicted,
                                               std::chrono::steady_clock::time_point deadline,
                                               const CostModel& cost) {
  auto model = make_model(t.model, predicted.options);
  if (!model) return model.error();
  ConfirmSpec spec;
  spec.factory = model->factory;
  spec.metadata = model->metadata;
  spec.traffic = t.traffic;
  spec.deadline = deadline;
  spec.planner = plan_on_cost(cost);
  spec.inputs = t.inputs;
  return confirm_live(spec, predicted);
}

std::string describe_short(const Options& o) {
  std::string out = std::string(strategy_name(o.strategy)) +
                    " max_batch_size=" + std::to_string(o.max_batch_size) +
                    " max_wait_ms=" + wait_text(o) + " num_lanes=" + std::to_string(o.num_lanes);
  if (o.padding != Padding::kLongest) out += std::string(" padding=") + padding_name(o.padding);
  if (o.padding == Padding::kBuckets) out += " length_buckets=" + length_buckets_text(o);
  return out;
}

void print_confirmed(const Confirmed& c) {
  std::printf("  %s\n", describe_short(c.predicted.options).c_str());
  std::printf("    predicted %11.1f req/s  p50 %8.3f ms  p99 %8.3f ms  lost %.2f%%\n",
              c.predicted.throughput_rps, c.predicted.p50_ms, c.predicted.p99_ms,
              loss_percent(c.predicted));
  std::printf(
      "    measured  %11.1f req/s  p50 %8.3f ms  p99 %8.3f ms  lost %.2f%%  (%d runs, %s)\n",
      c.measured.throughput_rps, c.measured.p50_ms, c.measured.p99_ms, loss_percent(c.measured),
      c.runs, c.stable ? "stable" : "not stable within 6");
}

// t(b) as the lanes see it under load (calibrate_live per lane count of the
// space). Prints how far each size seen moved, and each run's level when
// there were several.
Expected<CostModel> calibrate_under_load(const TuneArgs& t, const CostModel& cost,
                                         const TuneSpace& space, uint32_t max_batch,
                                         std::vector<std::shared_ptr<const RunData>>& kept) {
  std::printf(
      "calibrating t(b) under the traffic (fifo, max_batch_size %u, max_wait 2 ms), %d live "
      "run%s per lane count:\n",
      max_batch, t.calibration_runs, t.calibration_runs > 1 ? "s" : "");
  std::fflush(stdout);
  CostModel m = cost;
  for (uint32_t lanes : lane_counts(space, t.base)) {
    const Options o = calibration_options(t.base, max_batch, lanes);
    auto model = make_model(t.model, o);
    if (!model) return model.error();
    ConfirmSpec spec;
    spec.factory = model->factory;
    spec.metadata = model->metadata;
    spec.traffic = t.traffic;
    // At the reference length: the grid prices the lengths.
    auto run = calibrate_live(spec, o, m, t.calibration_runs);
    if (!run) return run.error();
    kept.insert(kept.end(), run->live_runs.begin(), run->live_runs.end());
    // Each calibration run is a live run of the model here: the kept cost learns from it.
    for (const auto& seen : run->seen) {
      if (seen) refine_cost_cache(t.model, *seen, lanes, "tune", false);
    }
    if (run->levels.size() > 1) {
      std::printf("  %u lane(s): t(b) over the cost's, run by run:", lanes);
      for (size_t i = 0; i < run->levels.size(); ++i) {
        std::printf(" %.2f%s", run->levels[i], i == run->chosen ? " (median, used)" : "");
      }
      std::printf("\n");
    }
    std::printf("  %u lane(s): %zu batches, p50 %.3f ms, p99 %.3f ms", lanes, run->batches,
                run->p50_ms, run->p99_ms);
    if (!run->observed()) {
      std::printf("; no size ran 5 times, so nothing to refine\n");
      continue;
    }
    const CostModel& seen = *run->observed();
    const std::vector<double>& over = seen.overheads_us();
    std::printf("; overhead p50 %.0f us, p99 %.0f us\n", CostModel::quantile_of(over, 0.5),
                CostModel::quantile_of(over, 0.99));
    const std::vector<double>& moved = run->moved;
    if (!moved.empty()) {
      std::printf(
          "    t(b) at %zu sizes (b = %u..%u) moved by %+.0f%% (median; %+.0f%% to %+.0f%%)\n",
          seen.points().size(), seen.points().front().batch, seen.points().back().batch,
          100 * moved[moved.size() / 2], 100 * moved.front(), 100 * moved.back());
    }
    std::fflush(stdout);
  }
  return m;
}

// Re-predicts the confirmed configurations, and the whole space, with the
// cost model calibrated by what the live runs saw, and prints how far each
// prediction moved. A new best prediction that was not confirmed is
// confirmed too while the budget lasts; the winner is still chosen as
// measured.
void recalibrate(const TuneArgs& t, const CostModel& cost, const TuneSpace& space,
                 TuneSettings settings, std::chrono::steady_clock::time_point deadline,
                 std::vector<Confirmed>& confirmed) {
  if (std::none_of(confirmed.begin(), confirmed.end(),
                   [](const Confirmed& c) { return c.observed; }))
    return;
  const CostModel refined = calibrate(cost, confirmed);
  const Evaluator predict_one = prediction_evaluator(t.traffic, refined, nullptr, true, t.lengths);
  std::printf("\nre-predicted with t(b) as the live runs ran it (%s):\n",
              refined.describe().c_str());
  for (Confirmed& c : confirmed) {
    c.recalibrated = predict_one(c.predicted.options);
    std::printf("  %s: p50 %.3f -> %.3f ms, p99 %.3f -> %.3f ms (measured %.3f, %.3f)\n",
                describe_short(c.predicted.options).c_str(), c.predicted.p50_ms,
                c.recalibrated->p50_ms, c.predicted.p99_ms, c.recalibrated->p99_ms,
                c.measured.p50_ms, c.measured.p99_ms);
  }
  const double left = Seconds(deadline - std::chrono::steady_clock::now()).count();
  settings.max_seconds = std::min(settings.max_seconds, std::max(left / 2, 0.0));
  TuneResult again = search(space, t.base, settings, predict_one);
  if (!again.best) {
    std::printf("  re-predicted, no configuration meets the objective\n");
    return;
  }
  const Options& best = again.best->options;
  const bool seen = std::any_of(confirmed.begin(), confirmed.end(),
                                [&](const Confirmed& c) { return c.predicted.options == best; });
  std::printf("  best re-predicted: %s%s\n", describe_short(best).c_str(),
              seen ? " (confirmed above)" : "; confirming it live:");
  if (seen) return;
  auto c = confirm_one(t, *again.best, deadline, refined);
  if (!c || !*c) {
    std::printf("  not confirmed: %s\n", c ? "--budget-s ran out" : c.error().message.c_str());
    return;
  }
  (*c)->recalibrated = (*c)->predicted;
  print_confirmed(**c);
  confirmed.push_back(std::move(**c));
}

// Keeps the tune in the run history (app/kept_tune.h): the calibrations'
// live runs, then the confirmations'.
void keep_tune(const TuneArgs& t, const std::string& model_name, const Options& winner,
               const std::string& result_json, const std::vector<Confirmed>& confirmed,
               const std::vector<std::shared_ptr<const RunData>>& calibration) {
  RunConfig config;
  config.pattern = t.traffic.describe();
  config.target = "predict";
  config.model = model_name;
  config.options = winner;
  config.duration_s = t.traffic.duration_s;
  config.seed = t.traffic.seed;
  char slo[64];
  std::snprintf(slo, sizeof slo, " within p99 %g ms, %s", t.slo_p99_ms,
                objective_name(t.objective));
  TimePoint start = SteadyClock().now();
  for (const auto& run : calibration) start = std::min(start, run->start);
  for (const Confirmed& c : confirmed) {
    for (const auto& run : c.live_runs) start = std::min(start, run->start);
  }
  KeptTune kept(t.history, "tune: " + t.traffic.describe() + slo, std::move(config),
                run_context_json(t.model.synthetic ? "" : t.model.path, t.model.device), start,
                result_json);
  for (size_t i = 0; i < calibration.size(); ++i) {
    const RunData& run = *calibration[i];
    kept.keep(run, "calibration, " + describe_short(run.config.options) + ", run " +
                       std::to_string(i + 1) + " of " + std::to_string(calibration.size()));
  }
  for (const Confirmed& c : confirmed) {
    for (size_t i = 0; i < c.live_runs.size(); ++i) {
      kept.keep(*c.live_runs[i], "confirming " + describe_short(c.predicted.options) + ", run " +
                                     std::to_string(i + 1) + " of " +
                                     std::to_string(c.live_runs.size()));
    }
  }
  kept.report();
}

}  // namespace

int run_tune(const std::vector<std::string>& args) {
  auto flags = cli::parse_flags(args, {"no-history", "recalibrate", "max-rate"});
  if (!flags) return fail(flags.error().message);
  if (wants_lm(*flags, "models/mlp.pt")) return run_gen_tune(std::move(*flags));
  if (flags->count("max-rate")) {
    return fail("--max-rate is a generative model's tune (--model LM.pt or --synthetic-lm S,T)");
  }
  auto parsed = parse_args(args);
  if (!parsed) return fail(parsed.error().message);
  TuneArgs& t = *parsed;
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      Seconds(t.budget_s));

  auto meta = make_model(t.model, t.base, /*load=*/false);
  if (!meta) return fail(meta.error().message, 1);
  const bool varies = has_variable_inputs(meta->metadata);
  if (t.seq_len && !varies) {
    return fail("--seq-len " + t.seq_len->describe() + ": model '" + meta->metadata.name +
                "' has no input that varies in length");
  }
  const LengthDist lengths = t.seq_len.value_or(default_lengths(meta->metadata));
  // The requests bench would send, and their lengths for the predictor; the
  // padding policies and bucket sets fitted to them are searched too.
  TuneRequests requests = tune_requests(meta->metadata, t.seq_len, t.traffic.seed);
  t.inputs = std::move(requests.inputs);
  t.lengths = std::move(requests.lengths);
  const uint32_t model_max = meta->metadata.max_batch_size;
  auto space = TuneSpace::parse(t.space_text.empty() ? model_space_text(meta->metadata, t.lengths)
                                                     : t.space_text);
  if (!space) return fail("--space: " + space.error().message);
  const uint32_t max_batch = std::min(largest_batch(*space, t.base), model_max);
  if (largest_batch(*space, t.base) > model_max) {
    return fail("--space: max_batch_size goes up to " +
                std::to_string(largest_batch(*space, t.base)) + ", above the model's maximum " +
                std::to_string(model_max));
  }
  auto kept =
      prediction_cost(t.model, t.base, lane_counts(*space, t.base), max_batch, t.cost, "tune");
  if (!kept) return fail(kept.error().message, 1);
  Expected<CostModel> cost = kept->cost;
  std::printf("tune: %s, p99 <= %g ms, objective %s\n", t.traffic.describe().c_str(), t.slo_p99_ms,
              objective_name(t.objective));
  std::printf("cost: %s\n", kept->source.c_str());
  std::vector<std::shared_ptr<const RunData>> calibration;  // kept under the tune
  if (t.calibrate) {
    cost = calibrate_under_load(t, *cost, *space, max_batch, calibration);
    if (!cost) return fail("calibrating: " + cost.error().message, 1);
    std::printf("\n");
  }
  std::printf("model %s: %s\n", meta->metadata.name.c_str(), cost->describe().c_str());
  if (varies) {
    std::printf("lengths: %s%s\n", lengths.describe().c_str(),
                cost->length_grid().empty()
                    ? "; the cost has no t(b, L), so every batch is priced at one length"
                    : "; batches priced at their padded length by t(b, L)");
  }
  std::printf("space: %s (%llu configurations)\n", space->text().c_str(),
              static_cast<unsigned long long>(space->size()));
  std::fflush(stdout);

  uint64_t simulated = 0;
  TuneSettings settings;
  settings.slo_p99_ms = t.slo_p99_ms;
  settings.objective = t.objective;
  settings.max_seconds = t.budget_s / 2;  // the rest is for confirming
  const Evaluator predict_one = prediction_evaluator(t.traffic, *cost, &simulated, true, t.lengths);
  const auto search_start = std::chrono::steady_clock::now();
  TuneResult result = search(*space, t.base, settings, predict_one);
  const double search_s = Seconds(std::chrono::steady_clock::now() - search_start).count();
  std::printf("evaluated %zu configurations (%s) in %.2f s: %.2f million simulated requests/s%s\n",
              result.evaluated.size(),
              result.method == TuneResult::Method::kExhaustive ? "every one" : "coarse, refined",
              search_s, search_s > 0 ? static_cast<double>(simulated) / search_s / 1e6 : 0.0,
              result.out_of_time ? "; stopped by --budget-s" : "");
  print_front(result, 20);
  // What every JSON result says besides the search: the traffic and the cost.
  TuneJsonExtra extra;
  {
    std::string cost_json;
    append_json_string(cost_json, cost->describe());
    extra.members.emplace_back("cost_model", cost_json);
    std::string traffic_json;
    append_json_string(traffic_json, t.traffic.describe());
    extra.members.emplace_back("traffic", traffic_json);
  }
  if (!result.best) {
    save_export(t.json_out, with_measured_on(tune_json(result, extra), t.model.device),
                "JSON result");
    return fail(result.best.error().message, 1);
  }
  std::printf("\nbest predicted: %s\n", describe(result.best->options).c_str());

  std::vector<Confirmed> confirmed;
  if (t.confirm > 0) {
    std::printf(
        "\nconfirming live (the same traffic, in-process, until 3 runs agree within "
        "+-10%%, at most 6):\n");
    std::fflush(stdout);
    for (const Evaluated& e : tune_candidates(result, t.confirm)) {
      auto c = confirm_one(t, e, deadline, *cost);
      if (!c) {
        save_export(t.json_out, with_measured_on(tune_json(result, extra), t.model.device),
                    "JSON result");
        return fail("confirming " + describe_short(e.options) + ": " + c.error().message, 1);
      }
      if (!*c) {
        std::printf("  %s: not confirmed, --budget-s ran out\n", describe_short(e.options).c_str());
        break;
      }
      print_confirmed(**c);
      confirmed.push_back(**c);
      std::fflush(stdout);
    }
  }

  recalibrate(t, *cost, *space, settings, deadline, confirmed);
  // Every confirmation's live runs refine the kept cost for their lanes.
  uint64_t refined = 0;
  for (const Confirmed& c : confirmed) {
    for (const auto& run : c.live_runs) {
      if (auto r = refine_cost_cache(t.model, *run, c.predicted.options.num_lanes, "tune", false)) {
        refined += r->batches;
      }
    }
  }
  if (refined > 0) {
    std::printf("  the kept cost was refined by the confirmations' %llu batches\n",
                static_cast<unsigned long long>(refined));
  }

  Evaluated winner = *result.best;
  std::optional<Evaluated> measured;
  if (!confirmed.empty()) {
    auto best_live = best_measured(confirmed, t.slo_p99_ms, t.objective);
    if (!best_live) {
      // No best: what export and serve read from the JSON must not be a
      // configuration that missed live.
      result.best = Error{best_live.error().code, best_live.error().message};
      extra.members.emplace_back("confirmed", confirmed_json(confirmed));
      save_export(t.json_out, with_measured_on(tune_json(result, extra), t.model.device),
                  "JSON result");
      return fail(result.best.error().message, 1);
    }
    winner = confirmed[*best_live].predicted;
    measured = confirmed[*best_live].measured;
    result.best = winner;
  }
  std::printf("\nbest: %s\n", describe(winner.options).c_str());
  std::printf("  predicted %.1f req/s, p50 %.3f ms, p99 %.3f ms\n", winner.throughput_rps,
              winner.p50_ms, winner.p99_ms);
  if (measured) {
    std::printf("  measured  %.1f req/s, p50 %.3f ms, p99 %.3f ms\n", measured->throughput_rps,
                measured->p50_ms, measured->p99_ms);
  }

  extra.measured = measured;
  extra.members.emplace_back("confirmed", confirmed_json(confirmed));
  const std::string result_json = with_measured_on(tune_json(result, extra), t.model.device);
  int rc = save_export(t.json_out, result_json, "JSON result") ? 0 : 1;
  keep_tune(t, meta->metadata.name, winner.options, result_json, confirmed, calibration);

#ifdef BATCHSCOPE_WITH_QT
  if (!t.export_format.empty()) {
    ExportInput in;
    in.options = winner.options;
    if (!t.model.synthetic) in.model = meta->metadata;
    in.device = t.model.device;
    in.tuning.traffic = t.traffic.describe();
    const Evaluated& figures = measured ? *measured : winner;
    in.tuning.measured = measured.has_value();
    in.tuning.p50_ms = figures.p50_ms;
    in.tuning.p99_ms = figures.p99_ms;
    in.tuning.throughput_rps = figures.throughput_rps;
    auto files = export_config(*parse_export_format(t.export_format), in);
    if (!files) return fail("--export: " + files.error().message, 1);
    if (write_export_files("tune", *files, t.export_out) != 0) rc = 1;
  }
#endif
  return rc;
}

}  // namespace batchscope

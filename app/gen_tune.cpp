// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/gen_tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include "app/cli_args.h"
#include "app/gen_predict.h"
#include "app/history_setup.h"
#include "app/kept_tune.h"
#include "app/lm_setup.h"
#include "app/run_output.h"
#include "app/traffic_flags.h"
#include "common/text_out.h"
#include "generation/gen_engine.h"
#include "runs/machine_facts.h"
#include "traffic/llm_trace.h"
#include "tuning/gen_predictor.h"
#include "tuning/gen_tune.h"
#include "tuning/tune_run.h"

namespace batchscope {

std::string gen_tune_help() {
  return "For a generative model (--model models/tiny_lm.pt, or --synthetic-lm S,T):\n"
         "usage: batchscope tune --model LM.pt (--slo-ttft-ms X | --slo-itl-ms Y | both)\n"
         "                       [--slo-quantile p50|p90|p99] [--objective "
         "goodput|throughput|latency]\n"
         "                       [pattern and length options as in bench] [--space TEXT]\n"
         "                       [--max-rate] [--confirm K] [--confirm-runs N] [--budget-s S]\n"
         "                       [--cost FILE.json | --calibration-seconds S] [--recalibrate]\n"
         "                       [--json FILE]\n"
         "                       [--history FILE | --no-history] [serving options]\n"
         "Every configuration of the space is run on the step predictor (the real planner,\n"
         "scheduler and paged cache on a virtual clock), priced by --synthetic-lm's own\n"
         "cost, --cost FILE (bench --cost-out), or the model's step cost kept on this\n"
         "machine (made on first use by --calibration-seconds, default 6, of the traffic\n"
         "live; --recalibrate makes it anew; refined by every in-process run of the\n"
         "model, this tune's confirmations included). A configuration meets the objective when its "
         "TTFT and\n"
         "ITL at the quantile (default p99) are within the bounds and it lost at most 0.1%\n"
         "of its requests; among those the best has the most goodput (requests/s with\n"
         "their own TTFT and mean gap within the bounds), the most output tokens/s\n"
         "(throughput), or the lowest TTFT (latency). Rates within 1% are equal, and the\n"
         "lower TTFT, then the cheaper configuration, wins. It prints the Pareto front\n"
         "(goodput against TTFT and ITL) and confirms the best K (default 2; 0: none) live\n"
         "in process, each run --confirm-runs times (default 3) on the same traffic; the\n"
         "winner is the best of them by the medians measured.\n"
         "--max-rate first finds, by doubling then bisection on the predictor, the\n"
         "largest factor on the traffic's rates at which some configuration still meets\n"
         "the objective (within 2%), then tunes and confirms there: capacity planning.\n"
         "--budget-s (default 600) bounds the whole tune: the probes and the search each\n"
         "take at most half of what is left, the confirmations the rest.\n"
         "Default space: \"" +
         default_gen_space_text() +
         "\"\n(continuous configurations that differ only in max_wait are one), at --lanes\n"
         "(default 1); add lanes=1|2 to search the lanes too (each a copy of the model;\n"
         "a fit is measured live at each count the kept cost has none for).\n"
         "--json writes the result (kind \"generation\"; best with its options, predicted\n"
         "and measured figures; the Pareto front; every confirmation's runs; the device\n"
         "and machine it was measured on); batchscope export --config FILE.json --model\n"
         "LM.pt --format vllm|tgi|trtllm reads it.\n"
         "The tune is kept in the run history with each confirmation run under it.\n";
}

namespace {

int fail(const std::string& message, int code = 2) {
  std::cerr << "batchscope tune: " << message << "\n";
  return code;
}

using Seconds = std::chrono::duration<double>;
using SteadyTime = std::chrono::steady_clock::time_point;

// Seconds from now to halfway to `deadline` (at least a millisecond): what
// a phase may take when the rest must be left for the phases after it.
double half_of_what_is_left(SteadyTime deadline) {
  const double left = Seconds(deadline - std::chrono::steady_clock::now()).count();
  return std::max(left / 2, 0.001);
}

struct GenTuneArgs {
  LmChoice model;
  Options base;
  ArrivalSpec traffic;
  GenLengthFlags lengths;
  GenSlo slo;
  GenObjective objective = GenObjective::kGoodput;
  std::string space_text;
  bool max_rate = false;
  int confirm = 2;
  int confirm_runs = 3;
  double budget_s = 600;
  GenCostChoice cost;
  std::string json_out;
  HistoryChoice history;
};

Expected<GenTuneArgs> parse_args(std::map<std::string, std::string> flags) {
  GenTuneArgs t;
  auto history = take_history_flags(flags);
  if (!history) return history.error();
  t.history = *history;
  auto options = cli::take_options(flags);
  if (!options) return options.error();
  t.base = *options;
  auto choice = take_lm_flags(flags, "models/tiny_lm.pt");
  if (!choice) return choice.error();
  t.model = *choice;
  t.traffic.pattern = Pattern::kPoisson;
  t.traffic.rate = 20;
  t.traffic.duration_s = 10;
  trace_sets_pattern(flags, t.traffic);
  for (auto& [name, value] : flags) {
    Status bad;
    auto number = [&](double lo, double hi, auto& field) {
      bad = cli::read_number(name, value, lo, hi, field);
    };
    auto whole = [&](double lo, double hi, int& field) {
      auto v = cli::parse_number(name, value, lo, hi);
      if (!v) {
        bad = v.error();
      } else if (*v != std::floor(*v)) {
        bad = invalid_argument("--" + name + " must be a whole number, got '" + value + "'");
      } else {
        field = static_cast<int>(*v);
      }
    };
    if (take_gen_length_flag(name, value, t.lengths, t.traffic, bad) ||
        take_arrival_flag(name, value, t.traffic, bad)) {
    } else if (name == "slo-ttft-ms") {
      number(0.001, 1e7, t.slo.ttft_ms);
    } else if (name == "slo-itl-ms") {
      number(0.001, 1e7, t.slo.itl_ms);
    } else if (name == "slo-quantile") {
      const std::string q = value.size() > 1 && value[0] == 'p' ? value.substr(1) : value;
      if (q == "50" || q == "90" || q == "99") {
        t.slo.quantile = std::stoi(q);
      } else {
        bad = invalid_argument("--slo-quantile: expected p50, p90 or p99, got '" + value + "'");
      }
    } else if (name == "objective") {
      auto o = parse_gen_objective(value);
      if (!o) {
        bad = invalid_argument(
            "--objective: expected goodput, throughput or latency for a "
            "generative model, got '" +
            value + "'");
      } else {
        t.objective = *o;
      }
    } else if (name == "space") {
      t.space_text = value;
    } else if (name == "max-rate") {
      t.max_rate = true;
    } else if (name == "confirm") {
      whole(0, 20, t.confirm);
    } else if (name == "confirm-runs") {
      whole(1, 9, t.confirm_runs);
    } else if (name == "budget-s") {
      number(1, 1e6, t.budget_s);
    } else if (name == "cost") {
      t.cost.file = value;
    } else if (name == "recalibrate") {
      t.cost.recalibrate = true;
    } else if (name == "calibration-seconds") {
      number(0.5, 600, t.cost.calibration_s);
    } else if (name == "json") {
      t.json_out = value;
    } else if (name == "slo-p99-ms") {
      bad = invalid_argument(
          "--slo-p99-ms is the tensor tune's; a generative model is tuned "
          "under --slo-ttft-ms and --slo-itl-ms");
    } else if (name == "export" || name == "out") {
      bad = invalid_argument("--" + name +
                             ": save --json FILE, then batchscope export --config "
                             "FILE --model LM.pt --format vllm|tgi|trtllm");
    } else {
      bad = invalid_argument("unknown option --" + name +
                             " for a generative model (see batchscope tune --help)");
    }
    if (!bad) return bad.error();
  }
  if (t.slo.ttft_ms <= 0 && t.slo.itl_ms <= 0) {
    return invalid_argument("--slo-ttft-ms or --slo-itl-ms (or both) is required: the objective");
  }
  if (Status s = check_gen_lengths(flags, t.lengths); !s) return s.error();
  if (Status s = t.traffic.validate(); !s) return s.error();
  if (t.max_rate && t.traffic.pattern == Pattern::kClosed) {
    return invalid_argument(
        "--max-rate raises the arrival rate; a closed loop has none (use "
        "--pattern poisson, burst, step, ... or a trace)");
  }
  if (!t.cost.file.empty() && t.model.synthetic) {
    return invalid_argument("--cost " + t.cost.file + ": --synthetic-lm S,T is its own step cost");
  }
  return t;
}

std::string wait_text(const Options& o) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(o.max_wait_us) / 1000.0);
  return buf;
}

void print_header(int q) {
  std::printf("%2s %-10s %5s %6s %7s %5s %10s %9s %9s %9s %9s %9s %7s\n", "", "scheduling", "seqs",
              "tokens", "wait ms", "lanes", "tokens/s", "goodput", "TTFT p50",
              ("TTFT p" + std::to_string(q)).c_str(), "ITL p50",
              ("ITL p" + std::to_string(q)).c_str(), "lost");
}

void print_row(const char* mark, const GenEvaluated& e, size_t alike) {
  const Options& o = e.options;
  std::printf("%2s %-10s %5u %6u %7s %5u %10.1f %9.2f %9.2f %9.2f %9.2f %9.2f %6.2f%%", mark,
              scheduling_name(o.scheduling), o.max_num_seqs, o.max_num_batched_tokens,
              o.scheduling == Scheduling::kStatic ? wait_text(o).c_str() : "-", o.num_lanes,
              e.tokens_per_s, e.goodput_rps, e.ttft_p50_ms, e.ttft_ms, e.itl_p50_ms, e.itl_ms,
              100 * e.loss_rate());
  if (alike > 0) std::printf("  (+%zu alike)", alike);
  std::printf("\n");
}

bool same_figures(const GenEvaluated& a, const GenEvaluated& b) {
  return a.tokens_per_s == b.tokens_per_s && a.goodput_rps == b.goodput_rps &&
         a.ttft_ms == b.ttft_ms && a.itl_ms == b.itl_ms && a.ttft_p50_ms == b.ttft_p50_ms &&
         a.itl_p50_ms == b.itl_p50_ms && a.failed == b.failed;
}

// The front, at most `rows` of its distinct points spread evenly, the best
// marked; points with the same figures show once, with how many more.
void print_front(const GenTuneResult& r, size_t rows) {
  std::vector<std::pair<size_t, size_t>> distinct;  // (index, alike)
  for (size_t i = 0; i < r.pareto.size(); ++i) {
    if (!distinct.empty() && same_figures(r.pareto[distinct.back().first], r.pareto[i])) {
      ++distinct.back().second;
    } else {
      distinct.emplace_back(i, 0);
    }
  }
  std::printf(
      "\nPareto front (predicted; goodput against TTFT and ITL p%d and losses): %zu points, %zu "
      "distinct\n",
      r.slo.quantile, r.pareto.size(), distinct.size());
  print_header(r.slo.quantile);
  const size_t n = distinct.size();
  const size_t step = n > rows ? (n + rows - 1) / rows : 1;
  bool best_shown = false;
  for (size_t i = 0; i < n; i += step) {
    const GenEvaluated& e = r.pareto[distinct[i].first];
    const bool best = r.best && same_figures(e, *r.best);
    best_shown |= best;
    print_row(best ? "*" : "", best ? *r.best : e, distinct[i].second);
  }
  if (r.best && !best_shown) print_row("*", *r.best, 0);
}

struct Confirmation {
  GenEvaluated predicted;
  GenEvaluated measured;  // the median of the runs
  std::vector<GenEvaluated> runs;
  std::vector<GenRun> live;
};

std::string confirmed_json(const std::vector<Confirmation>& confirmed) {
  std::string out = "[";
  for (size_t i = 0; i < confirmed.size(); ++i) {
    const Confirmation& c = confirmed[i];
    out += i ? ",{\"options\":" : "{\"options\":";
    out += options_to_json(c.predicted.options) +
           ",\"predicted\":" + gen_figures_json(c.predicted) +
           ",\"measured\":" + gen_figures_json(c.measured) + ",\"runs\":[";
    for (size_t k = 0; k < c.runs.size(); ++k) {
      out += (k ? "," : "") + gen_figures_json(c.runs[k]);
    }
    out += "]}";
  }
  return out + ']';
}

// Keeps the tune in the run history (app/kept_tune.h): the live runs that
// measured the step cost before the search, then the confirmations.
void keep_tune(const GenTuneArgs& t, const std::string& model_name, const Options& winner,
               const std::string& label, const std::string& result_json,
               const std::vector<Confirmation>& confirmed,
               const std::vector<GenCalibration>& calibration, const ArrivalSpec& traffic) {
  RunConfig config;
  config.pattern = traffic.describe();
  config.target = "predict";
  config.model = model_name;
  config.options = winner;
  config.duration_s = traffic.duration_s;
  config.seed = traffic.seed;
  TimePoint start = SteadyClock().now();
  for (const GenCalibration& c : calibration) start = std::min(start, c.run.start);
  for (const Confirmation& c : confirmed) {
    for (const GenRun& run : c.live) start = std::min(start, run.start);
  }
  KeptTune kept(t.history, label, std::move(config),
                run_context_json(t.model.synthetic ? "" : t.model.path, t.model.device), start,
                result_json);
  auto keep = [&](const GenRun& run, const Options& options, std::string what, double duration_s) {
    RunConfig c;
    c.pattern = run.pattern;
    c.target = "inproc";
    c.model = model_name;
    c.options = options;
    c.duration_s = duration_s;
    c.seed = run.seed;
    kept.keep(run, std::move(c), std::move(what),
              gen_summary_json(run, summarize_gen(run, t.slo.ttft_ms, t.slo.itl_ms)));
  };
  for (size_t i = 0; i < calibration.size(); ++i) {
    keep(calibration[i].run, calibration[i].options,
         "calibration, " + describe_generation(calibration[i].options) + ", run " +
             std::to_string(i + 1) + " of " + std::to_string(calibration.size()),
         t.cost.calibration_s);
  }
  for (const Confirmation& c : confirmed) {
    for (size_t i = 0; i < c.live.size(); ++i) {
      keep(c.live[i], c.predicted.options,
           "confirming " + describe_generation(c.predicted.options) + ", run " +
               std::to_string(i + 1) + " of " + std::to_string(c.live.size()),
           traffic.duration_s);
    }
  }
  kept.report();
}

}  // namespace

int run_gen_tune(std::map<std::string, std::string> flags) {
  auto parsed = parse_args(std::move(flags));
  if (!parsed) return fail(parsed.error().message);
  GenTuneArgs& t = *parsed;
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      Seconds(t.budget_s));

  auto described = lm_info(t.model);
  if (!described) return fail(described.error().message, 1);
  const LmInfo info = *described;
  if (Status s = check_cache(info); !s) return fail(s.message(), 1);
  auto space = parse_gen_space(t.space_text);
  if (!space) return fail("--space: " + space.error().message);
  const auto context = static_cast<uint32_t>(std::max(2, info.context_length));
  if (const ContextFit fit = fit_to_context(t.lengths.replay, context); fit.any()) {
    std::printf("  trace: %s\n", fit.describe(context).c_str());
  }
  std::vector<GenCalibration> calibration;  // live runs that measured the step cost: kept
  auto priced = price_gen_steps(t.model, t.base, t.traffic, t.lengths, t.cost,
                                lane_counts(*space, t.base), &calibration);
  if (!priced) return fail(priced.error().message, t.cost.file.empty() ? 1 : 2);
  const GenStepCost cost = priced->cost;
  if (cost.of_step(1, 0) <= Duration(0)) {
    return fail("a step that costs nothing cannot be predicted (" + priced->source + ")", 1);
  }
  std::printf("tune %s: %s, %s, objective %s\n", info.name.c_str(), t.traffic.describe().c_str(),
              t.slo.describe().c_str(), gen_objective_name(t.objective));
  std::printf("  requests: %s\n", t.lengths.describe().c_str());
  std::printf("  step cost: %s (%s)\n", cost.text().c_str(), priced->source.c_str());
  std::printf("  space: %s (%llu combinations)\n", space->text().c_str(),
              static_cast<unsigned long long>(space->size()));
  std::fflush(stdout);

  auto evaluator_at = [&](const ArrivalSpec& traffic) {
    return predicted_evaluator(
        traffic, [&](uint64_t seed) { return t.lengths.workload(seed); }, info, cost, t.slo);
  };
  GenTuneSettings settings;
  settings.slo = t.slo;
  settings.objective = t.objective;

  ArrivalSpec traffic = t.traffic;
  std::string max_rate_json;
  if (t.max_rate) {
    std::printf("\nfinding the largest rate some configuration serves within the objective:\n");
    std::fflush(stdout);
    // Whether some configuration meets the objective: the first that does
    // ends a probe. The probes share half of the budget left.
    GenTuneSettings quick = settings;
    quick.first_meeting = true;
    const auto probe_start = std::chrono::steady_clock::now();
    const double probe_seconds = half_of_what_is_left(deadline);
    bool out_of_time = false;
    double unscalable = 0;  // the least factor the traffic cannot be scaled to
    const MaxRate m = max_rate([&](double factor) -> std::optional<GenEvaluated> {
      auto scaled = scaled_traffic(t.traffic, factor);
      if (!scaled) {
        unscalable = unscalable > 0 ? std::min(unscalable, factor) : factor;
        return std::nullopt;
      }
      quick.max_seconds =
          probe_seconds - Seconds(std::chrono::steady_clock::now() - probe_start).count();
      if (quick.max_seconds <= 0) {
        out_of_time = true;
        return std::nullopt;
      }
      const GenTuneResult r = gen_search(*space, t.base, quick, evaluator_at(*scaled));
      out_of_time |= r.out_of_time && !r.best;
      std::printf("  x%-8.4g %9.2f req/s: %s\n", factor, mean_rate(*scaled),
                  r.best ? ("met by " + describe_generation(r.best->options)).c_str() : "missed");
      std::fflush(stdout);
      if (!r.best) return std::nullopt;
      return *r.best;
    });
    if (m.factor <= 0) {
      return fail("no configuration meets " + t.slo.describe() + " even at 1/1024 of the rate", 1);
    }
    traffic = *scaled_traffic(t.traffic, m.factor);
    const double rate = mean_rate(traffic);
    std::printf("  max rate: %.2f req/s (x%.4g: %s), in %d searches, %.1f s", rate, m.factor,
                traffic.describe().c_str(), m.searches,
                Seconds(std::chrono::steady_clock::now() - probe_start).count());
    if (m.refused_factor > 0) {
      if (auto missed = scaled_traffic(t.traffic, m.refused_factor)) {
        std::printf("; x%.4g (%.2f req/s) misses", m.refused_factor, mean_rate(*missed));
      }
    }
    std::printf("\n");
    if (unscalable > 0 && m.refused_factor >= unscalable) {
      std::printf(
          "  (x%.4g is past the largest rate or trace speed the traffic can take: the "
          "rate found is a lower bound)\n",
          unscalable);
    }
    if (out_of_time) {
      std::printf("  (--budget-s ran out while probing: the rate found is a lower bound)\n");
    }
    max_rate_json = "{\"factor\":";
    append_json_number(max_rate_json, m.factor);
    max_rate_json += ",\"rate_rps\":";
    append_json_number(max_rate_json, rate);
    max_rate_json += ",\"traffic\":";
    append_json_string(max_rate_json, traffic.describe());
    max_rate_json += ",\"missed_factor\":";
    append_json_number(max_rate_json, m.refused_factor);
    max_rate_json += ",\"searches\":" + std::to_string(m.searches) + "}";
  }

  settings.max_seconds = half_of_what_is_left(deadline);  // the rest is for confirming
  const auto search_start = std::chrono::steady_clock::now();
  GenTuneResult result = gen_search(*space, t.base, settings, evaluator_at(traffic));
  const double search_s = Seconds(std::chrono::steady_clock::now() - search_start).count();
  std::printf("\nevaluated %zu configurations in %.2f s (%llu invalid, %llu alike)%s\n",
              result.evaluated.size(), search_s, static_cast<unsigned long long>(result.invalid),
              static_cast<unsigned long long>(result.alike),
              result.out_of_time ? "; stopped by --budget-s" : "");
  print_front(result, 20);

  std::vector<std::pair<std::string, std::string>> members;
  auto member_string = [&](const char* key, const std::string& value) {
    std::string v;
    append_json_string(v, value);
    members.emplace_back(key, v);
  };
  member_string("model", info.name);
  member_string("traffic", traffic.describe());
  member_string("workload", t.lengths.describe());
  {
    std::string c = "{\"step_us\":";
    append_json_number(c, cost.step_us);
    c += ",\"decode_us\":";
    append_json_number(c, cost.decode_us);
    c += ",\"prefill_token_us\":";
    append_json_number(c, cost.prefill_token_us);
    c += ",\"source\":";
    append_json_string(c, priced->source);
    members.emplace_back("step_cost", c + '}');
  }
  if (!max_rate_json.empty()) members.emplace_back("max_rate", max_rate_json);
  if (!result.best) {
    save_export(t.json_out,
                with_measured_on(gen_tune_json(result, std::nullopt, members), t.model.device),
                "JSON result");
    return fail(result.best.error().message, 1);
  }
  std::printf("\nbest predicted: %s\n", describe_generation(result.best->options).c_str());

  std::vector<Confirmation> confirmed;
  if (t.confirm > 0) {
    std::printf("\nconfirming live (the same traffic in process, %d run%s each, their medians):\n",
                t.confirm_runs, t.confirm_runs > 1 ? "s" : "");
    std::fflush(stdout);
    for (const GenEvaluated& e :
         gen_candidates(result.evaluated, t.slo, t.objective, static_cast<size_t>(t.confirm))) {
      Confirmation c;
      c.predicted = e;
      for (int i = 0; i < t.confirm_runs && std::chrono::steady_clock::now() < deadline; ++i) {
        GenWorkload workload = t.lengths.workload(traffic.seed);
        auto live = run_gen_inproc(t.model, e.options, traffic, workload, std::chrono::seconds(60));
        if (!live) {
          return fail("confirming " + describe_generation(e.options) + ": " + live.error().message,
                      1);
        }
        live->pattern = traffic.describe();
        live->workload = t.lengths.describe();
        live->target = "inproc";
        live->options = describe_generation(e.options);
        live->seed = traffic.seed;
        c.runs.push_back(gen_evaluated_from(
            e.options, summarize_gen(*live, t.slo.ttft_ms, t.slo.itl_ms), t.slo.quantile));
        c.live.push_back(std::move(*live));
      }
      if (c.runs.empty()) {
        std::printf("  %s: not confirmed, --budget-s ran out\n",
                    describe_generation(e.options).c_str());
        break;
      }
      c.measured = median_of_runs(c.runs);
      const int q = t.slo.quantile;
      std::printf("  %s\n", describe_generation(e.options).c_str());
      std::printf(
          "    predicted %9.1f tokens/s  goodput %7.2f  TTFT p50 %8.2f p%d %8.2f  ITL p50 %7.2f "
          "p%d %7.2f ms\n",
          e.tokens_per_s, e.goodput_rps, e.ttft_p50_ms, q, e.ttft_ms, e.itl_p50_ms, q, e.itl_ms);
      const GenEvaluated& m = c.measured;
      std::printf(
          "    measured  %9.1f tokens/s  goodput %7.2f  TTFT p50 %8.2f p%d %8.2f  ITL p50 %7.2f "
          "p%d %7.2f ms  (median of %zu; %s)\n",
          m.tokens_per_s, m.goodput_rps, m.ttft_p50_ms, q, m.ttft_ms, m.itl_p50_ms, q, m.itl_ms,
          c.runs.size(), meets_gen_slo(m, t.slo) ? "meets" : "misses");
      std::fflush(stdout);
      confirmed.push_back(std::move(c));
    }
  }
  members.emplace_back("confirmed", confirmed_json(confirmed));
  // Each confirmation run is a live run of the model here.
  {
    std::map<uint32_t, std::vector<StepRecord>> by_lanes;
    for (const Confirmation& c : confirmed) {
      std::vector<StepRecord>& steps = by_lanes[c.predicted.options.num_lanes];
      for (const GenRun& run : c.live)
        steps.insert(steps.end(), run.steps.begin(), run.steps.end());
    }
    for (const auto& [lanes, steps] : by_lanes) {
      if (!steps.empty()) refine_kept_steps(t.model, steps, lanes);
    }
  }

  GenEvaluated winner = *result.best;
  std::optional<GenEvaluated> measured;
  if (!confirmed.empty()) {
    std::vector<GenEvaluated> live;
    for (const Confirmation& c : confirmed) live.push_back(c.measured);
    auto best_live = choose_gen_best(live, t.slo, t.objective);
    if (!best_live) {
      // No best: what export and serve read from the JSON must not be a
      // configuration that missed live.
      result.best = Error{best_live.error().code, "measured live, " + best_live.error().message};
      save_export(t.json_out,
                  with_measured_on(gen_tune_json(result, std::nullopt, members), t.model.device),
                  "JSON result");
      return fail(result.best.error().message, 1);
    }
    for (const Confirmation& c : confirmed) {
      if (c.measured.options == best_live->options) winner = c.predicted;
    }
    measured = *best_live;
    result.best = winner;
  }
  std::printf("\nbest: %s\n", describe_generation(winner.options).c_str());
  if (measured) {
    std::printf("  measured %.1f tokens/s, goodput %.2f req/s, TTFT p%d %.2f ms, ITL p%d %.2f ms\n",
                measured->tokens_per_s, measured->goodput_rps, t.slo.quantile, measured->ttft_ms,
                t.slo.quantile, measured->itl_ms);
  }
  const std::string result_json =
      with_measured_on(gen_tune_json(result, measured, members), t.model.device);
  int rc = save_export(t.json_out, result_json, "JSON result") ? 0 : 1;
  keep_tune(t, info.name, winner.options,
            "tune: " + traffic.describe() + " within " + t.slo.describe() + ", " +
                gen_objective_name(t.objective),
            result_json, confirmed, calibration, traffic);
  return rc;
}

}  // namespace batchscope

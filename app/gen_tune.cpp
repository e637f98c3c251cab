// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "app/cli_args.h"
#include "app/model_flags.h"
#include "app/run_output.h"
#include "app/traffic_flags.h"
#include "model/lm_tune.h"
#include "model/planned_tune.h"
#include "tuning/tune_text.h"

namespace batchscope {

std::string gen_tune_help() {
  return "For a generative model (--model models/tiny_lm.pt, or --synthetic-lm S,T):\n"
         "usage: batchscope tune --model LM.pt (--slo-ttft-ms X | --slo-itl-ms Y | both)\n"
         "                       [--slo-quantile p50|p90|p95|p99]\n"
         "                       [--objective goodput|throughput|latency]\n"
         "                       [pattern and length options as in bench] [--space TEXT]\n"
         "                       [--max-rate] [--confirm K] [--confirm-runs N] [--budget-s S]\n"
         "                       [--headroom X]\n"
         "                       [--cost FILE.json | --calibration-seconds S] [--recalibrate]\n"
         "                       [--json FILE] [--history FILE | --no-history] [serving options]\n"
         "Every configuration runs on the step predictor (the real planner, scheduler and\n"
         "paged cache on a virtual clock), priced by --synthetic-lm's own cost, --cost FILE\n"
         "(bench --cost-out), or the step cost kept for the model here (made on first use\n"
         "from --calibration-seconds S of live traffic, default 6; refined by every live run).\n"
         "A configuration meets the objective when its TTFT and ITL at the quantile (default\n"
         "p99) are within the bounds and it lost at most 0.1%; the best has the most goodput\n"
         "(requests/s within both), output tokens/s (throughput) or the lowest TTFT\n"
         "(latency), rates within 1% equal. It prints the Pareto front and confirms the best\n"
         "K (default 2) live, --confirm-runs N times each (default 3): the winner is the best\n"
         "by the medians measured. The best few get a band (the step cost at its kept drift's\n"
         "p10 and p90, or +-15%, or +-X with --headroom X) and their headroom (the slowdown\n"
         "of the step cost and rise of the rate they withstand); the choice, confirmed first,\n"
         "is the best that holds at the band's slow end, else the closest, marked fragile.\n"
         "--max-rate first finds the largest factor on the rates at\n"
         "which some configuration still meets the objective, and tunes there. --budget-s\n"
         "(default 600) bounds the whole tune. Default space:\n  \"" +
         default_gen_space_text() +
         "\"\nat --lanes (add lanes=1|2 to search them). --json writes the result, which\n"
         "batchscope export --config FILE.json --format vllm|tgi|trtllm reads. The tune is\n"
         "kept in the run history with each confirmation run under it.\n"
         "\n"
         "For a language model planned for a GPU that is not here:\n"
         "usage: batchscope tune --model-config CONFIG (--gpu NAME | --gpu-spec FILE)\n"
         "                       [--tp N | --tp 1,2,4] [--target-rate R] [--max-rate]\n"
         "                       [--model-id ORG/NAME] [--dtype, --kv-dtype, --block-size,\n"
         "                       --gpu-memory-utilization, --max-model-len as in bench]\n"
         "                       (objective, traffic and lengths as above)\n"
         "Each configuration runs on the predictor priced by the roofline (no live run).\n"
         "Default space:\n  \"" +
         default_planned_space_text() +
         "\"\n(and chunked_prefill=1|0 where --max-model-len is at most 16384).\n"
         "With several --tp, each is planned and searched; --target-rate R finds one replica's\n"
         "capacity under the objective, the replicas for R with the headroom held back\n"
         "(--headroom, default 15%) and the fewest GPUs in all (TP x replicas), then tunes at\n"
         "R over the replicas; --max-rate alone picks the most capacity a GPU. --json writes\n"
         "the plan (model, GPU, TP, replicas, what it assumes), which export --config reads\n"
         "alone: --format vllm|tgi|trtllm|kserve. --model-id names the model the exports\n"
         "load (default: the config's _name_or_path, else its folder).\n";
}

namespace {

const Fail fail{"tune"};

// What the command adds to the tune's request: where its result goes.
struct GenTuneArgs {
  LmTuneRequest tune;
  std::string json_out;
};

Expected<GenTuneArgs> parse_args(std::map<std::string, std::string> flags) {
  GenTuneArgs a;
  LmTuneRequest& t = a.tune;
  auto history = take_history_flags(flags);
  if (!history) return history.error();
  t.history = *history;
  auto options = cli::take_options(flags);
  if (!options) return options.error();
  t.base = *options;
  // --tp 1,2,4: the parallelisms a plan searches.
  if (auto it = flags.find("tp"); it != flags.end() && it->second.find(',') != std::string::npos) {
    auto tps = cli::parse_counts("tp", it->second, 1, 64);
    if (!tps) return tps.error();
    t.tps = *tps;
    flags.erase(it);
  }
  std::string model_id;
  if (Status s =
          cli::take_fields(flags, {cli::text("model-id", model_id),
                                   cli::number("target-rate", 0.000001, 1e9, t.target_rate)});
      !s) {
    return s.error();
  }
  auto plan = take_plan_flags(flags);
  if (!plan) return plan.error();
  t.plan = *plan;
  t.model_id = model_id;
  if (!t.plan && (!t.tps.empty() || !model_id.empty() || t.target_rate > 0)) {
    return invalid_argument(
        std::string(t.target_rate > 0   ? "--target-rate"
                    : !model_id.empty() ? "--model-id"
                                        : "--tp") +
        " is for a language model planned for a GPU: give --model-config CONFIG --gpu NAME");
  }
  if (t.plan) {
    for (const char* here : {"model", "synthetic-lm", "device", "cache-tokens"}) {
      if (flags.count(here)) {
        return invalid_argument(std::string("--") + here + " is a model run here; --model-config " +
                                t.plan->model_config +
                                " plans one for a GPU: give one or the other");
      }
    }
    if (flags.count("confirm") || flags.count("confirm-runs")) {
      return invalid_argument(
          "--confirm: a model planned for a GPU that is not here cannot run live");
    }
    t.confirm = 0;
  } else {
    auto choice = take_lm_flags(flags, "models/tiny_lm.pt");
    if (!choice) return choice.error();
    t.model = *choice;
  }
  t.traffic.pattern = Pattern::kPoisson;
  t.traffic.rate = 20;
  t.traffic.duration_s = 10;
  std::string quantile, objective;
  if (Status s = cli::take_fields(
          flags,
          {cli::number("slo-ttft-ms", 0.001, 1e7, t.slo.ttft_ms),
           cli::number("slo-itl-ms", 0.001, 1e7, t.slo.itl_ms), cli::text("slo-quantile", quantile),
           cli::text("objective", objective), cli::text("space", t.space_text),
           cli::on("max-rate", t.max_rate), cli::whole("confirm", 0, 20, t.confirm),
           cli::whole("confirm-runs", 1, 9, t.confirm_runs),
           cli::number("budget-s", 1, 1e6, t.budget_s), cli::number("headroom", 0, 3, t.headroom),
           cli::text("json", a.json_out)});
      !s) {
    return s.error();
  }
  trace_sets_pattern(flags, t.traffic);
  for (auto& [name, value] : flags) {
    Status bad;
    if (take_gen_length_flag(name, value, t.lengths, t.traffic, bad) ||
        take_arrival_flag(name, value, t.traffic, bad) ||
        take_cost_flag(name, value, t.cost, bad)) {
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
  if (!quantile.empty()) {  // p95, 95 or 0.95
    const std::map<std::string, int> known = {{"50", 50},  {"90", 90},  {"95", 95},   {"99", 99},
                                              {"0.5", 50}, {"0.9", 90}, {"0.95", 95}, {"0.99", 99}};
    auto it = known.find(quantile[0] == 'p' ? quantile.substr(1) : quantile);
    if (it == known.end()) {
      return invalid_argument(
          "--slo-quantile: expected p50, p90, p95 or p99 (or 0.5 ... 0.99), got '" + quantile +
          "'");
    }
    t.slo.quantile = it->second;
  }
  if (!objective.empty()) {
    auto o = parse_gen_objective(objective);
    if (!o) {
      return invalid_argument(
          "--objective: expected goodput, throughput or latency for a generative model, got '" +
          objective + "'");
    }
    t.objective = *o;
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
  if (t.plan && !t.cost.file.empty()) {
    return invalid_argument("--cost " + t.cost.file +
                            ": a model planned for a GPU is priced by the roofline");
  }
  if (!t.cost.file.empty() && t.model.synthetic_lm) {
    return invalid_argument("--cost " + t.cost.file + ": --synthetic-lm S,T is its own step cost");
  }
  return a;
}

// Prints the tune as it goes, and writes its result where --json says.
class LmTunePrinter final : public LmTuneReport {
 public:
  explicit LmTunePrinter(const GenTuneArgs& a) : a_(a) {}
  const Say& say() const override { return say_; }
  void searched(const GenTuneResult& result, double seconds) override {
    std::printf("\nevaluated %zu configurations in %.2f s (%llu invalid, %llu alike)%s\n",
                result.evaluated.size(), seconds, static_cast<unsigned long long>(result.invalid),
                static_cast<unsigned long long>(result.alike),
                result.out_of_time ? "; stopped by --budget-s" : "");
    std::fputs(front_text(result, 20).c_str(), stdout);
    std::fflush(stdout);
  }
  void confirmed(const LmConfirmation& c, const GenSlo& slo) override {
    const int q = slo.quantile;
    const GenEvaluated& e = c.predicted;
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
        c.runs.size(), meets_gen_slo(m, slo) ? "meets" : "misses");
    std::fflush(stdout);
  }
  void finished(const LmTuneFinish& f) override {
    if (f.winner) {
      std::printf("\nbest: %s\n", describe_generation(f.winner->options).c_str());
      if (const auto& m = f.measured) {
        std::printf(
            "  measured %.1f tokens/s, goodput %.2f req/s, TTFT p%d %.2f ms, ITL p%d %.2f ms\n",
            m->tokens_per_s, m->goodput_rps, f.quantile, m->ttft_ms, f.quantile, m->itl_ms);
      }
    }
    if (!save_export(a_.json_out, f.json, "JSON result") && f.winner) rc_ = 1;
  }
  int rc() const { return rc_; }

 private:
  const GenTuneArgs& a_;
  Say say_ = terminal_say();
  int rc_ = 0;
};

}  // namespace

int run_gen_tune(std::map<std::string, std::string> flags) {
  auto parsed = parse_args(std::move(flags));
  if (!parsed) return fail(parsed.error().message);
  LmTunePrinter printer(*parsed);
  if (auto e = tune_lm(parsed->tune, printer)) return fail(e->message, e->refused ? 2 : 1);
  return printer.rc();
}

}  // namespace batchscope

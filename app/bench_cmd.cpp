// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "app/cli_args.h"
#include "app/model_flags.h"
#include "app/run_output.h"
#include "app/stop_signal.h"
#include "app/traffic_flags.h"
#include "common/build_info.h"
#include "common/file_text.h"
#include "model/tensor_bench.h"
#ifdef BATCHSCOPE_WITH_QT
// Qt: the HTTP targets and the plot. A build without Qt runs the in-process
// engine and the predictor only.
#include <QCoreApplication>

#include "api/http_fronts.h"
#include "api/infer_json.h"
#include "ui/runs/run_plot.h"
#endif

namespace batchscope {

std::string bench_help() {
  return "usage: batchscope bench [--model PATH | --synthetic A_US,C_US[,L_US]]\n"
         "                        [--pattern constant|poisson|burst|ramp|step|sine|trace|closed]\n"
         "                        [pattern parameters] [--duration S] [--requests N] [--seed N]\n"
         "                        [--target inproc|self-http|predict|URL] [--cost FILE]\n"
         "                        [--recalibrate] [--calibration-seconds S] [--cost-out FILE]\n"
         "                        [--plan-cost FILE] [--payload FILE] [--seq-len DIST]\n"
         "                        [--warmup auto|doubling|every] [serving options]\n"
         "                        [--json FILE] [--csv PREFIX] [--trace-out FILE]\n"
         "                        [--plot FILE.png] [--window S] [--history FILE | --no-history]\n"
         "Patterns and their parameters:\n"
         "  constant --rate R            evenly spaced\n"
         "  poisson  --rate R            random arrivals at R per second (default)\n"
         "  burst    --rate R --rate-low R2 --on S --off S   on/off periods at two rates\n"
         "  ramp     --rate-from R0 --rate-to R1             linear over the run\n"
         "  step     --steps \"R1:S1,R2:S2,...\"               rate levels and their seconds\n"
         "  sine     --rate-min R0 --rate-max R1 --period S  a daily cycle compressed into S\n"
         "  trace    --trace FILE [--trace-speed X]   a trace's arrivals, X times as fast\n"
         "           (timestamps or gaps as CSV; Azure, BurstGPT or Mooncake, docs/bench.md)\n"
         "  closed   --concurrency N      N requests in flight, each sent when one returns\n"
         "Latency counts from each request's intended send time (open loop). Targets: inproc\n"
         "(the engine alone), self-http (this process's listener), a URL ending in /infer or\n"
         "/v2/models/{m}/infer (sent --token TOKEN, default $BATCHSCOPE_TOKEN, as a bearer\n"
         "token), or predict: the run replayed on a virtual clock against the model's t(b)\n"
         "on this machine, its kept cost (made on first use; refined by every in-process\n"
         "run) or --cost FILE (docs/tuning.md). --cost-out FILE writes a live run's batch\n"
         "times as such a t(b), or refines the cost file FILE already is. The adaptive\n"
         "strategy plans on the kept cost, or on --plan-cost FILE.\n"
         "--payload FILE sends that body instead of seeded inputs (inproc: each row of a\n"
         "KServe v2 body in turn). A model whose inputs vary in length gets lengths drawn\n"
         "from --seq-len fixed:N, uniform:LO,HI or lognormal:MEDIAN,SIGMA[,MAX] (default\n"
         "lognormal:32,1), and the padding waste.\n"
         "--csv PREFIX writes PREFIX_requests.csv and PREFIX_windows.csv; --window S the\n"
         "summary's windows (default: the duration / 40, 0.1 s to 10 s). --warmup: the sizes\n"
         "each lane runs first (auto: every size on a GPU, 1, 2, 4, ... on a CPU; docs/gpu.md).\n"
         "Every run is kept in the run history (batchscope runs):\n" +
         history_flags_help() + "The cost a prediction uses (docs/tuning.md):\n" +
         cost_flags_help() + "Serving options:\n" + cli::options_help() + lm_flags_help() +
         python_flags_help() + gen_bench_help();
}

namespace {

const Fail fail{"bench"};

}  // namespace

int run_bench(int argc, char** argv, const std::vector<std::string>& args) {
  auto flags = cli::parse_flags(args, {"no-history", "recalibrate"});
  if (!flags) return fail(flags.error().message);
  // --api and --served-model are about OpenAI's generation routes.
  if (flags->count("api") || flags->count("served-model") ||
      wants_lm(*flags, "models/linear_128x64.pt")) {
    return run_gen_bench(argc, argv, *flags);
  }
  BenchRequest r;
  auto history = take_history_flags(*flags);
  if (!history) return fail(history.error().message);
  r.history = *history;
  r.batch_given = flags->count("max-batch-size") > 0;
  auto options = cli::take_options(*flags);
  if (!options) return fail(options.error().message);
  r.options = *options;
  r.traffic.pattern = Pattern::kPoisson;
  r.traffic.rate = 1000;
  r.traffic.duration_s = 10;
  auto choice = take_model_flags(*flags, "models/linear_128x64.pt");
  if (!choice) return fail(choice.error().message);
  r.model = *choice;
  std::string token = std::getenv("BATCHSCOPE_TOKEN") ? std::getenv("BATCHSCOPE_TOKEN") : "";
  std::string json_out, csv_prefix, trace_out, plot_out, payload_file, seq_len;
  int connections = 64;
  double window_s = 0;  // 0: about 40 windows over the run
  if (Status s = cli::take_fields(
          *flags,
          {cli::text("target", r.target), cli::text("token", token),
           cli::number("connections", 1, 4096, connections), cli::text("payload", payload_file),
           cli::text("seq-len", seq_len), cli::text("plan-cost", r.plan_cost),
           cli::text("cost-out", r.cost_out), cli::number("window", 0.001, 3600, window_s),
           cli::text("json", json_out), cli::text("csv", csv_prefix),
           cli::text("trace-out", trace_out), cli::text("plot", plot_out)});
      !s) {
    return fail(s.message());
  }
  trace_sets_pattern(*flags, r.traffic);
  for (auto& [name, value] : *flags) {
    Status bad;
    if (!take_arrival_flag(name, value, r.traffic, bad) &&
        !take_cost_flag(name, value, r.cost, bad)) {
      bad = invalid_argument("unknown option --" + name + " (see batchscope bench --help)");
    }
    if (!bad) return fail(bad.message());
  }
  if (Status s = r.traffic.validate(); !s) return fail(s.message());
  if (!seq_len.empty()) {
    auto d = LengthDist::parse(seq_len, "--seq-len");
    if (!d) return fail(d.error().message);
    r.seq_len = *d;
  }
  if (Status s = TensorBench::check(r); !s) return fail(s.message());
  const std::string& target = r.target;
  const bool predicted = target == "predict";
  const bool remote = target != "inproc" && target != "self-http" && !predicted;
#ifndef BATCHSCOPE_WITH_QT
  if (Status s = qt_free_check(target, plot_out, payload_file); !s) return fail(s.message());
  (void)argc, (void)argv, (void)connections;
#else
  std::optional<Url> url;
  if (remote) {
    auto u = target_url(target, token);
    if (!u) return fail(u.error().message);
    url = *u;
  }
#endif
  std::vector<std::string> bodies;
  if (!payload_file.empty()) {
    auto text = read_file_text(payload_file);
    if (!text) return fail("--payload: " + text.error().message);
    bodies.push_back(std::move(*text));
    r.own_bodies = true;
  }
  const Say say = terminal_say();
  auto bench = TensorBench::open(r, say);
  if (!bench) return fail(bench.error().message, 1);
  std::vector<Tensors> payload;
#ifdef BATCHSCOPE_WITH_QT
  if (!bodies.empty() && target == "inproc") {
    // The body an HTTP target sends: {"data": [...]}, or a KServe v2 request
    // whose rows are sent in turn.
    const ModelMetadata& meta = (*bench)->metadata();
    if (bodies[0].find("\"inputs\"") != std::string::npos) {
      auto parsed = parse_v2_request(bodies[0], meta);
      if (auto* e = std::get_if<HttpError>(&parsed)) return fail("--payload: " + e->message);
      const V2Request& req = std::get<V2Request>(parsed);
      const int64_t rows = req.inputs.empty() ? 0 : req.inputs[0].rows();
      for (int64_t row = 0; row < rows; ++row) payload.push_back(v2_row(req, row));
    } else {
      auto parsed = parse_simple_infer(bodies[0], meta);
      if (auto* e = std::get_if<HttpError>(&parsed)) return fail("--payload: " + e->message);
      payload.push_back(std::get<Tensors>(parsed));
    }
    for (const Tensors& p : payload) {
      if (Status s = check_inputs(meta, p); !s) return fail("--payload: " + s.message());
    }
  }
  auto app = run_application(argc, argv, !plot_out.empty(), target == "self-http");
  TensorHttpFront front(url, r.model.synthetic ? "cpu" : r.model.device, connections,
                        r.traffic.seed, bodies, r.seq_len);
  HttpFront* http = &front;
#else
  HttpFront* http = nullptr;
#endif
  // SIGINT or SIGTERM ends a measured run early, and it is kept.
  std::optional<StopOnSignal> stop_signal;
  if (!predicted) stop_signal.emplace();
  auto ran = (*bench)->run(payload, http, stop_signal ? stop_signal->flag() : nullptr);
  if (!ran) return fail(ran.error().message, 1);
  RunData& run = *ran;

  // A run stopped early lasted until its last answer.
  std::string stopped;
  if (stop_signal) {
    TimePoint last = run.start;
    for (const RunRequest& q : run.requests) last = std::max(last, q.done);
    stopped = stop_signal->ended(run.start, last, run.config.duration_s);
  }
  if (window_s <= 0) window_s = std::clamp(run.config.duration_s / 40.0, 0.1, 10.0);
  const RunSummary summary = summarize_run(
      run, std::chrono::duration_cast<Duration>(std::chrono::duration<double>(window_s)));
  std::fputs(run_summary_text(run, summary).c_str(), stdout);

  int rc = 0;
  auto save = [&](const std::string& path, const std::string& text, const char* what) {
    if (!save_export(path, text, what)) rc = 1;
  };
  const std::string summary_json = run_summary_json(run, summary);
  save(json_out, summary_json, "JSON summary");
  if (!csv_prefix.empty()) {
    save(csv_prefix + "_requests.csv", run_requests_csv(run), "CSV per request");
    save(csv_prefix + "_windows.csv", run_windows_csv(summary), "CSV per window");
  }
  save(trace_out, run_trace_json(run), "Chrome trace; open in Perfetto or chrome://tracing");
  if (auto out = (*bench)->keep(run, summary_json, stopped)) {
    if (!*out) {
      std::cerr << "batchscope bench: " << out->error().message << "\n";
      rc = 1;
    } else {
      save(r.cost_out, (*out)->json, (*out)->what.c_str());
    }
  }
#ifdef BATCHSCOPE_WITH_QT
  if (!plot_out.empty()) {
    if (Status s = write_run_plot(run, summary, plot_out); !s) {
      std::cerr << "batchscope bench: " << s.message() << "\n";
      rc = 1;
    } else {
      std::printf("  wrote %s (latency fan, queue depth, batch sizes)\n", plot_out.c_str());
    }
  }
#endif
  return rc;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

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
#include <QApplication>

#include "api/http_target.h"
#include "api/infer_json.h"
#include "api/self_http.h"
#include "ui/runs/run_plot.h"
#endif

namespace batchscope {

std::string bench_help() {
  return "usage: batchscope bench [--model PATH | --synthetic A_US,C_US[,L_US]]\n"
         "                        [--pattern constant|poisson|burst|ramp|step|sine|trace|closed]\n"
         "                        [pattern parameters] [--duration S] [--requests N] [--seed N]\n"
         "                        [--target inproc|self-http|predict|URL] [--cost FILE]\n"
         "                        [--recalibrate] [--calibration-seconds S] [--cost-out FILE]\n"
         "                        [--plan-cost FILE] [--payload FILE] [--warmup "
         "auto|doubling|every]\n"
         "                        [serving options] [--json FILE] [--csv PREFIX] [--trace-out "
         "FILE]\n"
         "                        [--plot FILE.png] [--window S] [--history FILE | --no-history]\n"
         "Patterns and their parameters:\n"
         "  constant --rate R            evenly spaced\n"
         "  poisson  --rate R            random arrivals at R per second (default)\n"
         "  burst    --rate R --rate-low R2 --on S --off S   on/off periods at two rates\n"
         "  ramp     --rate-from R0 --rate-to R1             linear over the run\n"
         "  step     --steps \"R1:S1,R2:S2,...\"               rate levels and their seconds\n"
         "  sine     --rate-min R0 --rate-max R1 --period S  a daily cycle compressed into S\n"
         "  trace    --trace FILE [--trace-speed X]   replay a trace's arrivals, X times as\n"
         "           fast: timestamps or inter-arrival microseconds (CSV), or a language-model\n"
         "           trace (Azure, BurstGPT, Mooncake; told by its header, docs/bench.md)\n"
         "  closed   --concurrency N      N requests in flight, each sent when one returns\n"
         "Latency is measured from each request's intended send time (open loop), so a\n"
         "stalled server shows as latency, not as less load. Targets: inproc (the engine\n"
         "alone), self-http (this process's HTTP listener), a URL ending in /infer or\n"
         "/v2/models/{m}/infer (--token TOKEN, default $BATCHSCOPE_TOKEN, is sent to a URL\n"
         "target as 'Authorization: Bearer TOKEN'), or predict: the run the in-process\n"
         "engine would record, replayed on a virtual clock against the model's t(b) as the\n"
         "lanes run it on this machine: the kept cost of the model (made on first use: the\n"
         "profile, then a few seconds of live traffic per lane count; refined by every\n"
         "in-process run of the model here), or --cost FILE; with every export as for a\n"
         "live run (docs/tuning.md). --cost-out FILE writes the batch\n"
         "run times of an in-process or self-http run as such a t(b), with the quantiles of\n"
         "run times and each request's time outside its batch; where FILE is a cost file\n"
         "already, the run refines it (the sizes it saw, for its number of lanes; the rest\n"
         "scaled by the nearest ratio) and prints how far each size moved. The adaptive\n"
         "strategy plans on the model's kept cost live (its own fit where there is none)\n"
         "and on the cost it is predicted with; --plan-cost FILE: on that cost file\n"
         "instead, live (inproc, self-http) and predicted alike (docs/tuning.md).\n"
         "--payload FILE sends that request\n"
         "body instead of seeded inputs built from the model's metadata. A model whose\n"
         "inputs vary in length (a -1 after the batch dimension in its sidecar) gets 1024\n"
         "seeded requests whose lengths are drawn from --seq-len DIST: fixed:N,\n"
         "uniform:LO,HI or lognormal:MEDIAN,SIGMA[,MAX] (default lognormal:32,1 up to the\n"
         "model's largest); the summary then gives the padding waste. --csv PREFIX writes\n"
         "PREFIX_requests.csv and PREFIX_windows.csv.\n"
         "--window S sets the summary windows (default: the duration / 40, 0.1 s to 10 s).\n"
         "--warmup: the batch sizes each lane runs on its own thread before serving: auto\n"
         "(every size up to --max-batch-size on a GPU, where each size's first run costs a\n"
         "cuDNN plan; 1, 2, 4, ... on a CPU), doubling or every (docs/gpu.md).\n"
         "Every run is kept in the run history with what it ran on (batchscope runs):\n" +
         history_flags_help() + "The cost a prediction uses (docs/tuning.md):\n" +
         cost_flags_help() + "Serving options:\n" + cli::options_help() + lm_flags_help() +
         gen_bench_help();
}

namespace {

const Fail fail{"bench"};

#ifdef BATCHSCOPE_WITH_QT
// A target over HTTP: this process's listener (self-http) or a URL's server.
class HttpTargets final : public HttpFront {
 public:
  HttpTargets(std::optional<Url> url, std::string device, int connections, uint64_t seed,
              std::vector<std::string> bodies, std::optional<LengthDist> seq_len)
      : url_(std::move(url)),
        device_(std::move(device)),
        connections_(connections),
        seed_(seed),
        bodies_(std::move(bodies)),
        seq_len_(std::move(seq_len)) {}
  Expected<LoadTarget*> open(Engine* engine, const ModelMetadata& model,
                             const std::vector<Tensors>& varied) override {
    if (engine) {
      auto served = SelfHttp::serve(*engine, ServiceInfo{model, device_, build_version()});
      if (!served) return served.error();
      self_ = std::move(*served);
      url_ = self_->url();
    }
    if (bodies_.empty()) {
      for (const Tensors& in : varied) bodies_.push_back(infer_body(*url_, model, in));
    }
    target_ = std::make_unique<HttpTarget>(*url_, model, connections_, seed_, bodies_, seq_len_);
    if (Status s = target_->start(); !s) return s.error();
    return target_.get();
  }
  void close() override {
    if (target_) target_->stop();
    if (self_) self_->stop();
  }

 private:
  std::optional<Url> url_;
  std::string device_;
  int connections_;
  uint64_t seed_;
  std::vector<std::string> bodies_;
  std::optional<LengthDist> seq_len_;
  std::unique_ptr<SelfHttp> self_;
  std::unique_ptr<HttpTarget> target_;
};
#endif

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
    auto u = parse_url(target);
    if (!u) return fail("--target: " + u.error().message + "; use inproc, self-http or a URL");
    url = *u;
    url->bearer_token = token;
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
  if (!bodies.empty() && target == "inproc") {  // the same {"data": [...]} an HTTP target sends
    auto parsed = parse_simple_infer(bodies[0], (*bench)->metadata());
    if (auto* e = std::get_if<HttpError>(&parsed)) return fail("--payload: " + e->message);
    payload.push_back(std::get<Tensors>(parsed));
    if (Status s = check_inputs((*bench)->metadata(), payload[0]); !s)
      return fail("--payload: " + s.message());
  }
  // Qt is needed for the listener (self-http) and for drawing the plot.
  std::unique_ptr<QCoreApplication> app;
  if (!plot_out.empty()) {
    if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    app = std::make_unique<QApplication>(argc, argv);
  } else if (target == "self-http") {
    app = std::make_unique<QCoreApplication>(argc, argv);
  }
  HttpTargets front(url, r.model.synthetic ? "cpu" : r.model.device, connections, r.traffic.seed,
                    bodies, r.seq_len);
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
  if (stop_signal && stop_signal->stopped()) {
    TimePoint last = run.start;
    for (const RunRequest& q : run.requests) last = std::max(last, q.done);
    run.config.duration_s = std::chrono::duration<double>(last - run.start).count();
    stopped = stop_signal->note(run.config.duration_s, r.traffic.duration_s);
    std::printf("  stopped %s\n", stopped.c_str());
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

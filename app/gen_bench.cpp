// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "app/cli_args.h"
#include "app/model_flags.h"
#include "app/run_output.h"
#include "app/stop_signal.h"
#include "app/traffic_flags.h"
#include "common/build_info.h"
#include "model/lm_bench.h"
#ifdef BATCHSCOPE_WITH_QT
// Qt: the HTTP targets and the plot.
#include <QApplication>

#include "api/gen_http_target.h"
#include "api/self_http.h"
#include "ui/generation/gen_run_plot.h"
#endif

namespace batchscope {

std::string gen_bench_help() {
  return "Generative models (--model models/tiny_lm.pt, or --synthetic-lm S,T):\n"
         "  --prompt-len DIST         prompt bytes: fixed:N, uniform:LO,HI,\n"
         "                            lognormal:MEDIAN,SIGMA[,MAX] (default uniform:16,64)\n"
         "  --max-tokens DIST         tokens to generate, same forms\n"
         "                            (default lognormal:32,1,512)\n"
         "  --lengths-trace FILE      PROMPT_TOKENS,MAX_TOKENS per line, replayed in order\n"
         "  --trace FILE              a language-model trace: each request's arrival, prompt\n"
         "                            and output lengths (Azure, BurstGPT or Mooncake, told by\n"
         "                            its header; --trace-speed X replays it X times as fast).\n"
         "                            Requests that do not fit the model's context are clipped,\n"
         "                            with a count printed\n"
         "  --slo-ttft-ms X --slo-itl-ms Y   goodput: requests within both objectives\n"
         "  --plot FILE.png           TTFT and ITL fans, tokens/s and, in process, sequences\n"
         "                            and cache blocks per step over the run\n"
         "  --target predict          the run the engine would record, on a virtual clock\n"
         "                            (the real planner and paged cache), priced by\n"
         "                            --synthetic-lm's own cost, --cost FILE (as --cost-out\n"
         "                            writes it), or --calibration-seconds S (default 6) of\n"
         "                            this traffic live, kept per model and machine for the\n"
         "                            next prediction (--recalibrate measures it anew) and\n"
         "                            refined by every in-process run; not kept in the history\n"
         "  --cost-out FILE           in process: the model's step cost as the run measured\n"
         "                            it, S + T per token us (--synthetic-lm S,T replays it)\n"
         "                            and the median step by sequences decoded\n"
         "  Targets as above; over HTTP, OpenAI's streamed completions, every token\n"
         "  timestamped as it arrives. Requests run to max_tokens (ignore_eos).\n"
         "  --api chat|completions    POST /v1/chat/completions (the prompt as one user\n"
         "                            message) or /v1/completions; default: from the URL's\n"
         "                            path, completions for a bare http://HOST:PORT\n"
         "  --served-model NAME       the \"model\" to ask for (default: the first one the\n"
         "                            server lists at GET /v1/models)\n";
}

namespace {

const Fail fail{"bench"};

#ifdef BATCHSCOPE_WITH_QT
// OpenAI's routes over HTTP: this process's listener (self-http) or a URL's server.
class OpenAiTargets final : public LmHttpFront {
 public:
  OpenAiTargets(Url url, std::string api, std::string served, std::string device, int connections)
      : url_(std::move(url)),
        api_(std::move(api)),
        served_(std::move(served)),
        device_(std::move(device)),
        connections_(connections) {}
  Expected<GenTarget*> open(GenEngine* engine, GenRun& run) override {
    const std::string target = run.target;
    if (engine) {
      auto listening =
          SelfHttp::serve(*engine, GenServiceInfo{engine->info(), device_, build_version()});
      if (!listening) return listening.error();
      self_ = std::move(*listening);
      url_ = self_->url();
      if (served_.empty()) served_ = run.model;
    }
    const OpenAiApi api = settle_api_url(url_, api_);
    if (served_.empty()) served_ = served_model(url_);
    std::printf("  POST %s (%s)%s%s\n", url_.path.c_str(), openai_api_name(api),
                served_.empty() ? "" : ", model ", served_.c_str());
    if (api == OpenAiApi::kChat) run.target = target + " (chat)";
    if (!engine && !served_.empty()) run.model = served_;
    target_ = std::make_unique<GenHttpTarget>(url_, api, served_, connections_);
    if (Status s = target_->start(); !s) return s.error();
    return target_.get();
  }
  void close() override {
    if (target_) target_->stop();
    if (self_) self_->stop();
  }

 private:
  Url url_;
  std::string api_, served_, device_;
  int connections_;
  std::unique_ptr<SelfHttp> self_;
  std::unique_ptr<GenHttpTarget> target_;
};
#endif

}  // namespace

int run_gen_bench(int argc, char** argv, std::map<std::string, std::string> flags) {
  LmBenchRequest r;
  auto history = take_history_flags(flags);
  if (!history) return fail(history.error().message);
  r.history = *history;
  auto options = cli::take_options(flags);
  if (!options) return fail(options.error().message);
  r.options = *options;
  auto choice = take_lm_flags(flags, "models/tiny_lm.pt");
  if (!choice) return fail(choice.error().message);
  r.model = *choice;
  ArrivalSpec& spec = r.traffic;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 20;
  spec.duration_s = 10;
  GenWorkloadSpec& lengths = r.lengths;
  trace_sets_pattern(flags, spec);
  std::string api_flag, served, json_out, csv_prefix, trace_out, plot_out, cost_out;
  const std::string& target = r.target;
  CostChoice cost_choice;
  std::string token = std::getenv("BATCHSCOPE_TOKEN") ? std::getenv("BATCHSCOPE_TOKEN") : "";
  double slo_ttft = 0, slo_itl = 0;
  int connections = 256;
  if (Status s = cli::take_fields(
          flags,
          {cli::number("slo-ttft-ms", 0, 1e9, slo_ttft), cli::number("slo-itl-ms", 0, 1e9, slo_itl),
           cli::number("connections", 1, 4096, connections), cli::text("target", r.target),
           cli::text("api", api_flag), cli::text("served-model", served), cli::text("token", token),
           cli::text("json", json_out), cli::text("csv", csv_prefix),
           cli::text("trace-out", trace_out), cli::text("plot", plot_out),
           cli::text("cost-out", cost_out)});
      !s) {
    return fail(s.message());
  }
#ifdef BATCHSCOPE_WITH_QT
  if (!api_flag.empty()) {
    if (auto a = parse_openai_api(api_flag); !a) return fail(a.error().message);
  }
#endif
  for (auto& [name, value] : flags) {
    Status bad;
    if (!take_gen_length_flag(name, value, lengths, spec, bad) &&
        !take_arrival_flag(name, value, spec, bad) &&
        !take_cost_flag(name, value, cost_choice, bad)) {
      bad = invalid_argument("unknown option --" + name +
                             " for a generative model (see batchscope bench --help)");
    }
    if (!bad) return fail(bad.message());
  }
  if (Status s = check_gen_lengths(flags, lengths); !s) return fail(s.message());
  if (Status s = spec.validate(); !s) return fail(s.message());
  const std::string& cost_file = cost_choice.file;
  if (!cost_file.empty() && target != "predict") {
    return fail("--cost " + cost_file + " prices a prediction; add --target predict");
  }
  if (!cost_file.empty() && choice->synthetic_lm) {
    return fail("--cost " + cost_file + ": --synthetic-lm S,T is its own step cost");
  }
  const char* http_only =
      "--target inproc calls the engine directly (use --target self-http or a URL)";
  if (!api_flag.empty() && target == "inproc") {
    return fail("--api " + api_flag + " picks the HTTP route; " + http_only);
  }
  if (!served.empty() && target == "inproc") {
    return fail("--served-model " + served + " names the model asked for over HTTP; " + http_only);
  }
  if (target == "predict") {
    if (!plot_out.empty() || !cost_out.empty()) {
      return fail(std::string(plot_out.empty() ? "--cost-out" : "--plot") +
                  " needs a live run; --target predict writes --json, --csv and --trace-out");
    }
    return run_gen_predict(*choice, *options, spec, lengths, cost_choice,
                           GenPredictOutputs{json_out, csv_prefix, trace_out, slo_ttft, slo_itl});
  }
  if (!cost_out.empty() && target != "inproc") {
    return fail("--cost-out " + cost_out +
                " needs --target inproc: only the engine in this "
                "process records its steps (--target is '" +
                target + "')");
  }
#ifndef BATCHSCOPE_WITH_QT
  if (Status s = qt_free_check(target, plot_out, ""); !s) return fail(s.message());
  (void)argc, (void)argv, (void)connections, (void)served;
  LmHttpFront* http = nullptr;
#else
  Url url;
  if (target != "inproc" && target != "self-http") {
    auto u = parse_url(target);
    if (!u) return fail("--target: " + u.error().message + "; use inproc, self-http or a URL");
    url = *u;
    url.bearer_token = token;
  }
  OpenAiTargets front(url, api_flag, served, choice->device, connections);
  LmHttpFront* http = &front;
#endif
  const Say say = terminal_say();
  auto bench = LmBench::open(r, say);
  if (!bench) return fail(bench.error().message, 1);
#ifdef BATCHSCOPE_WITH_QT
  // Qt is needed for the listener (self-http) and for drawing the plot; one
  // application object serves both.
  std::unique_ptr<QCoreApplication> app;
  if (!plot_out.empty()) {
    if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    app = std::make_unique<QApplication>(argc, argv);
  } else if (target == "self-http") {
    app = std::make_unique<QCoreApplication>(argc, argv);
  }
#endif
  // SIGINT or SIGTERM ends it early, and it is kept.
  StopOnSignal stop_signal;
  auto ran = (*bench)->run(http, stop_signal.flag());
  if (!ran) return fail(ran.error().message, 1);
  const GenRun& measured = *ran;
  std::string stopped;
  double duration_s = spec.duration_s;
  if (stop_signal.stopped()) {
    TimePoint last = measured.start;
    for (const GenRequestResult& q : measured.requests) {
      if (q.finished != kNever) last = std::max(last, q.finished);
    }
    duration_s = std::chrono::duration<double>(last - measured.start).count();
    stopped = stop_signal.note(duration_s, spec.duration_s);
    std::printf("  stopped %s\n", stopped.c_str());
  }
  const GenSummary summary = summarize_gen(measured, slo_ttft, slo_itl);
  std::printf("%s", gen_summary_text(measured, summary).c_str());
  int rc = 0;
  auto save = [&](const std::string& path, const std::string& text, const char* what) {
    if (!save_export(path, text, what)) rc = 1;
  };
  save(json_out, gen_summary_json(measured, summary), "JSON summary");
  if (!csv_prefix.empty())
    save(csv_prefix + "_requests.csv", gen_requests_csv(measured), "CSV per request");
  save(trace_out, gen_trace_json(measured), "Chrome trace, one row of steps; open in Perfetto");
  (*bench)->keep(measured, gen_summary_json(measured, summary), duration_s, stopped);
  if (!cost_out.empty()) {
    auto cost = (*bench)->cost_out(measured);
    if (!cost) {
      std::cerr << "batchscope bench: " << cost.error().message << "\n";
      rc = 1;
    } else {
      save(cost_out, *cost, "step cost; --synthetic-lm S,T replays it");
    }
  }
#ifdef BATCHSCOPE_WITH_QT
  if (!plot_out.empty()) {
    if (Status s = write_gen_run_plot(measured, summary, plot_out); !s) {
      std::cerr << "batchscope bench: " << s.message() << "\n";
      rc = 1;
    } else {
      std::printf("  wrote %s (TTFT and ITL fans, tokens/s, sequences)\n", plot_out.c_str());
    }
  }
#endif
  return rc;
}

}  // namespace batchscope

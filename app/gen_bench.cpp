// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/gen_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "app/build_info.h"
#include "app/cli_args.h"
#include "app/gen_predict.h"
#include "app/history_setup.h"
#include "app/kept_run.h"
#include "app/lm_setup.h"
#include "app/run_output.h"
#include "app/stop_signal.h"
#include "app/traffic_flags.h"
#include "traffic/gen_load.h"
#include "traffic/llm_trace.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_cost.h"
#ifdef BATCHSCOPE_WITH_QT
// Qt: the HTTP targets and the plot.
#include <QApplication>

#include "api/generation_service.h"
#include "app/gen_http_target.h"
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

int fail(const std::string& message, int code = 2) {
  std::cerr << "batchscope bench: " << message << "\n";
  return code;
}

}  // namespace

int run_gen_bench(int argc, char** argv, std::map<std::string, std::string> flags) {
  auto history = take_history_flags(flags);
  if (!history) return fail(history.error().message);
  auto options = cli::take_options(flags);
  if (!options) return fail(options.error().message);
  auto choice = take_lm_flags(flags, "models/tiny_lm.pt");
  if (!choice) return fail(choice.error().message);
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 20;
  spec.duration_s = 10;
  GenLengthFlags lengths;
  trace_sets_pattern(flags, spec);
  std::string api_flag, served;
  std::string target = "inproc", json_out, csv_prefix, trace_out, plot_out, cost_out;
  GenCostChoice cost_choice;
  std::string token = std::getenv("BATCHSCOPE_TOKEN") ? std::getenv("BATCHSCOPE_TOKEN") : "";
  double slo_ttft = 0, slo_itl = 0;
  int connections = 256;
  for (auto& [name, value] : flags) {
    Status bad;
    if (take_gen_length_flag(name, value, lengths, spec, bad) ||
        take_arrival_flag(name, value, spec, bad)) {
    } else if (name == "slo-ttft-ms" || name == "slo-itl-ms") {
      auto v = cli::parse_number(name, value, 0, 1e9);
      if (!v)
        bad = v.error();
      else
        (name == "slo-ttft-ms" ? slo_ttft : slo_itl) = *v;
    } else if (name == "connections") {
      auto v = cli::parse_number(name, value, 1, 4096);
      if (!v)
        bad = v.error();
      else
        connections = static_cast<int>(*v);
    } else if (name == "target") {
      target = value;
    } else if (name == "api") {
      api_flag = value;
#ifdef BATCHSCOPE_WITH_QT
      if (auto a = parse_openai_api(value); !a) bad = a.error();
#endif
    } else if (name == "served-model") {
      served = value;
    } else if (name == "token") {
      token = value;
    } else if (name == "json") {
      json_out = value;
    } else if (name == "csv") {
      csv_prefix = value;
    } else if (name == "trace-out") {
      trace_out = value;
    } else if (name == "plot") {
      plot_out = value;
    } else if (name == "cost-out") {
      cost_out = value;
    } else if (name == "cost") {
      cost_choice.file = value;
    } else if (name == "recalibrate") {
      cost_choice.recalibrate = true;
    } else if (name == "calibration-seconds") {
      auto v = cli::parse_number(name, value, 0.5, 600);
      if (!v)
        bad = v.error();
      else
        cost_choice.calibration_s = *v;
    } else {
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
  if (!cost_file.empty() && choice->synthetic) {
    return fail("--cost " + cost_file + ": --synthetic-lm S,T is its own step cost");
  }
  if (!api_flag.empty() && target == "inproc") {
    return fail("--api " + api_flag +
                " picks the HTTP route; --target inproc calls the engine "
                "directly (use --target self-http or a URL)");
  }
  if (!served.empty() && target == "inproc") {
    return fail("--served-model " + served +
                " names the model asked for over HTTP; --target "
                "inproc calls the engine directly (use --target self-http or a URL)");
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
#endif

  const bool remote = target != "inproc" && target != "self-http";
  std::unique_ptr<GenEngine> engine;
  std::string model_name = "remote";
  if (!remote) {
    choice->lanes = static_cast<int>(options->num_lanes);
    auto lm = make_lm(*choice);
    if (!lm) return fail(lm.error().message, 1);
    model_name = lm->runner->info().name;
    engine =
        std::make_unique<GenEngine>(std::move(lm->runner), *options, nullptr, lm_factory(*choice));
    if (Status s = engine->start(); !s) return fail(s.message(), 1);
    const auto context = static_cast<uint32_t>(std::max(2, engine->info().context_length));
    if (const ContextFit fit = fit_to_context(lengths.replay, context); fit.any()) {
      std::printf("  trace: %s\n", fit.describe(context).c_str());
    }
  }
  GenWorkload workload = lengths.workload(spec.seed);
  SteadyClock clock;
  GenRun run;
  run.pattern = spec.describe();
  run.workload = lengths.describe();
  run.target = target;
  run.model = model_name;
  run.options = remote ? "the remote server's own" : describe_generation(*options);
  run.seed = spec.seed;
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
  std::printf("Batchscope bench: %s -> %s\n", run.pattern.c_str(), target.c_str());
  std::fflush(stdout);
  // The run is kept as it goes (app/kept_run.h): its requests, and our own
  // engine's steps, every half second. SIGINT or SIGTERM ends it early, and
  // it is kept.
  HistoryWriterPtr writer = open_history_writer(*history, "batchscope bench");
  RunConfig config;
  config.pattern = run.pattern;
  config.target = run.target;
  config.model = run.model;
  config.options = *options;
  config.seed = run.seed;
  config.duration_s = spec.duration_s;
  KeptRun kept(writer.get(), "generation", run.pattern + " -> " + run.target, config,
               run_context_json(choice->synthetic ? "" : choice->path, choice->device));
  StopOnSignal stop_signal;
  GenLoadOptions load;
  load.stop = stop_signal.flag();
  std::vector<StepRecord> steps_so_far;  // what the progress drained from the engine
  std::vector<GenRecord> drained;
  load.progress = kept.gen_progress([&]() -> std::vector<StepRecord> {
    if (!engine) return {};
    std::vector<StepRecord> steps;
    engine->drain(drained, steps);
    steps_so_far.insert(steps_so_far.end(), steps.begin(), steps.end());
    return steps;
  });
  GenRun measured;
  if (target == "inproc") {
    GenEngineTarget t(*engine);
    measured = run_gen_load(spec, workload, t, clock, load);
  } else {
#ifdef BATCHSCOPE_WITH_QT
    std::unique_ptr<GenerationService> service;
    std::unique_ptr<HttpServer> server;
    Url url;
    if (target == "self-http") {
      service = std::make_unique<GenerationService>(
          *engine, GenServiceInfo{engine->info(), choice->device, batchscope::build_version()});
      server = std::make_unique<HttpServer>(
          [&service](HttpRequest&& req, Responder r) { service->handle(std::move(req), r); });
      auto port = server->start("127.0.0.1", 0);
      if (!port) return fail(port.error().message, 1);
      url = Url{"127.0.0.1", *port, "/", ""};
      if (served.empty()) served = model_name;
    } else {
      auto u = parse_url(target);
      if (!u) return fail("--target: " + u.error().message + "; use inproc, self-http or a URL");
      url = *u;
      url.bearer_token = token;
    }
    const OpenAiApi api = settle_api_url(url, api_flag);
    if (served.empty()) served = served_model(url);
    std::printf("  POST %s (%s)%s%s\n", url.path.c_str(), openai_api_name(api),
                served.empty() ? "" : ", model ", served.c_str());
    if (api == OpenAiApi::kChat) run.target = target + " (chat)";
    if (remote && !served.empty()) run.model = served;
    GenHttpTarget t(url, api, served, connections);
    if (Status s = t.start(); !s) return fail(s.message(), 1);
    measured = run_gen_load(spec, workload, t, clock, load);
    t.stop();
    if (server) server->stop(1000);
#endif
  }
  measured.pattern = run.pattern;
  measured.workload = run.workload;
  measured.target = run.target;
  measured.model = run.model;
  measured.options = run.options;
  measured.seed = run.seed;
  if (engine) {
    engine->stop(std::chrono::seconds(1));
    std::vector<StepRecord> last;
    engine->drain(drained, last);
    measured.steps = std::move(steps_so_far);
    measured.steps.insert(measured.steps.end(), last.begin(), last.end());
    // A live run of the model here: its steps refine the kept step cost.
    refine_kept_steps(*choice, measured.steps, options->num_lanes);
  }
  std::string stopped;
  double duration_s = spec.duration_s;
  if (stop_signal.stopped()) {
    TimePoint last = measured.start;
    for (const GenRequestResult& q : measured.requests) {
      if (q.finished != kNever) last = std::max(last, q.finished);
    }
    duration_s = std::chrono::duration<double>(last - measured.start).count();
    char text[96];
    std::snprintf(text, sizeof text, ") after %.1f s of %g", duration_s, spec.duration_s);
    stopped = "by the user (" + stop_signal.signal_name() + text;
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
  kept.finish_generation(measured, gen_summary_json(measured, summary), duration_s, stopped);
  if (!cost_out.empty()) {
    auto cost = measure_step_cost(measured.steps, options->num_lanes);
    if (!cost) {
      std::cerr << "batchscope bench: --cost-out: " << cost.error().message << "\n";
      rc = 1;
    } else {
      std::printf("  step cost: %s over %llu steps\n", GenStepCost::of(*cost).text().c_str(),
                  static_cast<unsigned long long>(cost->steps));
      save(cost_out, step_cost_json(*cost, run.model, choice->device),
           "step cost; --synthetic-lm S,T replays it");
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

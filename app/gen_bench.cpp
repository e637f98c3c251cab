// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "app/cli_args.h"
#include "app/model_flags.h"
#include "app/run_output.h"
#include "app/stop_signal.h"
#include "app/traffic_flags.h"
#include "common/build_info.h"
#include "model/lm_bench.h"
#ifdef BATCHSCOPE_WITH_QT
// Qt: the HTTP targets and the plot.
#include <QCoreApplication>

#include "api/http_fronts.h"
#include "ui/generation/gen_run_plot.h"
#endif

namespace batchscope {

std::string gen_bench_help() {
  return "Generative models (--model models/tiny_lm.pt, or --synthetic-lm S,T):\n"
         "  --prompt-len DIST         prompt bytes: fixed:N, uniform:LO,HI,\n"
         "                            lognormal:MEDIAN,SIGMA[,MAX] (default uniform:16,64)\n"
         "  --max-tokens DIST         tokens to generate, same forms (default lognormal:32,1,512)\n"
         "  --lengths-trace FILE      PROMPT_TOKENS,MAX_TOKENS per line, replayed in order\n"
         "  --trace FILE              a language-model trace's arrivals and lengths (Azure,\n"
         "                            BurstGPT or Mooncake; --trace-speed X), clipped to the\n"
         "                            model's context\n"
         "  --slo-ttft-ms X --slo-itl-ms Y   goodput: requests within both objectives\n"
         "  --plot FILE.png           TTFT and ITL fans, tokens/s, sequences and cache\n"
         "  --target predict          the run on a virtual clock (the real planner and paged\n"
         "                            cache), priced by --synthetic-lm's own cost, --cost FILE,\n"
         "                            or the model's kept step cost (made from\n"
         "                            --calibration-seconds S of this traffic live, default 6;\n"
         "                            --recalibrate; refined by every in-process run)\n"
         "  --cost-out FILE           in process: the step cost the run measured, S + T per\n"
         "                            token us, and the median step by sequences decoded\n"
         "  Over HTTP, OpenAI's streamed completions, each token timestamped as it arrives;\n"
         "  requests run to max_tokens (ignore_eos).\n"
         "  --api chat|completions    the route (default: from the URL's path)\n"
         "  --served-model NAME       the model asked for (default: the server's first)\n" +
         plan_flags_help();
}

namespace {

const Fail fail{"bench"};

}  // namespace

int run_gen_bench(int argc, char** argv, std::map<std::string, std::string> flags) {
  LmBenchRequest r;
  auto history = take_history_flags(flags);
  if (!history) return fail(history.error().message);
  r.history = *history;
  auto options = cli::take_options(flags);
  if (!options) return fail(options.error().message);
  r.options = *options;
  auto plan = take_plan_flags(flags);
  if (!plan) return fail(plan.error().message);
  r.plan = *plan;
  auto choice = take_lm_flags(flags, "models/tiny_lm.pt");
  if (!choice) return fail(choice.error().message);
  r.model = *choice;
  ArrivalSpec& spec = r.traffic;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 20;
  spec.duration_s = 10;
  trace_sets_pattern(flags, spec);
  std::string api_flag, served, json_out, csv_prefix, trace_out, plot_out, cost_out;
  const std::string& target = r.target;
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
    if (!take_gen_length_flag(name, value, r.lengths, spec, bad) &&
        !take_arrival_flag(name, value, spec, bad) && !take_cost_flag(name, value, r.cost, bad)) {
      bad = invalid_argument("unknown option --" + name +
                             " for a generative model (see batchscope bench --help)");
    }
    if (!bad) return fail(bad.message());
  }
  if (Status s = check_gen_lengths(flags, r.lengths); !s) return fail(s.message());
  if (Status s = spec.validate(); !s) return fail(s.message());
  if (r.plan && target != "predict") {
    return fail("--model-config " + r.plan->model_config +
                " plans a model for a GPU that is not here; bench predicts it: add --target "
                "predict");
  }
  const std::string& cost_file = r.cost.file;
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
  if (target == "predict" && (!plot_out.empty() || !cost_out.empty())) {
    return fail(std::string(plot_out.empty() ? "--cost-out" : "--plot") +
                " needs a live run; --target predict writes --json, --csv and --trace-out");
  }
  if (!cost_out.empty() && target != "inproc") {
    return fail("--cost-out " + cost_out +
                " needs --target inproc: only the engine in this "
                "process records its steps (--target is '" +
                target + "')");
  }
  int rc = 0;
  // The summary and files of every run, live or predicted (the JSON is kept too).
  GenSummary summary;
  std::string summary_json;
  // A prediction's band goes beside its summary.
  auto report = [&](const GenRun& run, const GenPredictionBand* band) {
    summary = summarize_gen(run, slo_ttft, slo_itl);
    summary_json = gen_summary_json(run, summary);
    if (band) summary_json.insert(summary_json.rfind('}'), ",\"band\":" + band->json());
    std::printf("%s%s", gen_summary_text(run, summary).c_str(), band ? band->text().c_str() : "");
    auto save = [&](const std::string& path, const std::string& text, const char* what) {
      if (!save_export(path, text, what)) rc = 1;
    };
    save(json_out, summary_json, "JSON summary");
    if (!csv_prefix.empty())
      save(csv_prefix + "_requests.csv", gen_requests_csv(run), "CSV per request");
    save(trace_out, gen_trace_json(run), "Chrome trace, one row of steps; open in Perfetto");
  };
  const Say say = terminal_say();
  if (target == "predict") {
    GenRun predicted;
    GenPredictionBand band;
    if (auto e = predict_lm_bench(r, say, predicted, &band)) {
      return fail(e->message, e->refused ? 2 : 1);
    }
    report(predicted, &band);
    return rc;
  }
#ifndef BATCHSCOPE_WITH_QT
  if (Status s = qt_free_check(target, plot_out, ""); !s) return fail(s.message());
  (void)argc, (void)argv, (void)connections, (void)served;
  LmHttpFront* http = nullptr;
#else
  Url url;
  if (target != "inproc" && target != "self-http") {
    auto u = target_url(target, token);
    if (!u) return fail(u.error().message);
    url = *u;
  }
  LmOpenAiFront front(url, api_flag, served, choice->device, connections,
                      [](const std::string& line) { std::printf("  %s\n", line.c_str()); });
  LmHttpFront* http = &front;
#endif
  auto bench = LmBench::open(r, say);
  if (!bench) return fail(bench.error().message, 1);
#ifdef BATCHSCOPE_WITH_QT
  auto app = run_application(argc, argv, !plot_out.empty(), target == "self-http");
#endif
  // SIGINT or SIGTERM ends it early, and it is kept.
  StopOnSignal stop_signal;
  auto ran = (*bench)->run(http, stop_signal.flag());
  if (!ran) return fail(ran.error().message, 1);
  const GenRun& measured = *ran;
  TimePoint last = measured.start;
  for (const GenRequestResult& q : measured.requests) {
    if (q.finished != kNever) last = std::max(last, q.finished);
  }
  double duration_s = spec.duration_s;
  const std::string stopped = stop_signal.ended(measured.start, last, duration_s);
  report(measured, nullptr);
  (*bench)->keep(measured, summary_json, duration_s, stopped);
  if (!cost_out.empty()) {
    auto cost = (*bench)->cost_out(measured);
    if (!cost) {
      std::cerr << "batchscope bench: " << cost.error().message << "\n";
      rc = 1;
    } else if (!save_export(cost_out, *cost, "step cost; --synthetic-lm S,T replays it")) {
      rc = 1;
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

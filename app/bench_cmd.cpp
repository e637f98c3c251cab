// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/bench_cmd.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "app/build_info.h"
#include "app/cli_args.h"
#include "app/cost_setup.h"
#include "app/gen_bench.h"
#include "app/history_setup.h"
#include "app/kept_run.h"
#include "app/lm_setup.h"
#include "app/model_setup.h"
#include "app/run_output.h"
#include "app/stop_signal.h"
#include "app/traffic_flags.h"
#include "traffic/inproc_run.h"
#include "traffic/load_driver.h"
#include "traffic/varied_inputs.h"
#include "tuning/adaptive_planner.h"
#include "tuning/cost_calibration.h"
#include "tuning/predict_bounds.h"
#include "tuning/predictor.h"
#ifdef BATCHSCOPE_WITH_QT
// Qt: the HTTP targets and the plot. A build without Qt runs the in-process
// engine and the predictor only.
#include <QApplication>

#include "api/http_target.h"
#include "api/infer_json.h"
#include "api/inference_service.h"
#include "http/http_server.h"
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

int fail(const std::string& message, int code = 2) {
  std::cerr << "batchscope bench: " << message << "\n";
  return code;
}

void print_summary(const RunData& run, const RunSummary& s) {
  std::printf("\n%s -> %s, model %s\n", run.config.pattern.c_str(), run.config.target.c_str(),
              run.config.model.c_str());
  if (run.config.target == "predict") {
    std::printf("  predicted: %s\n", describe(run.config.options).c_str());
  } else if (run.config.target != "inproc" && run.config.target != "self-http") {
    std::printf("  (serving options are the remote server's own)\n");
  } else {
    std::printf("  %s\n", describe(run.config.options).c_str());
  }
  std::printf("  sent %llu   ok %llu   rejected %llu   timed out %llu   errors %llu\n",
              static_cast<unsigned long long>(s.sent), static_cast<unsigned long long>(s.ok),
              static_cast<unsigned long long>(s.rejected),
              static_cast<unsigned long long>(s.timed_out),
              static_cast<unsigned long long>(s.errors));
  std::printf("  throughput   %.1f req/s over %.2f s\n", s.throughput_rps, s.duration_s);
  const RunLatency& l = s.latency;
  std::printf(
      "  latency ms   p50 %.3f  p90 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f\n",
      l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.p999_ms, l.max_ms, l.mean_ms);
  std::printf("  send lag ms  p50 %.3f  p99 %.3f  max %.3f\n", s.lag_p50_ms, s.lag_p99_ms,
              s.lag_max_ms);
  if (!s.batch_histogram.empty()) {
    std::printf("  batch size   mean %.2f  (", s.batch_mean);
    int shown = 0;
    for (auto it = s.batch_histogram.rbegin(); it != s.batch_histogram.rend() && shown < 6;
         ++it, ++shown) {
      std::printf("%s%u: %llu", shown ? ", " : "", it->first,
                  static_cast<unsigned long long>(it->second));
    }
    std::printf("%s)\n", s.batch_histogram.size() > 6 ? ", ..." : "");
    std::printf("  queue depth  mean %.2f  max %u\n", s.depth_mean, s.depth_max);
  }
  if (s.padded_length > 0) {
    std::printf("  padding      waste %.1f%%  (%llu real of %llu padded positions)\n",
                100.0 * s.padding_waste, static_cast<unsigned long long>(s.real_length),
                static_cast<unsigned long long>(s.padded_length));
  }
}

}  // namespace

int run_bench(int argc, char** argv, const std::vector<std::string>& args) {
  auto flags = cli::parse_flags(args, {"no-history", "recalibrate"});
  if (!flags) return fail(flags.error().message);
  // --api and --served-model are about OpenAI's generation routes.
  if (flags->count("api") || flags->count("served-model") ||
      wants_lm(*flags, "models/linear_128x64.pt")) {
    return run_gen_bench(argc, argv, *flags);
  }
  auto history = take_history_flags(*flags);
  if (!history) return fail(history.error().message);
  const bool batch_given = flags->count("max-batch-size") > 0;
  auto options = cli::take_options(*flags);
  if (!options) return fail(options.error().message);

  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 1000;
  spec.duration_s = 10;
  auto choice = take_model_flags(*flags, "models/linear_128x64.pt");
  if (!choice) return fail(choice.error().message);
  std::string target = "inproc";
  std::string token = std::getenv("BATCHSCOPE_TOKEN") ? std::getenv("BATCHSCOPE_TOKEN") : "";
  std::string json_out, csv_prefix, trace_out, plot_out, payload_file, cost_out, plan_file;
  CostChoice cost_choice;
  int connections = 64;
  std::optional<LengthDist> seq_len;
  double window_s = 0;  // 0: about 40 windows over the run
  trace_sets_pattern(*flags, spec);
  for (auto& [name, value] : *flags) {
    Status bad;
    auto set = [&](double lo, double hi, auto& field) {
      bad = cli::read_number(name, value, lo, hi, field);
    };
    if (take_arrival_flag(name, value, spec, bad) ||
        take_cost_flag(name, value, cost_choice, bad)) {
    } else if (name == "target")
      target = value;
    else if (name == "token")
      token = value;
    else if (name == "connections")
      set(1, 4096, connections);
    else if (name == "payload")
      payload_file = value;
    else if (name == "seq-len") {
      auto d = LengthDist::parse(value, "--seq-len");
      if (!d)
        bad = d.error();
      else
        seq_len = *d;
    } else if (name == "plan-cost")
      plan_file = value;
    else if (name == "cost-out")
      cost_out = value;
    else if (name == "window")
      set(0.001, 3600, window_s);
    else if (name == "json")
      json_out = value;
    else if (name == "csv")
      csv_prefix = value;
    else if (name == "trace-out")
      trace_out = value;
    else if (name == "plot")
      plot_out = value;
    else
      bad = invalid_argument("unknown option --" + name + " (see batchscope bench --help)");
    if (!bad) return fail(bad.message());
  }
  if (Status s = spec.validate(); !s) return fail(s.message());

  const bool predicted = target == "predict";
  const bool remote = target != "inproc" && target != "self-http" && !predicted;
  const std::string& cost_file = cost_choice.file;
  // A live run would not read --cost: say so rather than ignore it.
  if (!cost_file.empty() && !predicted) {
    return fail("--cost " + cost_file + " is read by --target predict alone; this run has " +
                "target " + target + " (--plan-cost FILE makes the adaptive strategy plan on a " +
                "cost file)");
  }
  if (!plan_file.empty() && (remote || options->strategy != StrategyKind::kAdaptive)) {
    return fail("--plan-cost " + plan_file + " is read by the adaptive strategy of an inproc, " +
                "self-http or predict run; this run has target " + target + " and strategy " +
                strategy_name(options->strategy));
  }
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
  // An existing cost file is refined by this run, so it is read first: a
  // file that is not one is refused before the run, not after it.
  std::optional<CostModel> refining;
  if (!cost_out.empty()) {
    if (remote || predicted) {
      return fail("--cost-out " + cost_out + " needs --target inproc or self-http, whose " +
                  "batches this process runs and times");
    }
    if (std::ifstream(cost_out).good()) {
      auto before = CostModel::from_file(cost_out);
      if (!before) {
        return fail("--cost-out: " + before.error().message +
                    "; it would be refined by this run, so give a new path or a cost file");
      }
      refining = *before;
    }
  }
  if (!batch_given) fit_default_batch(*choice, *options);
  auto model = make_model(*choice, *options, !remote && !predicted);
  if (!model) return fail(model.error().message, 1);
  std::vector<std::string> bodies;
  if (!payload_file.empty()) {
    std::ifstream in(payload_file);
    if (!in) return fail("--payload: cannot read " + payload_file);
    std::ostringstream text;
    text << in.rdbuf();
    bodies.push_back(text.str());
  }
  // A model whose inputs vary in length: requests of lengths drawn from --seq-len.
  std::vector<Tensors> varied;
  if (seq_len && !has_variable_inputs(model->metadata)) {
    return fail("--seq-len " + seq_len->describe() + ": model '" + model->metadata.name +
                "' has no input that varies in length");
  }
  if (has_variable_inputs(model->metadata) && bodies.empty() && !predicted) {
    const LengthDist lengths = seq_len.value_or(default_lengths(model->metadata));
    varied = varied_inputs(model->metadata, lengths, spec.seed, kVariedPool);
    std::printf("lengths: %s\n", lengths.describe().c_str());
  }

#ifdef BATCHSCOPE_WITH_QT
  // Qt is needed for the listener (self-http) and for drawing the plot.
  std::unique_ptr<QCoreApplication> app;
  if (!plot_out.empty()) {
    if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    app = std::make_unique<QApplication>(argc, argv);
  } else if (target == "self-http") {
    app = std::make_unique<QCoreApplication>(argc, argv);
  }
#endif

  RunConfig cfg;
  cfg.pattern = spec.describe();
  cfg.target = target;
  cfg.model = model->metadata.name;
  cfg.options = *options;
  cfg.duration_s = spec.duration_s;
  cfg.seed = spec.seed;

  AdaptivePlanner planner = make_adaptive_plan;
  if (plan_file.empty() && !predicted && !remote && options->strategy == StrategyKind::kAdaptive) {
    planner = adaptive_planner_for(*choice, "bench");
  }
  if (!plan_file.empty() && !predicted) {
    auto cost = CostModel::from_file(plan_file);
    if (!cost) return fail("--plan-cost: " + cost.error().message);
    std::printf("adaptive plans on %s (%s)\n", plan_file.c_str(), cost->describe().c_str());
    planner = plan_on_cost(std::move(*cost));
  }
  SteadyClock clock;
  RunData run;
  // A measured run is kept as it goes (app/kept_run.h); a predicted one at
  // its end. SIGINT or SIGTERM ends a measured run early, and it is kept.
  HistoryWriterPtr writer = open_history_writer(*history, "batchscope bench");
  const std::string context =
      run_context_json(choice->synthetic ? "" : choice->path, choice->device);
  KeptRun kept(predicted ? nullptr : writer.get(), "bench", cfg.pattern + " -> " + cfg.target, cfg,
               context);
  std::optional<StopOnSignal> stop_signal;
  if (!predicted) stop_signal.emplace();
  const std::atomic<bool>* stop = stop_signal ? stop_signal->flag() : nullptr;
  if (predicted) {
    // With --plan-cost, the predictor plans on the cost it predicts with.
    if (!plan_file.empty() && !cost_file.empty() && plan_file != cost_file) {
      return fail("--plan-cost " + plan_file + " and --cost " + cost_file +
                  " differ; with --target predict the adaptive strategy plans on the cost it "
                  "is predicted with, so give one file");
    }
    CostChoice use = cost_choice;
    if (!plan_file.empty()) use.file = plan_file;
    auto cost = prediction_cost(*choice, *options, {options->num_lanes}, options->max_batch_size,
                                use, "bench");
    if (!cost) return fail(cost.error().message, 1);
    std::printf("Batchscope bench: %s -> predicted (%s)\n  cost: %s\n", cfg.pattern.c_str(),
                cost->cost.describe().c_str(), cost->source.c_str());
    std::printf(
        "  capacity: %.0f req/s with %u lane(s) and batches up to %u (t(b) and the "
        "lanes' turnaround)\n",
        capacity_rps(cost->cost, options->num_lanes, options->max_batch_size), options->num_lanes,
        options->max_batch_size);
    std::fflush(stdout);
    PredictSpec ps;
    ps.arrivals = bounded_for_prediction(spec);
    ps.options = *options;
    ps.cost = cost->cost;
    // The adaptive strategy plans on the cost it is predicted with, as a
    // live engine plans on the kept cost (or --plan-cost).
    ps.plan_on_cost = true;
    ps.lengths = prediction_lengths(model->metadata, seq_len, spec.seed, cost->cost, "bench");
    if (!ps.lengths.empty()) {
      std::printf("  lengths: %s\n",
                  seq_len.value_or(default_lengths(model->metadata)).describe().c_str());
    }
    run = predict_run(ps);
    run.config = cfg;
  } else if (target == "inproc") {
    std::vector<Tensors> inputs;
#ifdef BATCHSCOPE_WITH_QT
    if (!bodies.empty()) {  // the same {"data": [...]} body an HTTP target would send
      auto parsed = parse_simple_infer(bodies[0], model->metadata);
      if (auto* e = std::get_if<HttpError>(&parsed)) return fail("--payload: " + e->message);
      inputs.push_back(std::get<Tensors>(parsed));
      if (Status s = check_inputs(model->metadata, inputs[0]); !s)
        return fail("--payload: " + s.message());
    }
#endif
    if (inputs.empty()) inputs = std::move(varied);
    std::printf("Batchscope bench: %s -> inproc\n", cfg.pattern.c_str());
    std::fflush(stdout);
    auto r = run_inproc(model->factory, model->metadata, *options, planner, spec, cfg,
                        std::move(inputs), stop, kept.progress());
    if (!r) return fail(r.error().message, 1);
    run = std::move(*r);
  } else {
#ifdef BATCHSCOPE_WITH_QT
    std::unique_ptr<Engine> engine;
    std::unique_ptr<InferenceService> service;
    std::unique_ptr<HttpServer> server;
    if (target == "self-http") {
      engine = std::make_unique<Engine>(model->factory, *options);
      bind_model(*engine, model->metadata);
      engine->set_adaptive_planner(planner);
      if (Status s = engine->start(); !s) return fail(s.message(), 1);
      service = std::make_unique<InferenceService>(
          *engine, ServiceInfo{model->metadata, model->device, batchscope::build_version()});
      server = std::make_unique<HttpServer>(
          [&service](HttpRequest&& req, Responder r) { service->handle(std::move(req), r); });
      service->set_server(server.get());
      auto port = server->start("127.0.0.1", 0);
      if (!port) return fail(port.error().message, 1);
      // /infer takes one input; a model with more is sent KServe v2.
      url =
          Url{"127.0.0.1", *port,
              model->metadata.inputs.size() == 1 ? "/infer"
                                                 : "/v2/models/" + model->metadata.name + "/infer",
              ""};
    }
    if (bodies.empty()) {
      for (const Tensors& in : varied) bodies.push_back(infer_body(*url, model->metadata, in));
    }
    HttpTarget t(*url, model->metadata, connections, spec.seed, bodies, seq_len);
    if (Status s = t.start(); !s) return fail(s.message(), 1);
    std::printf("Batchscope bench: %s -> %s\n", cfg.pattern.c_str(), target.c_str());
    std::fflush(stdout);
    LoadOptions load;
    load.stop = stop;
    // Our own engine's batches go to the history with the requests.
    std::optional<EngineRecords> records;
    if (engine) records.emplace(*engine);
    if (ProgressFn keep = kept.progress()) {
      load.progress = [&, keep](RunProgress&& p) {
        if (records) records->hand(p);
        keep(std::move(p));
      };
    }
    run = run_load(spec, t, cfg, clock, load);
    t.stop();
    if (server) server->stop(1000);
    if (engine) {
      engine->stop(StopMode::kDrain);
      records->join(run);
    }
#endif
  }

  // A run stopped early lasted until its last answer.
  std::string stopped;
  if (stop_signal && stop_signal->stopped()) {
    TimePoint last = run.start;
    for (const RunRequest& r : run.requests) last = std::max(last, r.done);
    run.config.duration_s = std::chrono::duration<double>(last - run.start).count();
    char text[96];
    std::snprintf(text, sizeof text, ") after %.1f s of %g", run.config.duration_s,
                  spec.duration_s);
    stopped = "by the user (" + stop_signal->signal_name() + text;
    std::printf("  stopped %s\n", stopped.c_str());
  }
  if (window_s <= 0) window_s = std::clamp(run.config.duration_s / 40.0, 0.1, 10.0);
  const RunSummary summary = summarize_run(
      run, std::chrono::duration_cast<Duration>(std::chrono::duration<double>(window_s)));
  print_summary(run, summary);

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
  if (writer && predicted) {
    keep_run(*writer, "bench", run, summary_json, context);
  } else if (writer) {
    kept.finish(run, summary_json, run.config.duration_s, stopped);
  }
  // An in-process run of the model refines its kept cost on this machine
  // (not where lengths vary: refine_cost_cache).
  if (target == "inproc" && bodies.empty()) {
    refine_cost_cache(*choice, run, options->num_lanes, "bench");
  }
  if (!cost_out.empty()) {
    // A refinement with several lanes refines their curve: the batches that
    // ran beside the others.
    std::optional<CostModel> kept;
    if (has_lengths(run.batches)) kept = kept_cost(*choice);
    auto observed = CostModel::from_run(run, 5, refining ? options->num_lanes : 1u,
                                        kept ? kept->length_grid() : LengthGrid{});
    if (!observed) {
      std::cerr << "batchscope bench: --cost-out: " << observed.error().message << "\n";
      rc = 1;
    } else if (!refining) {
      save(cost_out, observed->to_json(), "t(b) as the engine ran it; --cost reads it");
    } else {
      std::string seen;
      for (const CostPoint& p : observed->points()) {
        if (!seen.empty()) seen += ", ";
        seen += std::to_string(p.batch);
      }
      const uint32_t lanes = options->num_lanes;
      const CostModel refined = refining->calibrated(*observed, lanes);
      std::printf("  refined %s with t(b) at b = %s as %u lane(s) ran it:\n", cost_out.c_str(),
                  seen.c_str(), lanes);
      for (const CostPoint& p : observed->points()) {
        const double was = refining->cost_us(p.batch, lanes);
        std::printf("    b = %u: %.1f us, was %.1f (%+.0f%%)\n", p.batch, p.median_us, was,
                    was > 0 ? 100.0 * (p.median_us / was - 1.0) : 0.0);
      }
      save(cost_out, refined.to_json(), "t(b) refined by this run; --cost reads it");
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

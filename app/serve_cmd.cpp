// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <QCoreApplication>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "api/generation_service.h"
#include "api/inference_service.h"
#include "api/options_json.h"
#include "app/cli_args.h"
#include "app/model_flags.h"
#include "app/run_output.h"
#include "batching/engine.h"
#include "common/build_info.h"
#include "common/file_text.h"
#include "generation/gen_engine.h"
#include "http/http_server.h"
#include "model/bench_run.h"
#include "model/history_keeping.h"
#include "model/serve_recording.h"
#include "runs/history_writer.h"

namespace batchscope {

std::string serve_help() {
  return "usage: batchscope serve [--model PATH | --synthetic A_US,C_US] [--config FILE]\n"
         "                        [--host 127.0.0.1] [--port 8000] [--device cpu|cuda:N]\n"
         "                        [--warmup auto|doubling|every] [--token TOKEN]\n"
         "                        [--no-remote-config] [--plan-cost FILE] [listener limits]\n"
         "                        [serving options]\n"
         "Serves a model over HTTP: POST /infer, KServe v2 under /v2, GET /metrics (Prometheus),\n"
         "GET /health, GET|PUT /v1/config. Default model: models/linear_128x64.pt; --synthetic\n"
         "costs A + C*b us per batch of b. --config reads options as JSON, flags override it.\n"
         "Prints 'listening on http://HOST:PORT' once warm; SIGINT or SIGTERM stops accepting,\n"
         "finishes every admitted request, and exits 0. The adaptive strategy plans on the\n"
         "model's kept cost here, or on --plan-cost FILE.\n"
         "Access and limits (docs/http.md):\n"
         "  --token TOKEN             every route but the health checks needs 'Authorization:\n"
         "                            Bearer TOKEN' (default: $BATCHSCOPE_TOKEN)\n"
         "  --no-remote-config        PUT /v1/config answers 403; GET still reads\n"
         "  --max-body-bytes N        largest request body, 413 beyond (default 16777216)\n"
         "  --header-timeout-ms N     headers must arrive within this, 408 after (default 10000)\n"
         "  --min-body-rate N         bytes/s a body must average after 5 s (default 1024; 0: "
         "any)\n"
         "  --idle-timeout-ms N       an idle keep-alive connection closes after this (60000)\n"
         "  --max-connections N       open at once (default: ulimit -n less a reserve); beyond,\n"
         "                            the longest-idle closes or the new one gets 503\n" +
         record_flags_help() + "Serving options:\n" + cli::options_help() + lm_flags_help() +
         python_flags_help() +
         "A generative model serves OpenAI's POST /v1/chat/completions and /v1/completions\n"
         "(\"stream\": true for Server-Sent Events) and Triton's /v2/models/NAME/generate and\n"
         "/generate_stream instead.\n";
}

namespace {

constexpr const char* kDefaultModel = "models/linear_128x64.pt";

const Fail fail{"serve"};

// The listener flags over `o`, removing them from `flags`.
Status take_listener_flags(std::map<std::string, std::string>& flags, HttpServerOptions& o) {
  if (Status s = cli::take_fields(
          flags, {cli::number("max-body-bytes", 1, 1u << 30, o.limits.max_body_bytes),
                  cli::number("header-timeout-ms", 1, 3.6e6, o.header_timeout_ms),
                  cli::number("min-body-rate", 0, 1e12, o.min_body_bytes_per_s),
                  cli::number("idle-timeout-ms", 1, 3.6e6, o.idle_timeout_ms),
                  cli::max_connections(o.max_connections)});
      !s) {
    return s;
  }
  return Status::Ok();
}

// Where and how a model is served, whichever its kind.
struct Serving {
  ServiceAccess access;
  HttpServerOptions listener;
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  ServeRecordChoice record;
  sigset_t stop_signals;
};

// Returns once SIGINT or SIGTERM (blocked in `stop_signals`) arrives,
// calling `every_second` while it waits.
void wait_for_stop_signal(const sigset_t& stop_signals, const std::function<void()>& every_second) {
  const timespec second{1, 0};
  for (;;) {
    const int sig = sigtimedwait(&stop_signals, nullptr, &second);
    if (sig == SIGINT || sig == SIGTERM) return;
    every_second();
  }
}

// `service` over `engine` (started) behind the listener until SIGINT or
// SIGTERM, recording the clients when asked (`header` the runs' model,
// options and context); then it drains: the engine finishes what it
// admitted (`stop_engine`), the listener what it read. The listener's
// counters, or the error that kept it from starting.
template <class Service>
Expected<HttpCounters> serve_until_stopped(Service& service, const Serving& s, HistoryRun header,
                                           const std::function<void()>& stop_engine) {
  service.set_access(s.access);
  HttpServer server(
      [&service](HttpRequest&& req, Responder r) { service.handle(std::move(req), r); },
      s.listener);
  service.set_server(&server);
  auto bound = server.start(s.host, s.port);
  if (!bound) return bound.error();
  if (!is_loopback_host(s.host)) std::cerr << exposure_warning(s.host, s.access) << "\n";
  // What the clients send, kept as runs of kind serve (model/serve_recording.h).
  header.config.target = "http://" + s.host + ":" + std::to_string(*bound);
  SteadyClock clock;
  auto recorder = open_serve_recorder(s.record, std::move(header), clock.now(), terminal_say());
  if (recorder) {
    service.set_records_sink([&recorder, &clock](const auto&... records) {
      if (!recorder->going()) return;
      if constexpr (sizeof...(records) == 1) {
        recorder->recording->add(records..., clock.now());
      } else {
        recorder->recording->add_generation(records..., clock.now());
      }
    });
    if (s.record.options.bodies) {
      service.set_body_sink([&recorder, &clock](std::string_view route, const std::string& body) {
        if (recorder->going()) recorder->recording->add_body(route, body, clock.now());
      });
    }
    std::printf("recording the clients' requests%s into %s\n",
                s.record.options.bodies ? " and their bodies" : "",
                recorder->writer->path().c_str());
  }
  std::printf("listening on http://%s:%u\n", s.host.c_str(), *bound);
  std::fflush(stdout);

  wait_for_stop_signal(s.stop_signals,
                       [&] { server.post([&service] { service.poll_metrics(); }); });
  service.shutting_down();
  stop_engine();
  server.stop();
  if (recorder) {
    service.poll_metrics();  // the last records; the listener has stopped
    recorder->finish(clock.now());
  }
  return server.counters();
}

unsigned long long u(uint64_t v) { return static_cast<unsigned long long>(v); }

// The exact accounting a test of stopping under load checks: every request
// read was answered (written, or dropped because its client left), and
// every request the engine admitted completed.
void print_accounting(const HttpCounters& h, uint64_t admitted, uint64_t completed) {
  std::printf(
      "accounting: http received %llu = written %llu + dropped %llu + unanswered %llu; "
      "engine admitted %llu = completed %llu\n",
      u(h.parsed), u(h.written), u(h.dropped), u(h.parsed - h.written - h.dropped), u(admitted),
      u(completed));
}

int serve_generation(int argc, char** argv, const ModelChoice& choice, const Options& options,
                     const Serving& s) {
  auto model = LocalModel::open(choice);
  if (!model) return fail(model.error().message, 1);
  auto lm = model->lm(static_cast<int>(options.num_lanes));
  if (!lm) return fail(lm.error().message, 1);
  GenServiceInfo info{lm->runner->info(), lm->device, batchscope::build_version()};
  QCoreApplication app(argc, argv);
  GenEngine engine(std::move(lm->runner), options, nullptr, lm->more_lanes);
  if (Status st = engine.start(); !st) return fail(st.message(), 1);
  GenerationService service(engine, info);
  std::printf("serving %s (generative, %s scheduling) on %s\n", info.model.name.c_str(),
              scheduling_name(options.scheduling), info.device.c_str());
  HistoryRun header;
  header.model = header.config.model = info.model.name;
  header.config.pattern = HistoryRun::kServedGenerationPattern;
  header.config.options = options;
  header.context = run_context_json(choice.file(), lm->device);
  auto h = serve_until_stopped(service, s, std::move(header),
                               [&engine] { engine.stop(std::chrono::seconds(10)); });
  if (!h) return fail(h.error().message, 1);
  const GenStatus g = engine.status();
  std::printf("stopped: %llu requests answered over HTTP, %llu generations, %llu output tokens\n",
              u(h->written), u(g.completed), u(g.output_tokens));
  print_accounting(*h, g.admitted, g.completed);
  return 0;
}

}  // namespace

int run_serve(int argc, char** argv, const std::vector<std::string>& args) {
  // Signals go to sigtimedwait(), in every thread started from here on.
  Serving s;
  sigemptyset(&s.stop_signals);
  sigaddset(&s.stop_signals, SIGINT);
  sigaddset(&s.stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &s.stop_signals, nullptr);

  std::vector<std::string> argv_flags = args;
  allow_bare_record(argv_flags);
  auto flags = cli::parse_flags(argv_flags, {"no-remote-config", "no-history", "record-bodies"});
  if (!flags) return fail(flags.error().message);
  auto record = take_record_flags(*flags);
  if (!record) return fail(record.error().message);
  s.record = *record;
  if (const char* env = std::getenv("BATCHSCOPE_TOKEN")) s.access.token = env;
  bool local_config_only = false;
  std::string config_file, plan_file;
  if (Status st = cli::take_fields(
          *flags,
          {cli::text("token", s.access.token), cli::on("no-remote-config", local_config_only),
           cli::text("host", s.host), cli::number("port", 0, 65535, s.port),
           cli::text("config", config_file), cli::text("plan-cost", plan_file)});
      !st) {
    return fail(st.message());
  }
  s.access.remote_config = !local_config_only;
  if (Status st = take_listener_flags(*flags, s.listener); !st) return fail(st.message());
  Options base;
  const bool batch_given = flags->count("max-batch-size") > 0 || !config_file.empty();
  if (!config_file.empty()) {
    auto text = read_file_text(config_file);
    if (!text) return fail("--config: " + text.error().message);
    auto o = options_from_json(*text, base);
    if (!o) return fail("--config " + config_file + ": " + o.error().message);
    base = *o;
  }
  auto options = cli::take_options(*flags, base);
  if (!options) return fail(options.error().message);
  const bool generative = wants_lm(*flags, kDefaultModel);
  auto choice =
      generative ? take_lm_flags(*flags, kDefaultModel) : take_model_flags(*flags, kDefaultModel);
  if (!choice) return fail(choice.error().message);
  if (Status st = cli::no_flags_left(*flags, "serve"); !st) return fail(st.message());
  if (generative && !plan_file.empty()) {
    return fail("--plan-cost " + plan_file +
                " is the adaptive strategy's; a language model has none");
  }
  if (generative) return serve_generation(argc, argv, *choice, *options, s);

  // The adaptive strategy plans on this cost, whenever it is in force:
  // --plan-cost, else the kept cost where there is one.
  auto planner = live_planner(*choice, plan_file, "serve", terminal_say());
  if (!planner) return fail(planner.error().message);
  if (!batch_given) fit_default_batch(*choice, *options);
  auto model = LocalModel::open(*choice);
  if (!model) return fail(model.error().message, 1);
  LoadHooks hooks;
  hooks.workers = std::make_shared<WorkerCounts>();
  auto factory = model->runners(*options, hooks);
  if (!factory) return fail(factory.error().message, 1);
  ServiceInfo info{.model = model->metadata(),
                   .device = model->device(),
                   .version = batchscope::build_version()};
  if (model->metadata().platform == "python") {
    info.workers = [w = hooks.workers] { return w->health(); };
  }
  auto pool = std::make_shared<WorkerCounts>();
  const StageMaker stage = model->prepare_stage(*options, pool);
  if (stage) info.preprocess_workers = [pool] { return pool->health(); };
  QCoreApplication app(argc, argv);
  Engine engine(*factory, *options);
  bind_model(engine, info.model, stage);
  engine.set_adaptive_planner(*planner);
  if (Status st = engine.start(); !st) return fail(st.message(), 1);
  InferenceService service(engine, info);
  HistoryRun header;
  header.model = header.config.model = info.model.name;
  header.config.pattern = "clients over HTTP";
  header.config.options = *options;
  header.context =
      run_context_json(choice->file(), choice->device, python_context(*model, options->num_lanes));
  auto h = serve_until_stopped(service, s, std::move(header),
                               [&engine] { engine.stop(StopMode::kDrain); });
  if (!h) return fail(h.error().message, 1);
  const EngineCounters c = engine.status().counters;
  std::printf("stopped: %llu requests answered over HTTP, %llu ok, %llu rejected\n", u(h->written),
              u(c.ok), u(c.rejected + c.invalid));
  print_accounting(*h, c.admitted, c.completed());
  return 0;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/serve_cmd.h"

#include <QCoreApplication>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "api/inference_service.h"
#include "api/options_json.h"
#include "app/build_info.h"
#include "app/cli_args.h"
#include "app/cost_setup.h"
#include "app/history_setup.h"
#include "app/lm_setup.h"
#include "app/model_setup.h"
#include "app/serve_gen.h"
#include "app/serve_record.h"
#include "batching/engine.h"
#include "http/http_server.h"
#include "runs/history_writer.h"
#include "tuning/adaptive_planner.h"

namespace batchscope {

std::string serve_help() {
  return "usage: batchscope serve [--model PATH | --synthetic A_US,C_US] [--config FILE]\n"
         "                        [--host 127.0.0.1] [--port 8000] [--device cpu|cuda:N]\n"
         "                        [--warmup auto|doubling|every]\n"
         "                        [--token TOKEN] [--no-remote-config] [--plan-cost FILE]\n"
         "                        [listener limits]\n"
         "                        [serving options]\n"
         "Serves a model over HTTP: POST /infer, KServe v2 under /v2, GET /metrics (Prometheus),\n"
         "GET /health, GET|PUT /v1/config. Default model: models/linear_128x64.pt.\n"
         "--synthetic serves a stand-in model costing A + C*b microseconds per batch of b\n"
         "(128 FP32 inputs, 128 outputs). --config reads options as JSON, flags override it.\n"
         "Prints 'listening on http://HOST:PORT' once warm; SIGINT or SIGTERM stops accepting,\n"
         "finishes every admitted request, and exits 0. The adaptive strategy plans on the\n"
         "model's kept cost on this machine where there is one (what predictions use), else\n"
         "on its own fit; --plan-cost FILE (a cost file) makes it plan on that instead.\n"
         "Access (see docs/http.md, 'Limits and failure behaviour'):\n"
         "  --token TOKEN             every route but /health and /v2/health/* needs\n"
         "                            'Authorization: Bearer TOKEN' (default: $BATCHSCOPE_TOKEN)\n"
         "  --no-remote-config        PUT /v1/config answers 403; GET still reads\n"
         "Listener limits:\n"
         "  --max-body-bytes N        largest request body, 413 beyond (default 16777216)\n"
         "  --header-timeout-ms N     a request's headers must arrive within this, 408 after\n"
         "                            (default 10000)\n"
         "  --min-body-rate N         bytes/s a body must average after 5 s, 408 below\n"
         "                            (default 1024; 0: no minimum)\n"
         "  --idle-timeout-ms N       an idle keep-alive connection is closed after this\n"
         "                            (default 60000)\n"
         "  --max-connections N       connections open at once (default: the descriptor\n"
         "                            limit, ulimit -n, less a reserve); at the limit the\n"
         "                            longest-idle one is closed, or a new one gets 503\n"
         "                            (health checks are still answered)\n" +
         record_flags_help() + "Serving options:\n" + cli::options_help() + lm_flags_help() +
         "A generative model serves OpenAI's POST /v1/chat/completions and /v1/completions\n"
         "(\"stream\": true for Server-Sent Events; errors as OpenAI's error object) and\n"
         "Triton's POST /v2/models/NAME/generate and /generate_stream instead.\n";
}

namespace {

constexpr const char* kDefaultModel = "models/linear_128x64.pt";

int fail(const std::string& message, int code = 2) {
  std::cerr << "batchscope serve: " << message << "\n";
  return code;
}

// The listener flags over `o`, removing them from `flags`.
Status take_listener_flags(std::map<std::string, std::string>& flags, HttpServerOptions& o) {
  struct Flag {
    const char* name;
    double lo, hi;
  };
  for (const Flag& f : {Flag{"max-body-bytes", 1, 1u << 30}, Flag{"header-timeout-ms", 1, 3.6e6},
                        Flag{"min-body-rate", 0, 1e12}, Flag{"idle-timeout-ms", 1, 3.6e6}}) {
    auto it = flags.find(f.name);
    if (it == flags.end()) continue;
    auto v = cli::parse_number(f.name, it->second, f.lo, f.hi);
    if (!v) return v.error();
    const std::string name = f.name;
    if (name == "max-body-bytes") o.limits.max_body_bytes = static_cast<size_t>(*v);
    if (name == "header-timeout-ms") o.header_timeout_ms = static_cast<int>(*v);
    if (name == "min-body-rate") o.min_body_bytes_per_s = *v;
    if (name == "idle-timeout-ms") o.idle_timeout_ms = static_cast<int>(*v);
    flags.erase(it);
  }
  if (auto it = flags.find("max-connections"); it != flags.end()) {
    auto n = cli::parse_max_connections(it->second);
    if (!n) return n.error();
    o.max_connections = *n;
    flags.erase(it);
  }
  return Status::Ok();
}

}  // namespace

int run_serve(int argc, char** argv, const std::vector<std::string>& args) {
  // Signals go to sigtimedwait() below, in every thread started from here on.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::vector<std::string> argv_flags = args;
  allow_bare_record(argv_flags);
  auto flags = cli::parse_flags(argv_flags, {"no-remote-config", "no-history", "record-bodies"});
  if (!flags) return fail(flags.error().message);
  auto record = take_record_flags(*flags);
  if (!record) return fail(record.error().message);
  ServiceAccess access;
  if (const char* env = std::getenv("BATCHSCOPE_TOKEN")) access.token = env;
  if (auto it = flags->find("token"); it != flags->end()) {
    access.token = it->second;
    flags->erase(it);
  }
  if (auto it = flags->find("no-remote-config"); it != flags->end()) {
    access.remote_config = false;
    flags->erase(it);
  }
  HttpServerOptions listener;
  if (Status s = take_listener_flags(*flags, listener); !s) return fail(s.message());
  Options base;
  const bool batch_given = flags->count("max-batch-size") > 0 || flags->count("config") > 0;
  if (auto it = flags->find("config"); it != flags->end()) {
    std::ifstream in(it->second);
    if (!in) return fail("--config: cannot read " + it->second);
    std::ostringstream text;
    text << in.rdbuf();
    auto o = options_from_json(text.str(), base);
    if (!o) return fail("--config " + it->second + ": " + o.error().message);
    base = *o;
    flags->erase(it);
  }
  auto options = cli::take_options(*flags, base);
  if (!options) return fail(options.error().message);
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  if (auto it = flags->find("host"); it != flags->end()) {
    host = it->second;
    flags->erase(it);
  }
  if (auto it = flags->find("port"); it != flags->end()) {
    auto p = cli::parse_number("port", it->second, 0, 65535);
    if (!p) return fail(p.error().message);
    port = static_cast<uint16_t>(*p);
    flags->erase(it);
  }
  if (wants_lm(*flags, kDefaultModel)) {
    auto lm = take_lm_flags(*flags, kDefaultModel);
    if (!lm) return fail(lm.error().message);
    if (!flags->empty()) {
      return fail("unknown option --" + flags->begin()->first + " (see batchscope serve --help)");
    }
    return serve_generation(argc, argv, {*lm, *options, access, listener, host, port, *record},
                            stop_signals);
  }
  // The adaptive strategy plans on this cost, whenever it is in force.
  AdaptivePlanner planner = make_adaptive_plan;
  bool planned = false;  // --plan-cost given; else the kept cost, where there is one
  if (auto it = flags->find("plan-cost"); it != flags->end()) {
    auto cost = CostModel::from_file(it->second);
    if (!cost) return fail("--plan-cost: " + cost.error().message);
    planner = plan_on_cost(std::move(*cost));
    planned = true;
    flags->erase(it);
  }
  auto choice = take_model_flags(*flags, kDefaultModel);
  if (!choice) return fail(choice.error().message);
  if (!flags->empty()) {
    return fail("unknown option --" + flags->begin()->first + " (see batchscope serve --help)");
  }
  if (!planned) planner = adaptive_planner_for(*choice, "serve");

  if (!batch_given) fit_default_batch(*choice, *options);
  auto model = make_model(*choice, *options);
  if (!model) return fail(model.error().message, 1);
  ServiceInfo info;
  info.version = batchscope::build_version();
  info.model = model->metadata;
  info.device = model->device;
  const RunnerFactory factory = model->factory;

  QCoreApplication app(argc, argv);
  Engine engine(factory, *options);
  bind_model(engine, info.model);
  engine.set_adaptive_planner(planner);
  if (Status s = engine.start(); !s) return fail(s.message(), 1);

  InferenceService service(engine, info);
  service.set_access(access);
  HttpServer server(
      [&service](HttpRequest&& req, Responder r) { service.handle(std::move(req), r); }, listener);
  service.set_server(&server);
  auto bound = server.start(host, port);
  if (!bound) return fail(bound.error().message, 1);
  if (!is_loopback_host(host)) std::cerr << exposure_warning(host, access) << "\n";
  // What the clients send, kept as runs of kind serve (app/serve_record.h).
  HistoryRun header;
  header.model = info.model.name;
  header.config.model = info.model.name;
  header.config.pattern = "clients over HTTP";
  header.config.target = "http://" + host + ":" + std::to_string(*bound);
  header.config.options = *options;
  header.context = run_context_json(choice->synthetic ? "" : choice->path, choice->device);
  SteadyClock clock;
  auto recorder = open_serve_recorder(*record, std::move(header), clock.now());
  if (recorder) {
    service.set_records_sink([&recorder, &clock](const RecordBatch& r) {
      if (recorder->going()) recorder->recording->add(r, clock.now());
    });
    if (record->options.bodies) {
      service.set_body_sink([&recorder, &clock](std::string_view route, const std::string& body) {
        if (recorder->going()) recorder->recording->add_body(route, body, clock.now());
      });
    }
    std::printf("recording the clients' requests%s into %s\n",
                record->options.bodies ? " and their bodies" : "",
                recorder->writer->path().c_str());
  }
  std::printf("listening on http://%s:%u\n", host.c_str(), *bound);
  std::fflush(stdout);

  wait_for_stop_signal(stop_signals, [&] { server.post([&service] { service.poll_metrics(); }); });
  service.shutting_down();
  engine.stop(StopMode::kDrain);
  server.stop();
  if (recorder) {
    service.poll_metrics();  // the last records; the listener has stopped
    recorder->finish(clock.now());
  }
  const EngineCounters c = engine.status().counters;
  const HttpCounters h = server.counters();
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("stopped: %llu requests answered over HTTP, %llu ok, %llu rejected\n", u(h.written),
              u(c.ok), u(c.rejected + c.invalid));
  // The exact accounting a test of stopping under load checks: every
  // request read was answered (written, or dropped because its client left),
  // and every request the engine admitted completed.
  std::printf(
      "accounting: http received %llu = written %llu + dropped %llu + unanswered %llu; "
      "engine admitted %llu = completed %llu\n",
      u(h.parsed), u(h.written), u(h.dropped), u(h.parsed - h.written - h.dropped), u(c.admitted),
      u(c.completed()));
  return 0;
}

}  // namespace batchscope

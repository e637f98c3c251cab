#include "serve_cmd.h"

#include <QCoreApplication>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli_args.h"
#include "engine.h"
#include "http_server.h"
#include "inference_service.h"
#include "model_setup.h"
#include "options_json.h"

namespace batchscope {

std::string serve_help() {
  return "usage: batchscope serve [--model PATH | --synthetic A_US,C_US] [--config FILE]\n"
         "                        [--host 127.0.0.1] [--port 8000] [--device cpu|cuda:N]\n"
         "                        [serving options]\n"
         "Serves a model over HTTP: POST /infer, KServe v2 under /v2, GET /metrics (Prometheus),\n"
         "GET /health, GET|PUT /v1/config. Default model: models/linear_128x64.pt.\n"
         "--synthetic serves a stand-in model costing A + C*b microseconds per batch of b\n"
         "(128 FP32 inputs, 128 outputs). --config reads options as JSON, flags override it.\n"
         "Prints 'listening on http://HOST:PORT' once warm; SIGINT or SIGTERM stops accepting,\n"
         "finishes every admitted request, and exits 0.\n"
         "Serving options:\n" +
         cli::options_help();
}

namespace {

int fail(const std::string& message, int code = 2) {
  std::cerr << "batchscope serve: " << message << "\n";
  return code;
}

}  // namespace

int run_serve(int argc, char** argv, const std::vector<std::string>& args) {
  // Signals go to sigtimedwait() below, in every thread started from here on.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto flags = cli::parse_flags(args);
  if (!flags) return fail(flags.error().message);
  Options base;
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
  auto choice = take_model_flags(*flags, "models/linear_128x64.pt");
  if (!choice) return fail(choice.error().message);
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  for (auto& [name, value] : *flags) {
    if (name == "host") {
      host = value;
    } else if (name == "port") {
      auto p = cli::parse_number(name, value, 0, 65535);
      if (!p) return fail(p.error().message);
      port = static_cast<uint16_t>(*p);
    } else {
      return fail("unknown option --" + name + " (see batchscope serve --help)");
    }
  }

  auto model = make_model(*choice, *options);
  if (!model) return fail(model.error().message, 1);
  ServiceInfo info;
  info.version = BATCHSCOPE_VERSION;
  info.model = model->metadata;
  info.device = model->device;
  const RunnerFactory factory = model->factory;

  QCoreApplication app(argc, argv);
  Engine engine(factory, *options);
  const ModelMetadata meta = info.model;
  engine.set_validator([meta](const Tensors& in) { return check_inputs(meta, in); });
  if (Status s = engine.start(); !s) return fail(s.message(), 1);

  InferenceService service(engine, info);
  HttpServer server(
      [&service](HttpRequest&& req, Responder r) { service.handle(std::move(req), r); });
  service.set_server(&server);
  auto bound = server.start(host, port);
  if (!bound) return fail(bound.error().message, 1);
  std::printf("listening on http://%s:%u\n", host.c_str(), *bound);
  std::fflush(stdout);

  const timespec second{1, 0};
  for (;;) {
    const int sig = sigtimedwait(&stop_signals, nullptr, &second);
    if (sig == SIGINT || sig == SIGTERM) break;
    server.post([&service] { service.poll_metrics(); });
  }
  service.shutting_down();
  engine.stop(StopMode::kDrain);
  server.stop();
  const EngineCounters c = engine.status().counters;
  std::printf("stopped: %llu requests answered over HTTP, %llu ok, %llu rejected\n",
              static_cast<unsigned long long>(server.requests()),
              static_cast<unsigned long long>(c.ok),
              static_cast<unsigned long long>(c.rejected + c.invalid));
  return 0;
}

}  // namespace batchscope

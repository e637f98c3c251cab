// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/serve_gen.h"

#include <QCoreApplication>
#include <cstdio>
#include <iostream>

#include "api/generation_service.h"
#include "app/build_info.h"
#include "app/history_setup.h"
#include "generation/gen_engine.h"
#include "runs/history_writer.h"

namespace batchscope {

void wait_for_stop_signal(const sigset_t& stop_signals, const std::function<void()>& every_second) {
  const timespec second{1, 0};
  for (;;) {
    const int sig = sigtimedwait(&stop_signals, nullptr, &second);
    if (sig == SIGINT || sig == SIGTERM) return;
    every_second();
  }
}

int serve_generation(int argc, char** argv, const GenServeSetup& setup,
                     const sigset_t& stop_signals) {
  const auto fail = [](const std::string& m) {
    std::cerr << "batchscope serve: " << m << "\n";
    return 1;
  };
  LmChoice model = setup.model;
  model.lanes = static_cast<int>(setup.options.num_lanes);
  auto lm = make_lm(model);
  if (!lm) return fail(lm.error().message);
  GenServiceInfo info;
  info.model = lm->runner->info();
  info.device = lm->device;
  info.version = batchscope::build_version();

  QCoreApplication app(argc, argv);
  GenEngine engine(std::move(lm->runner), setup.options, nullptr, lm_factory(model));
  if (Status s = engine.start(); !s) return fail(s.message());
  GenerationService service(engine, info);
  service.set_access(setup.access);
  HttpServer server(
      [&service](HttpRequest&& req, Responder r) { service.handle(std::move(req), r); },
      setup.listener);
  service.set_server(&server);
  auto bound = server.start(setup.host, setup.port);
  if (!bound) return fail(bound.error().message);
  if (!is_loopback_host(setup.host))
    std::cerr << exposure_warning(setup.host, setup.access) << "\n";
  std::printf("serving %s (generative, %s scheduling) on %s\n", info.model.name.c_str(),
              scheduling_name(setup.options.scheduling), info.device.c_str());
  // What the clients send, kept as runs of kind serve (app/serve_record.h).
  HistoryRun header;
  header.model = info.model.name;
  header.config.model = info.model.name;
  header.config.pattern = HistoryRun::kServedGenerationPattern;
  header.config.target = "http://" + setup.host + ":" + std::to_string(*bound);
  header.config.options = setup.options;
  header.context = run_context_json(model.synthetic ? "" : model.path, lm->device);
  SteadyClock clock;
  auto recorder = open_serve_recorder(setup.record, std::move(header), clock.now());
  if (recorder) {
    service.set_records_sink([&recorder, &clock](const std::vector<GenRecord>& done,
                                                 const std::vector<StepRecord>& steps) {
      if (recorder->going()) recorder->recording->add_generation(done, steps, clock.now());
    });
    if (setup.record.options.bodies) {
      service.set_body_sink([&recorder, &clock](std::string_view route, const std::string& body) {
        if (recorder->going()) recorder->recording->add_body(route, body, clock.now());
      });
    }
    std::printf("recording the clients' requests%s into %s\n",
                setup.record.options.bodies ? " and their bodies" : "",
                recorder->writer->path().c_str());
  }
  std::printf("listening on http://%s:%u\n", setup.host.c_str(), *bound);
  std::fflush(stdout);

  wait_for_stop_signal(stop_signals, [&] { server.post([&service] { service.poll_metrics(); }); });
  service.shutting_down();
  engine.stop(std::chrono::seconds(10));
  server.stop();
  if (recorder) {
    service.poll_metrics();  // the last records; the listener has stopped
    recorder->finish(clock.now());
  }
  const GenStatus g = engine.status();
  const HttpCounters h = server.counters();
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("stopped: %llu requests answered over HTTP, %llu generations, %llu output tokens\n",
              u(h.written), u(g.completed), u(g.output_tokens));
  std::printf(
      "accounting: http received %llu = written %llu + dropped %llu + unanswered %llu; "
      "engine admitted %llu = completed %llu\n",
      u(h.parsed), u(h.written), u(h.dropped), u(h.parsed - h.written - h.dropped), u(g.admitted),
      u(g.completed));
  return 0;
}

}  // namespace batchscope

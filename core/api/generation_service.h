// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The HTTP routes over a generation engine and its generative model:
//   POST /v1/completions              OpenAI completions; "stream": true answers
//                                     with Server-Sent Events, then data: [DONE]
//   POST /v1/chat/completions         OpenAI chat completions (chat_json.h), the
//                                     messages made a prompt by the model's
//                                     chat template; streamed the same way
//   GET  /v1/models                   the model, as OpenAI lists them, with its
//                                     context length and which chat template
//                                     applies ("sidecar" or "default")
//   POST /v2/models/{m}[/versions/{v}]/generate          Triton's generate extension
//   POST /v2/models/{m}[/versions/{v}]/generate_stream   the same, streamed (SSE)
//   GET  /v2/models/{m}[/versions/{v}][/ready]           metadata, readiness
//   GET  /v2, /v2/health/live, /v2/health/ready, /health
//   GET  /metrics                     Prometheus text format (gen_prometheus.h)
//   GET|PUT /v1/config                the options in force; PUT retunes live
// Access as ServiceAccess says. Every /v1/* route answers errors with
// OpenAI's error object (openai_error.h); the others with {"error": text}.
// Errors: 400 for a body that is not JSON, 422
// for a field that does not fit (named, value quoted), 404 for another
// model's name, 429 with Retry-After when the waiting queue is full, 503
// when stopping, 504 when request_timeout_ms passes, 500 when the model
// fails. A stream that has begun reports a late error as an event
// ({"error": {...}}) before its end. A client that disconnects cancels its
// sequence at the next step.
//
// Under load: requests are decoded and admitted on the I/O thread; text
// chunks are encoded on the engine's thread and posted to the I/O thread
// in order.
// Thread-safety: handle() and poll_metrics() on the HTTP I/O thread only;
// shutting_down() from any thread.

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "api/completion_json.h"
#include "generation/gen_engine.h"
#include "generation/gen_metrics.h"
#include "http/http_server.h"
#include "http/service_access.h"

namespace batchscope {

struct GenServiceInfo {
  LmInfo model;
  std::string device = "cpu";
  std::string version;
};

class GenerationService {
 public:
  // Which API a request came in by: its body, answer and error shapes.
  enum class Api { kCompletions, kChat, kTriton };

  GenerationService(GenEngine& engine, GenServiceInfo info);

  void handle(HttpRequest&& request, Responder responder);
  void shutting_down() { shutting_down_ = true; }
  void set_server(const HttpServer* server) { server_ = server; }
  void set_access(ServiceAccess access) { access_ = std::move(access); }
  // Drains the engine's records into the metrics (now and then, so they
  // never pile up between scrapes).
  void poll_metrics();
  // Where another part of the process drains the engine (the window),
  // /metrics takes the totals from `source` instead. Set before serving.
  using MetricsSource = std::function<GenWindow()>;
  void set_metrics_source(MetricsSource source) { source_ = std::move(source); }
  // Called on the I/O thread with what each poll drained (serve --record).
  // Set before serving.
  using RecordsSink =
      std::function<void(const std::vector<GenRecord>&, const std::vector<StepRecord>&)>;
  void set_records_sink(RecordsSink sink) { sink_ = std::move(sink); }
  // Called on the I/O thread with each authorized inference request's route
  // and body as it arrives (serve --record-bodies). Set before serving.
  using BodySink = std::function<void(std::string_view route, const std::string& body)>;
  void set_body_sink(BodySink sink) { body_sink_ = std::move(sink); }

 private:
  void generate(const HttpRequest& req, Responder r, Api api, bool stream_route);
  void start(CompletionRequest&& c, Responder r, Api api);
  void model_routes(const HttpRequest& req, Responder r, std::string_view rest);
  void health(Responder r);
  void config(const HttpRequest& req, Responder r);
  void metrics(Responder r);

  GenEngine& engine_;
  GenServiceInfo info_;
  GenMetrics metrics_;
  std::vector<GenRecord> drained_requests_;
  std::vector<StepRecord> drained_steps_;
  MetricsSource source_;
  RecordsSink sink_;
  BodySink body_sink_;
  const HttpServer* server_ = nullptr;
  ServiceAccess access_;
  std::atomic<bool> shutting_down_{false};
  uint64_t next_completion_ = 1;
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The HTTP routes over one engine and its model:
//   POST /infer                       {"data": [...]} -> {"request_id", "result", "latency_ms"}
//   GET  /v2, /v2/health/live, /v2/health/ready
//   GET  /v2/models/{m}[/versions/{v}]            model metadata
//   GET  /v2/models/{m}[/versions/{v}]/ready
//   POST /v2/models/{m}[/versions/{v}]/infer      KServe v2 / Open Inference Protocol
//   GET  /metrics                     Prometheus text format
//   GET  /health                      status, device, strategy, queue size, batches
//   GET|PUT /v1/config                the options in force; PUT applies them live
// Access: see ServiceAccess (bearer token, read-only configuration).
// A v2 request of several rows is split into rows that are batched like any
// others and reassembled. Engine errors map to statuses: invalid input 422,
// queue full 429 (with Retry-After), timed out 504, shutting down 503, model
// error 500. A client that disconnects cancels its queued rows.
//
// Under load: decoding and admission run on the I/O thread; responses are
// encoded on the lane thread that completed the batch.
// Thread-safety: handle() on the HTTP I/O thread only (it owns the metrics
// monitor); shutting_down() from any thread.

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "batching/engine.h"
#include "batching/monitor.h"
#include "common/model_metadata.h"
#include "http/http_server.h"
#include "http/service_access.h"

namespace batchscope {

struct ServiceInfo {
  ModelMetadata model;
  std::string device = "cpu";
  std::string version;
  // A model run by worker processes: how they fare now (any thread). Empty
  // for any other model.
  std::function<WorkerHealth()> workers = {};
  // Its preprocess pool's processes, where it has one (any thread).
  std::function<WorkerHealth()> preprocess_workers = {};
};

class InferenceService {
 public:
  InferenceService(Engine& engine, ServiceInfo info);

  void handle(HttpRequest&& request, Responder responder);
  // New inference is refused with 503 and readiness turns false.
  void shutting_down() { shutting_down_ = true; }
  // For the HTTP counters in /metrics.
  void set_server(const HttpServer* server) { server_ = server; }
  // Set before serving.
  void set_access(ServiceAccess access) { access_ = std::move(access); }
  // Drains the engine's records into the metrics (call it now and then from
  // the I/O thread so records never pile up between scrapes).
  void poll_metrics();
  // Where another part of the process already drains the engine (the
  // workbench window), /metrics takes the all-time totals from `source`
  // instead of draining records itself, which would take them from that
  // owner. `source` is called on the I/O thread. Set before serving.
  using MetricsSource = std::function<MetricsWindow()>;
  void set_metrics_source(MetricsSource source) { source_ = std::move(source); }
  // Called on the I/O thread with what each poll drained (serve --record).
  // Set before serving.
  using RecordsSink = std::function<void(const RecordBatch&)>;
  void set_records_sink(RecordsSink sink) { sink_ = std::move(sink); }
  // Called on the I/O thread with each authorized inference request's route
  // and body as it arrives (serve --record-bodies). Set before serving.
  using BodySink = std::function<void(std::string_view route, const std::string& body)>;
  void set_body_sink(BodySink sink) { body_sink_ = std::move(sink); }

 private:
  void infer_simple(const HttpRequest& req, Responder r);
  void infer_v2(const HttpRequest& req, Responder r);
  void model_routes(const HttpRequest& req, Responder r, std::string_view rest);
  void metadata(Responder r);
  void health(Responder r);
  void config(const HttpRequest& req, Responder r);
  void metrics(Responder r);

  Engine& engine_;
  ServiceInfo info_;
  EngineMonitor monitor_;
  MetricsSource source_;
  RecordsSink sink_;
  BodySink body_sink_;
  const HttpServer* server_ = nullptr;
  ServiceAccess access_;
  std::atomic<bool> shutting_down_{false};
};

// The HTTP status for an engine error.
int http_status(ErrorCode code);

}  // namespace batchscope

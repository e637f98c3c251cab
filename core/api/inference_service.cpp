// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/inference_service.h"

#include <algorithm>
#include <optional>

#include "api/infer_json.h"
#include "api/options_json.h"
#include "api/prometheus.h"
#include "api/service_routes.h"
#include "common/mutex.h"

namespace batchscope {

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 422;
    case ErrorCode::kQueueFull: return 429;
    case ErrorCode::kTimedOut: return 504;
    case ErrorCode::kShuttingDown: return 503;
    case ErrorCode::kUnavailable: return 503;
    case ErrorCode::kModelTimedOut: return 504;
    case ErrorCode::kCancelled: return 503;
    case ErrorCode::kModelError: return 500;
    case ErrorCode::kInternal: return 500;
  }
  return 500;
}

namespace {

HttpResponse engine_error(const Error& e) {
  HttpResponse r = error_response(http_status(e.code), e.message);
  if (e.code == ErrorCode::kQueueFull) r.headers.emplace_back("Retry-After", "1");
  return r;
}

void append_spec(std::string& out, const TensorSpec& s) {
  out += "{\"name\":";
  append_json_string(out, s.name);
  out += ",\"datatype\":";
  append_json_string(out, dtype_name(s.dtype));
  out += ",\"shape\":[";
  for (size_t i = 0; i < s.shape.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(s.shape[i]);
  }
  out += "]}";
}

}  // namespace

InferenceService::InferenceService(Engine& engine, ServiceInfo info)
    // /metrics reads the all-time totals only; a few windows of history keep
    // a long-running server's memory flat.
    : engine_(engine), info_(std::move(info)), monitor_(std::chrono::seconds(1), 4) {}

void InferenceService::poll_metrics() {
  if (source_) return;
  monitor_.poll(engine_, 0);
  if (sink_) sink_(monitor_.last_records());
}

void InferenceService::handle(HttpRequest&& req, Responder r) {
  const std::string_view path = req.path();
  if (auto refused = refuse_unauthorized(req, access_)) return r.send(std::move(*refused));
  const bool get = req.method == "GET", post = req.method == "POST";
  if (body_sink_ && post &&
      (path == "/infer" || (path.substr(0, 11) == "/v2/models/" && path.ends_with("/infer")))) {
    body_sink_(path, req.body);
  }
  if (path == "/infer") {
    if (!post) return r.send(method_not_allowed("POST"));
    return infer_simple(req, r);
  }
  if (path == "/health") return get ? health(r) : r.send(method_not_allowed("GET"));
  if (path == "/metrics") return get ? metrics(r) : r.send(method_not_allowed("GET"));
  if (path == "/v1/config") {
    if (!get && req.method != "PUT") return r.send(method_not_allowed("GET, PUT"));
    return config(req, r);
  }
  if (answer_server_route(req, r, info_.version, "[]", shutting_down_)) return;
  constexpr std::string_view kModels = "/v2/models/";
  if (path.substr(0, kModels.size()) == kModels)
    return model_routes(req, r, path.substr(kModels.size()));
  r.send(error_response(404, "no route " + quoted_excerpt(path) +
                                 "; try POST /infer, POST /v2/models/" + info_.model.name +
                                 "/infer, GET /health, GET /metrics or GET /v1/config"));
}

void InferenceService::model_routes(const HttpRequest& req, Responder r, std::string_view rest) {
  // {m}[/versions/{v}][/ready|/infer]
  const auto found = model_tail(rest, info_.model.name, r);
  if (!found) return;
  const std::string_view tail = *found;
  const bool get = req.method == "GET";
  if (tail.empty()) return get ? metadata(r) : r.send(method_not_allowed("GET"));
  if (tail == "/ready") {
    if (!get) return r.send(method_not_allowed("GET"));
    std::string b = "{\"name\":";
    append_json_string(b, info_.model.name);
    return r.send(json_response(b + ",\"ready\":" + (shutting_down_ ? "false" : "true") + "}"));
  }
  if (tail == "/infer") {
    return req.method == "POST" ? infer_v2(req, r) : r.send(method_not_allowed("POST"));
  }
  r.send(error_response(404, "no route " + quoted_excerpt(req.path())));
}

void InferenceService::metadata(Responder r) {
  std::string b = "{\"name\":";
  append_json_string(b, info_.model.name);
  b += ",\"versions\":[\"1\"],\"platform\":";
  append_json_string(b, info_.model.platform);
  b += ",\"inputs\":[";
  for (size_t i = 0; i < info_.model.inputs.size(); ++i) {
    if (i) b += ',';
    append_spec(b, info_.model.inputs[i]);
  }
  b += "],\"outputs\":[";
  for (size_t i = 0; i < info_.model.outputs.size(); ++i) {
    if (i) b += ',';
    append_spec(b, info_.model.outputs[i]);
  }
  b += "],\"max_batch_size\":" + std::to_string(info_.model.max_batch_size) + "}";
  r.send(json_response(std::move(b)));
}

void InferenceService::infer_simple(const HttpRequest& req, Responder r) {
  if (shutting_down_) return r.send(error_response(503, "shutting down"));
  auto parsed = parse_simple_infer(req.body, info_.model);
  if (auto* e = std::get_if<HttpError>(&parsed))
    return r.send(error_response(e->status, e->message));
  auto id = engine_.submit(std::move(std::get<Tensors>(parsed)), [r](TensorResponse&& resp) {
    if (!resp.result.ok()) return r.send(engine_error(resp.result.error()));
    std::string b = "{\"request_id\":" + std::to_string(resp.id) + ",\"result\":";
    append_json_values(b, resp.result.value()[0]);
    b += ",\"latency_ms\":";
    append_json_number(b, to_ms(resp.times.completed - resp.times.arrival));
    r.send(json_response(b + "}"));
  });
  if (id.ok()) r.on_disconnect([this, rid = *id] { engine_.cancel(rid); });
}

namespace {

// The rows of one v2 request on their way through the engine.
struct Gather {
  Mutex mu;
  V2Request req;
  // Each row's callback writes its row (and `error`, the first failure) under
  // mu; the last one (`remaining` reached 0 under mu, so no write follows)
  // reads them without it. Hence not GUARDED_BY(mu).
  std::vector<Tensors> rows;
  std::vector<RequestId> ids GUARDED_BY(mu);
  size_t remaining GUARDED_BY(mu) = 0;
  std::optional<Error> error;  // as `rows`
  Responder responder;
  std::string model;
};

}  // namespace

void InferenceService::infer_v2(const HttpRequest& req, Responder r) {
  if (shutting_down_) return r.send(error_response(503, "shutting down"));
  auto parsed = parse_v2_request(req.body, info_.model);
  if (auto* e = std::get_if<HttpError>(&parsed))
    return r.send(error_response(e->status, e->message));
  auto g = std::make_shared<Gather>();
  g->req = std::move(std::get<V2Request>(parsed));
  g->responder = r;
  g->model = info_.model.name;
  const int64_t rows = g->req.inputs[0].rows();
  g->rows.resize(static_cast<size_t>(rows));
  {
    MutexLock lk(g->mu);  // g is not shared yet; the lock is for the analysis
    g->remaining = static_cast<size_t>(rows);
  }
  const ModelMetadata* meta = &info_.model;
  // The rows go in together, under one lock of the engine's.
  std::vector<Tensors> inputs;
  std::vector<Engine::Done> dones;
  inputs.reserve(static_cast<size_t>(rows));
  dones.reserve(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    inputs.push_back(v2_row(g->req, i));
    dones.emplace_back([g, i, meta, this](TensorResponse&& resp) {
      bool last = false;
      std::vector<RequestId> to_cancel;
      {
        MutexLock lk(g->mu);
        if (resp.result.ok()) {
          g->rows[static_cast<size_t>(i)] = std::move(resp.result.value());
        } else if (!g->error) {
          g->error = resp.result.error();
          to_cancel = g->ids;  // the rest cannot make the answer whole
        }
        last = --g->remaining == 0;
      }
      for (RequestId id : to_cancel) engine_.cancel(id);
      if (last) {
        if (g->error) return g->responder.send(engine_error(*g->error));
        std::string b = "{\"model_name\":";
        append_json_string(b, g->model);
        b += ",\"model_version\":\"1\"";
        if (g->req.has_id) {
          b += ",\"id\":";
          append_json_string(b, g->req.id);
        }
        b += ",\"outputs\":[";
        bool first = true;
        for (size_t k = 0; k < meta->outputs.size(); ++k) {
          const TensorSpec& spec = meta->outputs[k];
          if (!g->req.outputs.empty() && std::find(g->req.outputs.begin(), g->req.outputs.end(),
                                                   spec.name) == g->req.outputs.end()) {
            continue;
          }
          if (!first) b += ',';
          first = false;
          append_v2_output(b, spec, g->rows, k);
        }
        g->responder.send(json_response(b + "]}"));
      }
    });
  }
  std::vector<RequestId> ids = engine_.submit_many(inputs, dones);
  {
    MutexLock lk(g->mu);
    g->ids = std::move(ids);
  }
  r.on_disconnect([g, this] {
    std::vector<RequestId> ids;
    {
      MutexLock lk(g->mu);
      ids = g->ids;
    }
    for (RequestId id : ids) engine_.cancel(id);
  });
}

void InferenceService::health(Responder r) {
  const EngineStatus s = engine_.status();
  const bool has_workers = static_cast<bool>(info_.workers);
  const WorkerHealth w = has_workers ? info_.workers() : WorkerHealth{};
  // A model whose every worker is lost cannot answer until one is back.
  const bool no_worker = has_workers && w.ready <= 0;
  std::string b = "{\"status\":";
  append_json_string(b, shutting_down_ ? "shutting_down" : no_worker ? "no_worker_ready" : "ok");
  b += ",\"model\":";
  append_json_string(b, info_.model.name);
  b += ",\"device\":";
  append_json_string(b, info_.device);
  b += ",\"strategy\":";
  append_json_string(b, strategy_name(s.options.strategy));
  b += ",\"queue_size\":" + std::to_string(s.queue_depth);
  b += ",\"batches_processed\":" + std::to_string(s.counters.batches);
  b += ",\"requests_ok\":" + std::to_string(s.counters.ok);
  if (has_workers) {
    b += ",\"workers\":{\"ready\":" + std::to_string(w.ready) +
         ",\"restarts\":" + std::to_string(w.restarts) + ",\"deaths\":" + std::to_string(w.deaths) +
         ",\"timeouts\":" + std::to_string(w.timeouts) + "}";
  }
  if (info_.preprocess_workers) {
    const WorkerHealth p = info_.preprocess_workers();
    b += ",\"preprocess_workers\":{\"ready\":" + std::to_string(p.ready) +
         ",\"restarts\":" + std::to_string(p.restarts) + ",\"deaths\":" + std::to_string(p.deaths) +
         ",\"timeouts\":" + std::to_string(p.timeouts) + "}";
    b += ",\"preparing\":" + std::to_string(s.preparing);
  }
  b += '}';
  HttpResponse resp = json_response(std::move(b));
  if (no_worker && !shutting_down_) resp.status = 503;
  r.send(std::move(resp));
}

void InferenceService::config(const HttpRequest& req, Responder r) {
  answer_config(
      req, r, access_,
      [this] {
        const EngineStatus s = engine_.status();
        return std::make_pair(s.options_version, s.options);
      },
      [this](const Options& o) { return engine_.set_options(o); });
}

void InferenceService::metrics(Responder r) {
  MetricsSnapshot snap;
  if (source_) {
    snap.engine = engine_.status();
    snap.totals = source_();
  } else {
    snap = monitor_.poll(engine_, 0);
  }
  ServerInfo si = server_info(info_.model.name, info_.device, info_.version, server_);
  if (info_.workers) si.workers = info_.workers();
  if (info_.preprocess_workers) si.preprocess_workers = info_.preprocess_workers();
  HttpResponse resp;
  resp.content_type = "text/plain; version=0.0.4; charset=utf-8";
  resp.body = prometheus_text(snap, si);
  r.send(std::move(resp));
}

}  // namespace batchscope

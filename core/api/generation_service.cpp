// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/generation_service.h"

#include <algorithm>
#include <ctime>

#include "api/chat_json.h"
#include "api/gen_prometheus.h"
#include "api/openai_error.h"
#include "api/options_json.h"
#include "api/service_routes.h"
#include "common/mutex.h"
#include "common/text_out.h"

namespace batchscope {

namespace {

int status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 422;
    case ErrorCode::kQueueFull: return 429;
    case ErrorCode::kTimedOut: return 504;
    case ErrorCode::kModelTimedOut: return 504;
    case ErrorCode::kUnavailable:
    case ErrorCode::kShuttingDown:
    case ErrorCode::kCancelled: return 503;
    default: return 500;
  }
}

bool finished_with_text(const GenRecord& r) {
  return r.reason == FinishReason::kStop || r.reason == FinishReason::kLength;
}

// One request's answer as the engine's thread produces it. A stream's head
// goes out on the I/O thread once the engine has admitted the request; what
// the engine produces before that waits here, so the head always comes first.
struct Answer {
  using Api = GenerationService::Api;
  Responder r;
  Api api = Api::kCompletions;
  bool openai() const { return api != Api::kTriton; }  // errors as OpenAI's error object
  bool stream = false;
  bool usage = false;
  std::string id;  // cmpl-N, or Triton's echoed id
  int64_t created = 0;
  std::string model;
  int64_t timeout_ms = 0;
  const std::atomic<bool>* stopping = nullptr;

  Mutex mu;
  bool begun GUARDED_BY(mu) = false;
  bool ended GUARDED_BY(mu) = false;
  std::vector<std::string> early GUARDED_BY(mu);  // events before the head

  void push_event(std::string event, bool last) {
    MutexLock g(mu);
    if (!begun) {
      early.push_back(std::move(event));
      ended = ended || last;
      return;
    }
    r.stream(std::move(event));
    if (last) r.end_stream();
  }
  // On the I/O thread, after the engine admitted the request.
  void begin() {
    MutexLock g(mu);
    r.begin_stream(200, "text/event-stream");
    begun = true;
    for (std::string& e : early) r.stream(std::move(e));
    early.clear();
    if (ended) r.end_stream();
  }

  std::string chunk(std::string_view text) const {
    switch (api) {
      case Api::kCompletions: return completion_chunk(id, created, model, text, nullptr);
      case Api::kChat: return chat_chunk(id, created, model, text, nullptr);
      default: return generate_body(id, model, text, nullptr);
    }
  }
  std::string whole(const GenRecord& rec) const {
    switch (api) {
      case Api::kCompletions: return completion_body(id, created, model, rec);
      case Api::kChat: return chat_body(id, created, model, rec);
      default: return generate_body(id, model, rec.text, &rec);
    }
  }
  std::string last_chunk(const GenRecord& rec) const {
    return api == Api::kChat ? chat_chunk(id, created, model, "", &rec.reason)
                             : completion_chunk(id, created, model, "", &rec.reason);
  }
  std::string usage_chunk(const GenRecord& rec) const {
    return api == Api::kChat ? chat_usage_chunk(id, created, model, rec)
                             : completion_usage_chunk(id, created, model, rec);
  }

  std::pair<int, std::string> failure(const GenRecord& rec) const {
    switch (rec.reason) {
      case FinishReason::kTimedOut:
        return {504, "the request did not finish within request_timeout_ms = " +
                         std::to_string(timeout_ms) + " ms (" + std::to_string(rec.output_tokens) +
                         " tokens generated)"};
      case FinishReason::kCancelled: return {503, "the request was cancelled"};
      default:
        if (stopping && *stopping) return {503, "the server is shutting down"};
        return {500, rec.error.empty() ? "the model failed" : rec.error};
    }
  }

  void done(const GenRecord& rec) {
    if (!stream) {
      if (!finished_with_text(rec)) {
        const auto [status, message] = failure(rec);
        return r.send(openai() ? openai_error_response(status, message)
                               : error_response(status, message));
      }
      return r.send(json_response(whole(rec)));
    }
    if (!finished_with_text(rec)) {
      const auto [status, message] = failure(rec);
      push_event(sse_event(stream_error(status, message)), !openai());
      if (openai()) push_event("data: [DONE]\n\n", true);
      return;
    }
    if (!openai()) return push_event(sse_event(generate_body(id, model, "", &rec)), true);
    push_event(sse_event(last_chunk(rec)), false);
    if (usage) push_event(sse_event(usage_chunk(rec)), false);
    push_event("data: [DONE]\n\n", true);
  }
};

}  // namespace

GenerationService::GenerationService(GenEngine& engine, GenServiceInfo info)
    : engine_(engine), info_(std::move(info)), metrics_(std::chrono::seconds(1), 4) {}

void GenerationService::poll_metrics() {
  if (source_) return;
  engine_.drain(drained_requests_, drained_steps_);
  metrics_.fold(drained_requests_, drained_steps_);
  if (sink_) sink_(drained_requests_, drained_steps_);
}

void GenerationService::handle(HttpRequest&& req, Responder r) {
  const std::string_view path = req.path();
  const ErrorMaker make_error =
      path.substr(0, 4) == "/v1/" ? ErrorMaker{openai_error_response} : ErrorMaker{error_response};
  if (auto refused = refuse_unauthorized(req, access_, make_error))
    return r.send(std::move(*refused));
  const bool get = req.method == "GET", post = req.method == "POST";
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) return r.send(method_not_allowed("POST", make_error));
    if (body_sink_) body_sink_(path, req.body);
    return generate(req, r, path == "/v1/completions" ? Api::kCompletions : Api::kChat, false);
  }
  if (path == "/v1/models") {
    if (!get) return r.send(method_not_allowed("GET", make_error));
    std::string b = "{\"object\":\"list\",\"data\":[{\"id\":";
    append_json_string(b, info_.model.name);
    b += ",\"object\":\"model\",\"created\":0,\"owned_by\":\"batchscope\",\"max_model_len\":";
    append_int(b, info_.model.context_length);
    b += ",\"chat_template\":";
    append_json_string(b, info_.model.chat.source());
    return r.send(json_response(b + "}]}"));
  }
  if (path == "/health") return get ? health(r) : r.send(method_not_allowed("GET"));
  if (path == "/metrics") return get ? metrics(r) : r.send(method_not_allowed("GET"));
  if (path == "/v1/config") {
    if (!get && req.method != "PUT") return r.send(method_not_allowed("GET, PUT", make_error));
    return config(req, r);
  }
  if (answer_server_route(req, r, info_.version, "[\"generate\"]", shutting_down_)) return;
  constexpr std::string_view kModels = "/v2/models/";
  if (path.substr(0, kModels.size()) == kModels) {
    return model_routes(req, r, path.substr(kModels.size()));
  }
  r.send(make_error(404, "no route " + quoted_excerpt(path) +
                             "; try POST /v1/chat/completions, POST /v1/completions, GET "
                             "/v1/models, POST /v2/models/" +
                             info_.model.name +
                             "/generate, GET /health, GET /metrics or GET /v1/config"));
}

void GenerationService::model_routes(const HttpRequest& req, Responder r, std::string_view rest) {
  const auto found = model_tail(rest, info_.model.name, r);
  if (!found) return;
  const std::string_view tail = *found;
  const bool get = req.method == "GET", post = req.method == "POST";
  if (tail == "/generate" || tail == "/generate_stream") {
    if (!post) return r.send(method_not_allowed("POST"));
    return generate(req, r, Api::kTriton, tail == "/generate_stream");
  }
  if (tail == "/ready") {
    if (!get) return r.send(method_not_allowed("GET"));
    std::string b = "{\"name\":";
    append_json_string(b, info_.model.name);
    return r.send(json_response(b + ",\"ready\":" + (shutting_down_ ? "false" : "true") + "}"));
  }
  if (tail.empty()) {
    if (!get) return r.send(method_not_allowed("GET"));
    std::string b = "{\"name\":";
    append_json_string(b, info_.model.name);
    b += ",\"versions\":[\"1\"],\"platform\":\"pytorch_libtorch\","
         "\"inputs\":[{\"name\":\"text_input\",\"datatype\":\"BYTES\",\"shape\":[1]}],"
         "\"outputs\":[{\"name\":\"text_output\",\"datatype\":\"BYTES\",\"shape\":[1]}]}";
    return r.send(json_response(std::move(b)));
  }
  r.send(error_response(404, "no route " + quoted_excerpt(req.path()) +
                                 "; try POST .../generate "
                                 "or .../generate_stream"));
}

void GenerationService::generate(const HttpRequest& req, Responder r, Api api, bool stream_route) {
  const bool openai = api != Api::kTriton;
  const auto refuse = [&r, openai](int status, const std::string& message,
                                   const std::string& param) {
    r.send(openai ? openai_error_response(status, message, param)
                  : error_response(status, message));
  };
  const int vocab = info_.model.vocab_size;
  auto parsed = api == Api::kCompletions ? parse_completion(req.body, vocab)
                : api == Api::kChat      ? parse_chat(req.body, info_.model)
                                         : parse_generate(req.body, vocab);
  if (auto* e = std::get_if<HttpError>(&parsed)) return refuse(e->status, e->message, e->param);
  CompletionRequest c = std::move(std::get<CompletionRequest>(parsed));
  if (api == Api::kTriton) c.stream = stream_route;
  if (api == Api::kChat && !c.max_tokens_set) {
    // OpenAI's chat default: as many tokens as the context leaves (at least
    // one, so a prompt that fills it is refused by the engine, naming both).
    const int64_t left =
        int64_t{info_.model.context_length} - static_cast<int64_t>(c.prompt.size());
    c.max_tokens = static_cast<uint32_t>(std::max<int64_t>(1, left));
  }
  if (!c.model.empty() && c.model != info_.model.name) {
    return refuse(404,
                  "model " + quoted_excerpt(c.model) + " is not served here; this server serves '" +
                      info_.model.name + "'",
                  "model");
  }
  start(std::move(c), r, api);
}

void GenerationService::start(CompletionRequest&& c, Responder r, Api api) {
  const ErrorMaker refusal =
      api == Api::kTriton ? ErrorMaker{error_response} : ErrorMaker{openai_error_response};
  if (shutting_down_) return r.send(refusal(503, "the server is shutting down"));
  auto a = std::make_shared<Answer>();
  a->r = r;
  a->api = api;
  a->stream = c.stream;
  a->usage = c.include_usage;
  a->id = api == Api::kCompletions ? "cmpl-" + std::to_string(next_completion_++)
          : api == Api::kChat      ? "chatcmpl-" + std::to_string(next_completion_++)
                                   : c.id;
  a->created = static_cast<int64_t>(std::time(nullptr));
  a->model = info_.model.name;
  a->timeout_ms = engine_.status().options.request_timeout_ms;
  a->stopping = &shutting_down_;
  if (a->stream && api == Api::kChat) {
    a->push_event(sse_event(chat_role_chunk(a->id, a->created, a->model)), false);
  }

  GenRequest g;
  g.prompt = std::move(c.prompt);
  g.max_tokens = c.max_tokens;
  g.sampling = c.sampling;
  g.stop = std::move(c.stop);
  g.ignore_eos = c.ignore_eos;
  if (a->stream) {
    g.on_text = [a](std::string_view text, uint32_t, TimePoint) {
      if (!text.empty()) a->push_event(sse_event(a->chunk(text)), false);
    };
  }
  g.on_done = [a](const GenRecord& rec) { a->done(rec); };
  auto id = engine_.submit(std::move(g));
  if (!id) {
    HttpResponse resp = refusal(status_of(id.error().code), id.error().message);
    if (id.error().code == ErrorCode::kQueueFull) resp.headers.emplace_back("Retry-After", "1");
    return r.send(std::move(resp));
  }
  if (a->stream) a->begin();
  GenEngine* engine = &engine_;
  r.on_disconnect([engine, id = *id] { engine->cancel(id); });
}

void GenerationService::health(Responder r) {
  const GenStatus s = engine_.status();
  std::string b = "{\"status\":";
  append_json_string(b, shutting_down_ ? "shutting_down" : "ok");
  b += ",\"model\":";
  append_json_string(b, info_.model.name);
  b += ",\"kind\":\"generative\",\"device\":";
  append_json_string(b, info_.device);
  b += ",\"scheduling\":";
  append_json_string(b, scheduling_name(s.options.scheduling));
  b += ",\"running\":" + std::to_string(s.running);
  b += ",\"waiting\":" + std::to_string(s.waiting);
  b += ",\"steps\":" + std::to_string(s.steps);
  b += ",\"requests_completed\":" + std::to_string(s.completed) + "}";
  r.send(json_response(std::move(b)));
}

void GenerationService::config(const HttpRequest& req, Responder r) {
  answer_config(
      req, r, access_,
      [this] {
        const GenStatus s = engine_.status();
        return std::make_pair(s.version, s.options);
      },
      [this](const Options& o) { return engine_.set_options(o); }, openai_error_response);
}

void GenerationService::metrics(Responder r) {
  poll_metrics();
  const ServerInfo si = server_info(info_.model.name, info_.device, info_.version, server_);
  HttpResponse resp;
  resp.content_type = std::string(kPrometheusContentType);
  resp.body =
      generation_prometheus_text(source_ ? source_() : metrics_.totals(), engine_.status(), si);
  r.send(std::move(resp));
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/self_http.h"

namespace batchscope {

SelfHttp::~SelfHttp() { stop(); }

Status SelfHttp::start(HttpServer::Handler handler, std::string path) {
  server_ = std::make_unique<HttpServer>(std::move(handler));
  auto port = server_->start("127.0.0.1", 0);
  if (!port) return port.error();
  url_ = Url{"127.0.0.1", *port, std::move(path), ""};
  return Status::Ok();
}

Expected<std::unique_ptr<SelfHttp>> SelfHttp::serve(Engine& engine, const ServiceInfo& info) {
  std::unique_ptr<SelfHttp> s(new SelfHttp());
  s->tensor_ = std::make_unique<InferenceService>(engine, info);
  InferenceService* service = s->tensor_.get();
  const ModelMetadata& m = info.model;
  Status started =
      s->start([service](HttpRequest&& req, Responder r) { service->handle(std::move(req), r); },
               m.inputs.size() == 1 ? "/infer" : "/v2/models/" + m.name + "/infer");
  if (!started) return started.error();
  service->set_server(s->server_.get());
  return s;
}

Expected<std::unique_ptr<SelfHttp>> SelfHttp::serve(GenEngine& engine, const GenServiceInfo& info) {
  std::unique_ptr<SelfHttp> s(new SelfHttp());
  s->language_ = std::make_unique<GenerationService>(engine, info);
  GenerationService* service = s->language_.get();
  Status started = s->start(
      [service](HttpRequest&& req, Responder r) { service->handle(std::move(req), r); }, "/");
  if (!started) return started.error();
  service->set_server(s->server_.get());
  return s;
}

void SelfHttp::stop(int grace_ms) {
  if (server_) server_->stop(grace_ms);
}

}  // namespace batchscope

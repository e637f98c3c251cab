// SPDX-License-Identifier: GPL-3.0-or-later
// This process's own listener for a load run over HTTP (bench --target
// self-http): the service over an engine the caller owns and has started,
// on 127.0.0.1 and a port the system picks, with the URL a load sends to.
// A tensor model of one input is sent POST /infer, one of more KServe v2;
// a language model OpenAI's routes from "/".
// Thread-safety: made, used and stopped on the thread that runs the load;
// the listener's own thread answers.

#pragma once

#include <memory>

#include "api/generation_service.h"
#include "api/inference_service.h"
#include "http/http_client.h"
#include "http/http_server.h"

namespace batchscope {

class SelfHttp {
 public:
  static Expected<std::unique_ptr<SelfHttp>> serve(Engine& engine, const ServiceInfo& info);
  static Expected<std::unique_ptr<SelfHttp>> serve(GenEngine& engine, const GenServiceInfo& info);
  ~SelfHttp();

  const Url& url() const { return url_; }
  // Stops the listener, giving its connections `grace_ms` to finish.
  void stop(int grace_ms = 1000);

 private:
  SelfHttp() = default;
  Status start(HttpServer::Handler handler, std::string path);

  std::unique_ptr<InferenceService> tensor_;
  std::unique_ptr<GenerationService> language_;
  std::unique_ptr<HttpServer> server_;
  Url url_;
};

}  // namespace batchscope

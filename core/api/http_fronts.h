// SPDX-License-Identifier: GPL-3.0-or-later
// The HTTP fronts a bench hands down to core/model's run (load_driver.h's
// HttpFront, gen_load.h's LmHttpFront): this process's own listener over the
// run's engine (self-http, SelfHttp), or the server at a URL, with the
// client that sends the load (HttpTarget, GenHttpTarget).
// Thread-safety: opened, used and closed on the thread that runs the load.

#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/gen_http_target.h"
#include "api/http_target.h"
#include "api/self_http.h"

namespace batchscope {

// A bench's --target as a URL, `token` its bearer token; the error names
// the flag and what else it may be.
Expected<Url> target_url(const std::string& target, const std::string& token);

// A tensor model's: `url` a server's (unused when open() gets an engine);
// `bodies` sent as given, else built from the model's seeded inputs.
class TensorHttpFront final : public HttpFront {
 public:
  TensorHttpFront(std::optional<Url> url, std::string device, int connections, uint64_t seed,
                  std::vector<std::string> bodies, std::optional<LengthDist> seq_len);
  Expected<LoadTarget*> open(Engine* engine, const ModelMetadata& model,
                             const std::vector<Tensors>& varied) override;
  void close() override;

 private:
  std::optional<Url> url_;
  std::string device_;
  int connections_;
  uint64_t seed_;
  std::vector<std::string> bodies_;
  std::optional<LengthDist> seq_len_;
  std::unique_ptr<SelfHttp> self_;
  std::unique_ptr<HttpTarget> target_;
};

// A language model's, over OpenAI's routes: `api` "chat", "completions" or
// empty (from the URL's path), `served` the model asked for (empty: the run's
// own over self-http, else the first the server lists). `said` hears the
// route and model chosen, once open.
class LmOpenAiFront final : public LmHttpFront {
 public:
  LmOpenAiFront(Url url, std::string api, std::string served, std::string device, int connections,
                std::function<void(const std::string&)> said);
  Expected<GenTarget*> open(GenEngine* engine, GenRun& run) override;
  void close() override;

 private:
  Url url_;
  std::string api_, served_, device_;
  int connections_;
  std::function<void(const std::string&)> said_;
  std::unique_ptr<SelfHttp> self_;
  std::unique_ptr<GenHttpTarget> target_;
};

}  // namespace batchscope

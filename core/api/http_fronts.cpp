// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/http_fronts.h"

#include "common/build_info.h"

namespace batchscope {

Expected<Url> target_url(const std::string& target, const std::string& token) {
  auto url = parse_url(target);
  if (!url) {
    return invalid_argument("--target: " + url.error().message +
                            "; use inproc, self-http or a URL");
  }
  url->bearer_token = token;
  return url;
}

TensorHttpFront::TensorHttpFront(std::optional<Url> url, std::string device, int connections,
                                 uint64_t seed, std::vector<std::string> bodies,
                                 std::optional<LengthDist> seq_len)
    : url_(std::move(url)),
      device_(std::move(device)),
      connections_(connections),
      seed_(seed),
      bodies_(std::move(bodies)),
      seq_len_(std::move(seq_len)) {}

Expected<LoadTarget*> TensorHttpFront::open(Engine* engine, const ModelMetadata& model,
                                            const std::vector<Tensors>& varied) {
  if (engine) {
    auto served = SelfHttp::serve(
        *engine, ServiceInfo{.model = model, .device = device_, .version = build_version()});
    if (!served) return served.error();
    self_ = std::move(*served);
    url_ = self_->url();
  }
  if (!url_) return invalid_argument("no URL to send to, and no engine to serve");
  if (bodies_.empty()) {
    for (const Tensors& in : varied) bodies_.push_back(infer_body(*url_, model, in));
  }
  target_ = std::make_unique<HttpTarget>(*url_, model, connections_, seed_, bodies_, seq_len_);
  if (Status s = target_->start(); !s) return s.error();
  return target_.get();
}

void TensorHttpFront::close() {
  if (target_) target_->stop();
  if (self_) self_->stop();
}

LmOpenAiFront::LmOpenAiFront(Url url, std::string api, std::string served, std::string device,
                             int connections, std::function<void(const std::string&)> said)
    : url_(std::move(url)),
      api_(std::move(api)),
      served_(std::move(served)),
      device_(std::move(device)),
      connections_(connections),
      said_(std::move(said)) {}

Expected<GenTarget*> LmOpenAiFront::open(GenEngine* engine, GenRun& run) {
  const std::string target = run.target;
  if (engine) {
    auto listening =
        SelfHttp::serve(*engine, GenServiceInfo{engine->info(), device_, build_version()});
    if (!listening) return listening.error();
    self_ = std::move(*listening);
    url_ = self_->url();
    if (served_.empty()) served_ = run.model;
  }
  const OpenAiApi api = settle_api_url(url_, api_);
  if (served_.empty()) served_ = served_model(url_);
  if (said_) {
    said_("POST " + url_.path + " (" + openai_api_name(api) + ")" +
          (served_.empty() ? "" : ", model " + served_));
  }
  if (api == OpenAiApi::kChat) run.target = target + " (chat)";
  if (!engine && !served_.empty()) run.model = served_;
  target_ = std::make_unique<GenHttpTarget>(url_, api, served_, connections_);
  if (Status s = target_->start(); !s) return s.error();
  return target_.get();
}

void LmOpenAiFront::close() {
  if (target_) target_->stop();
  if (self_) self_->stop();
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A load run's target over HTTP: this process's listener or any server that
// speaks `POST /infer` ({"data": [...]}) or KServe v2 `POST
// /v2/models/{m}/infer` (Batchscope, Triton, the Python engine, ...). Bodies
// are built once from seeded inputs that fit the model and cycled, so the
// client spends its time sending, not encoding. HTTP statuses map back to
// outcomes: 200 ok, 429 rejected, 504 timed out, 400/422 invalid, 503
// shutting down, anything else (or no answer) an error.
// Thread-safety: send() from the load driver's thread.

#include <optional>
#include <string>
#include <vector>

#include "common/model_metadata.h"
#include "http/http_client.h"
#include "traffic/gen_workload.h"
#include "traffic/load_driver.h"

namespace batchscope {

class HttpTarget final : public LoadTarget {
 public:
  // `url` ends in /infer (simple body) or /v2/models/{m}/infer (KServe v2).
  // `bodies`, when given, are sent as they are, in turn. Otherwise, for a
  // model whose inputs vary in length, the requests bench sends in-process
  // (varied_inputs() of `lengths`, or the model's default lengths).
  HttpTarget(Url url, const ModelMetadata& model, int connections, uint64_t seed,
             std::vector<std::string> bodies = {},
             const std::optional<LengthDist>& lengths = std::nullopt);
  Status start() { return client_.start(); }
  void send(uint64_t index, Done done) override;
  void stop() { client_.stop(); }

 private:
  Url url_;
  HttpLoadClient client_;
  std::vector<std::string> requests_;  // whole HTTP requests, ready to send
};

Outcome outcome_of_http(int status);
// One request's body for `url`'s protocol.
std::string infer_body(const Url& url, const ModelMetadata& model, const Tensors& inputs);

}  // namespace batchscope

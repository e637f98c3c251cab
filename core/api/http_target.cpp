// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/http_target.h"

#include "api/infer_json.h"
#include "traffic/varied_inputs.h"

namespace batchscope {

Outcome outcome_of_http(int status) {
  switch (status) {
    case 200: return Outcome::kOk;
    case 429: return Outcome::kRejected;
    case 504: return Outcome::kTimedOut;
    case 400:
    case 422: return Outcome::kInvalid;
    case 503: return Outcome::kShuttingDown;
    default: return Outcome::kModelError;
  }
}

std::string infer_body(const Url& url, const ModelMetadata& model, const Tensors& inputs) {
  std::string b;
  if (url.path.find("/v2/models/") == std::string::npos) {
    b = "{\"data\":";
    append_json_values(b, inputs.at(0));
    return b + "}";
  }
  b = "{\"inputs\":[";
  for (size_t k = 0; k < inputs.size(); ++k) {
    const TensorSpec& spec = model.inputs[k];
    if (k) b += ',';
    b += "{\"name\":";
    append_json_string(b, spec.name);
    b += ",\"datatype\":";
    append_json_string(b, dtype_name(spec.dtype));
    b += ",\"shape\":[1";
    // The request's own: a variable dimension's length; BYTES one string, as declared.
    const Shape item = spec.dtype == DType::kBytes ? spec.item_shape() : inputs[k].shape();
    for (int64_t d : item) {
      b += ',';
      b += std::to_string(d);
    }
    b += "],\"data\":";
    append_json_values(b, inputs[k]);
    b += '}';
  }
  return b + "]}";
}

HttpTarget::HttpTarget(Url url, const ModelMetadata& model, int connections, uint64_t seed,
                       std::vector<std::string> bodies, const std::optional<LengthDist>& lengths)
    : url_(std::move(url)), client_(url_.host, url_.port, connections) {
  if (bodies.empty() && has_variable_inputs(model)) {
    for (const Tensors& in :
         varied_inputs(model, lengths.value_or(default_lengths(model)), seed, kVariedPool)) {
      bodies.push_back(infer_body(url_, model, in));
    }
  }
  if (bodies.empty()) {
    for (uint64_t i = 0; i < 64; ++i)
      bodies.push_back(infer_body(url_, model, random_inputs(model, seed + i)));
  }
  for (const std::string& b : bodies) requests_.push_back(json_post(url_, b));
}

void HttpTarget::send(uint64_t index, Done done) {
  client_.send(requests_[index % requests_.size()],
               [done = std::move(done)](int status, std::string_view) {
                 Result r;
                 r.http_status = status;
                 r.outcome = outcome_of_http(status);
                 done(r);
               });
}

}  // namespace batchscope

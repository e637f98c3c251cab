// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the request-level and the generation services answer alike: JSON
// and 405 answers, the server routes (/v2, /v2/health/live,
// /v2/health/ready), the model path's name and version, GET|PUT
// /v1/config over any engine's options, and the HTTP figures for /metrics.
// Thread-safety: free functions; call them on the HTTP I/O thread.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "api/prometheus.h"
#include "common/options.h"
#include "http/http_server.h"
#include "http/service_access.h"

namespace batchscope {

HttpResponse json_response(std::string body);
HttpResponse method_not_allowed(const char* allow, ErrorMaker make_error = error_response);

// Answers /v2 (with `extensions`, a JSON array), /v2/health/live and
// /v2/health/ready; false when the path is none of them.
bool answer_server_route(const HttpRequest& req, const Responder& r, std::string_view version,
                         std::string_view extensions, bool shutting_down);

// "{m}[/versions/{v}][tail]" under /v2/models/: the tail, or nullopt after
// answering 404 for another model's name or a version other than 1.
std::optional<std::string_view> model_tail(std::string_view rest, const std::string& model,
                                           const Responder& r);

// GET|PUT /v1/config: `read` gives the version and options in force,
// `apply` swaps in new ones (an error is answered 400).
// `make_error` shapes its errors.
void answer_config(const HttpRequest& req, const Responder& r, const ServiceAccess& access,
                   const std::function<std::pair<uint64_t, Options>()>& read,
                   const std::function<Status(const Options&)>& apply,
                   ErrorMaker make_error = error_response);

// The model, device, version and the server's HTTP counts for /metrics.
ServerInfo server_info(std::string model, std::string device, std::string version,
                       const HttpServer* server);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Who may use a server's routes, shared by the request-level and the
// generation services. With a token, every route but /health and
// /v2/health/* needs "Authorization: Bearer TOKEN" (401 otherwise), so a
// listener bound beyond loopback is not open to anyone who can reach it.
// Without remote_config, PUT /v1/config answers 403 (GET still reads).
// Thread-safety: plain values and free functions without shared state.

#include <optional>
#include <string>

#include "http/http_parser.h"
#include "http/http_server.h"

namespace batchscope {

// /health, /v2/health/live and /v2/health/ready, exactly. Health checks stay
// open: they need no token (so load balancers and probes need none; exact
// paths only, so that no other answer, a 404 naming the model, leaks), and
// a listener at its connection limit still answers them.
bool is_health_path(std::string_view path);

struct ServiceAccess {
  std::string token;  // empty: no authentication
  bool remote_config = true;
};

// The 401 answer for a request without the token on a route that needs it;
// nullopt when the request may go on. The comparison takes the same time
// however much of a guess is right.
std::optional<HttpResponse> refuse_unauthorized(const HttpRequest& req, const ServiceAccess& access,
                                                ErrorMaker make_error = error_response);

// What to tell a person who binds `host` beyond loopback: who can reach the
// server and what they can do there, given `access`.
std::string exposure_warning(const std::string& host, const ServiceAccess& access);

}  // namespace batchscope

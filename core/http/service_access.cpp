// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/service_access.h"

#include <cctype>

namespace batchscope {

bool is_health_path(std::string_view path) {
  return path == "/health" || path == "/v2/health/live" || path == "/v2/health/ready";
}

namespace {

// Runs over the whole secret whatever was sent, so that the time taken tells
// a client neither how much of a guess was right nor how long the secret is.
bool same_secret(std::string_view sent, std::string_view secret) {
  unsigned diff = sent.size() == secret.size() ? 0u : 1u;
  for (size_t i = 0; i < secret.size(); ++i) {
    const char c = i < sent.size() ? sent[i] : '\0';
    diff |= static_cast<unsigned char>(c ^ secret[i]);
  }
  return diff == 0;
}

// "Bearer TOKEN", the scheme in any case (RFC 9110 11.1): the token, or
// nullopt for another scheme or none.
std::optional<std::string_view> bearer_token(std::string_view auth) {
  constexpr std::string_view kScheme = "bearer ";
  if (auth.size() < kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(auth[i])) != kScheme[i]) return std::nullopt;
  }
  auth.remove_prefix(kScheme.size());
  while (!auth.empty() && auth.front() == ' ') auth.remove_prefix(1);
  return auth;
}

}  // namespace

std::optional<HttpResponse> refuse_unauthorized(const HttpRequest& req, const ServiceAccess& access,
                                                ErrorMaker make_error) {
  if (access.token.empty() || is_health_path(req.path())) return std::nullopt;
  const auto token = bearer_token(req.header("authorization"));
  if (token && same_secret(*token, access.token)) return std::nullopt;
  HttpResponse resp = make_error(
      401, token ? "the bearer token is not this server's"
                 : "this server needs an 'Authorization: Bearer TOKEN' header (its --token)");
  resp.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"batchscope\"");
  return resp;
}

std::string exposure_warning(const std::string& host, const ServiceAccess& access) {
  std::string w = "warning: listening on " + host + ", which other machines can reach. ";
  if (access.token.empty()) {
    w += access.remote_config ? "Anyone who can connect can run the model and retune it "
                                "(PUT /v1/config). "
                              : "Anyone who can connect can run the model. ";
    w += "Set a token (--token or BATCHSCOPE_TOKEN) to require 'Authorization: Bearer'";
    w += access.remote_config ? ", and --no-remote-config to make the options read-only. " : ". ";
  } else {
    w += "Without the bearer token a client reaches only /health and /v2/health/*; ";
    w += access.remote_config ? "with it, it can also retune the server (--no-remote-config "
                                "makes the options read-only). "
                              : "with it, it can run the model but not retune it. ";
  }
  return w + "Traffic is plain HTTP: put TLS in front of it beyond a trusted network.";
}

}  // namespace batchscope

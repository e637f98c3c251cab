// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/service_routes.h"

#include "api/options_json.h"
#include "common/text_out.h"

namespace batchscope {

HttpResponse json_response(std::string body) {
  HttpResponse r;
  r.body = std::move(body);
  return r;
}

HttpResponse method_not_allowed(const char* allow, ErrorMaker make_error) {
  HttpResponse r = make_error(405, std::string("method not allowed; use ") + allow);
  r.headers.emplace_back("Allow", allow);
  return r;
}

bool answer_server_route(const HttpRequest& req, const Responder& r, std::string_view version,
                         std::string_view extensions, bool shutting_down) {
  const std::string_view path = req.path();
  const bool get = req.method == "GET";
  if (path == "/v2") {
    if (!get) return r.send(method_not_allowed("GET")), true;
    std::string b = "{\"name\":\"batchscope\",\"version\":";
    append_json_string(b, version);
    r.send(json_response(b + ",\"extensions\":" + std::string(extensions) + "}"));
  } else if (path == "/v2/health/live") {
    r.send(get ? json_response("{\"live\":true}") : method_not_allowed("GET"));
  } else if (path == "/v2/health/ready") {
    if (!get)
      r.send(method_not_allowed("GET"));
    else if (shutting_down)
      r.send(error_response(503, "shutting down"));
    else
      r.send(json_response("{\"ready\":true}"));
  } else {
    return false;
  }
  return true;
}

std::optional<std::string_view> model_tail(std::string_view rest, const std::string& model,
                                           const Responder& r) {
  const size_t slash = rest.find('/');
  const std::string_view name = rest.substr(0, slash);
  std::string_view tail = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (name != model) {
    r.send(error_response(
        404, "unknown model " + quoted_excerpt(name) + "; this server serves '" + model + "'"));
    return std::nullopt;
  }
  constexpr std::string_view kVersions = "/versions/";
  if (tail.substr(0, kVersions.size()) == kVersions) {
    tail = tail.substr(kVersions.size());
    const size_t s = tail.find('/');
    const std::string_view version = tail.substr(0, s);
    if (version != "1") {
      r.send(error_response(404, "model '" + model + "' has no version " + quoted_excerpt(version) +
                                     "; it has version 1"));
      return std::nullopt;
    }
    tail = s == std::string_view::npos ? "" : tail.substr(s);
  }
  return tail;
}

void answer_config(const HttpRequest& req, const Responder& r, const ServiceAccess& access,
                   const std::function<std::pair<uint64_t, Options>()>& read,
                   const std::function<Status(const Options&)>& apply, ErrorMaker make_error) {
  if (req.method == "PUT") {
    if (!access.remote_config) {
      return r.send(make_error(403,
                               "this server's options cannot be changed over HTTP (it runs "
                               "with --no-remote-config); GET /v1/config reads them"));
    }
    auto o = options_from_json(req.body, read().second);
    if (!o) return r.send(make_error(400, o.error().message));
    if (Status s = apply(*o); !s) return r.send(make_error(400, s.message()));
  }
  const auto [version, options] = read();
  r.send(json_response("{\"version\":" + std::to_string(version) +
                       ",\"options\":" + options_to_json(options) + "}"));
}

ServerInfo server_info(std::string model, std::string device, std::string version,
                       const HttpServer* server) {
  ServerInfo si;
  si.model = std::move(model);
  si.device = std::move(device);
  si.version = std::move(version);
  if (server) {
    const HttpCounters c = server->counters();
    si.http_requests = c.written;
    si.http_errors = c.errors;
    si.http_by_status = c.by_status;
    si.http_dropped = c.dropped;
    si.http_parsed = c.parsed;
    si.http_connections = c.connections;
    si.http_max_connections = c.max_connections;
    si.http_closed_for_room = c.closed_for_room;
    si.http_refused_at_limit = c.refused_at_limit;
    si.http_accept_errors = c.accept_errors;
  }
  return si;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/http_client.h"

#include <algorithm>
#include <charconv>
#include <variant>
#include <vector>

#include "http/client_pool.h"
#include "http/http_response.h"

namespace batchscope {

Expected<Url> parse_url(std::string_view text) {
  constexpr std::string_view kScheme = "http://";
  if (text.substr(0, kScheme.size()) != kScheme) {
    return invalid_argument("'" + std::string(text) + "' is not an http:// URL");
  }
  std::string_view rest = text.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  Url u;
  u.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  const size_t colon = hostport.rfind(':');
  u.host = std::string(hostport.substr(0, colon));
  if (colon != std::string_view::npos) {
    unsigned p = 0;
    const std::string_view ps = hostport.substr(colon + 1);
    auto [end, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), p);
    if (ec != std::errc() || end != ps.data() + ps.size() || p == 0 || p > 65535) {
      return invalid_argument("'" + std::string(text) + "' has no valid port");
    }
    u.port = static_cast<uint16_t>(p);
  }
  if (u.host.empty()) return invalid_argument("'" + std::string(text) + "' has no host");
  return u;
}

std::string json_post(const Url& url, std::string_view body) {
  std::string r =
      "POST " + url.path + " HTTP/1.1\r\nHost: " + url.host + ":" + std::to_string(url.port) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n";
  if (!url.bearer_token.empty()) r += "Authorization: Bearer " + url.bearer_token + "\r\n";
  r += "\r\n";
  r.append(body);
  return r;
}

struct HttpLoadClient::Impl final : ClientPool {
  std::vector<std::string> in;  // per connection: bytes read, not yet a whole response

  Impl(std::string host, uint16_t port, int connections)
      : ClientPool(std::move(host), port, connections),
        in(static_cast<size_t>(std::max(1, connections))) {}
  ~Impl() override { stop(); }

  void connected(size_t conn) override { in[conn].clear(); }

  bool received(size_t conn, std::string_view bytes) override {
    in[conn].append(bytes);
    // Parsed after every read, so a server cannot grow the buffer past the
    // response limit by sending faster than we parse.
    return take_responses(conn, false);
  }

  bool server_closed(size_t conn) override { return take_responses(conn, true); }

  // Hands over each whole response in in[conn]; false once the connection
  // has been closed (a malformed response, or the server said it closes).
  bool take_responses(size_t conn, bool eof) {
    for (;;) {
      HttpResponseParse r = parse_response(in[conn], eof);
      if (std::holds_alternative<std::monostate>(r)) return true;
      if (const auto* e = std::get_if<HttpResponseError>(&r)) {
        close(conn, "malformed response: " + e->message);
        return false;
      }
      const ReceivedResponse& resp = std::get<ReceivedResponse>(r);
      in[conn].erase(0, resp.size);
      if (resp.status < 200) continue;  // interim (100 Continue); the real answer follows
      if (!busy(conn)) {
        close(conn, "the server sent a response to no request");
        return false;
      }
      Done done = std::move(finish(conn)->done);
      done(resp.status, resp.body);
      if (!resp.keep_alive) {
        close(conn, "the server closed the connection");
        return false;
      }
    }
  }
};

HttpLoadClient::HttpLoadClient(std::string host, uint16_t port, int connections)
    : impl_(std::make_unique<Impl>(std::move(host), port, connections)) {}

HttpLoadClient::~HttpLoadClient() { stop(); }

Status HttpLoadClient::start() { return impl_->start(); }

void HttpLoadClient::send(std::string request, Done done) {
  auto r = std::make_unique<ClientPool::Request>();
  r->bytes = std::move(request);
  r->done = std::move(done);
  impl_->send(std::move(r));
}

void HttpLoadClient::stop() { impl_->stop(); }

}  // namespace batchscope

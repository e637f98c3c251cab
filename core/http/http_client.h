// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A load-generating HTTP/1.1 client: N keep-alive connections to one server,
// driven by one epoll thread, so that the client is not the bottleneck when
// measuring a server (20,000+ requests/s on one core). Each connection
// carries one request at a time; requests wait in a FIFO for a free
// connection (that wait counts in the caller's latency, as it should).
// Plain POSIX sockets: no Qt, no event loop of the caller's.
// Responses are read with parse_response (http_response.h): a malformed one,
// or one past its size limits, fails its request and closes the connection.
//
// Thread-safety: send() from any thread; callbacks run on the client's
// thread and must not block.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace batchscope {

struct Url {
  std::string host;
  uint16_t port = 80;
  std::string path = "/";
  std::string bearer_token;  // sent as "Authorization: Bearer ..." when not empty
};
// "http://127.0.0.1:8000/infer"; only http.
Expected<Url> parse_url(std::string_view text);

class HttpLoadClient {
 public:
  // status 0 means no answer: the connection failed or closed; `body` then
  // says why.
  using Done = std::function<void(int status, std::string_view body)>;

  HttpLoadClient(std::string host, uint16_t port, int connections);
  ~HttpLoadClient();
  HttpLoadClient(const HttpLoadClient&) = delete;
  HttpLoadClient& operator=(const HttpLoadClient&) = delete;

  // Opens the connections and starts the thread; the error names the host,
  // port and reason ("Connection refused").
  Status start();
  // Queues one request (complete bytes: request line, headers, body).
  void send(std::string request, Done done);
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "POST PATH HTTP/1.1" with Host, Content-Type: application/json,
// Content-Length, and Authorization when the URL carries a bearer token.
std::string json_post(const Url& url, std::string_view body);

}  // namespace batchscope

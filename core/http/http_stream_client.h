// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// HttpStreamClient: the load client for streamed answers (Server-Sent Events
// from a generation route such as POST /v1/completions with "stream": true).
// Like HttpLoadClient (http_client.h): N keep-alive connections to one
// server driven by one epoll thread, one request per connection at a time,
// requests waiting in a FIFO for a free connection; plain POSIX sockets.
// Each answer is read with an SseReader (sse.h) as its bytes arrive, and
// every event is handed over with the steady-clock time its bytes were
// received, so a caller measures time to first token and inter-token
// latency from the client's side of the wire.
//
// Under load: one recv() buffer per read, and one clock read per recv(),
// shared by the events that read completed. A malformed answer, or one
// past the reader's limits, fails its request and closes the connection.
//
// Thread-safety: send() from any thread; start() and stop() from one
// controlling thread. Callbacks run on the client's thread (those of
// requests still queued or running when stop() is called run on the
// caller's thread, with status 0) and must not block.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"
#include "http/sse.h"

namespace batchscope {

class HttpStreamClient {
 public:
  // One event's data, and when the bytes that completed it were received.
  using Event = std::function<void(std::string_view data, TimePoint when)>;
  // Once per request, after its last event: the status, and the body of an
  // answer that is not an event stream (a 429 JSON error, say). Status 0
  // means no complete answer: the connection failed or closed, and the
  // text says why.
  using Done = std::function<void(int status, std::string_view body_or_reason)>;

  HttpStreamClient(std::string host, uint16_t port, int connections, SseLimits limits = {});
  ~HttpStreamClient();
  HttpStreamClient(const HttpStreamClient&) = delete;
  HttpStreamClient& operator=(const HttpStreamClient&) = delete;

  // Opens the connections and starts the thread; the error names the host,
  // port and reason ("Connection refused"). A connection that fails later
  // is opened again for the next request; if that fails, the request is
  // done with status 0.
  Status start();
  // Queues one request (complete bytes: request line, headers, body), for
  // instance json_post(url, body) from http_client.h.
  void send(std::string request, Event on_event, Done on_done);
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace batchscope

#pragma once
// The HTTP/1.1 listener: a QTcpServer and its connections on one I/O thread
// of their own, so serving never waits on the GUI or the model.
//
// Each parsed request goes to the handler on the I/O thread together with a
// Responder, which any thread may complete exactly once (an engine lane
// completes it when the batch returns). Responses go out in request order,
// so pipelined requests are answered in order. Keep-alive, an idle timeout,
// and the parser's limits (431 for headers over 16 KiB, 413 for bodies over
// the limit, before they are buffered) hold per connection. A client that
// disconnects runs the cancel hooks of its unanswered requests, so queued
// work for it is cancelled.
//
// Thread-safety: start() and stop() from one controlling thread; Responder
// from any thread; the handler runs on the I/O thread only.

#include <QObject>
#include <QThread>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http_parser.h"
#include "status.h"

namespace batchscope {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra, e.g. Retry-After
};

// {"error": message} with `status`.
HttpResponse error_response(int status, const std::string& message);
const char* status_reason(int status);

class Listener;

// Completes one request. Copyable; the first send() wins, later ones are
// ignored. If the client has gone, the response is dropped.
class Responder {
 public:
  Responder() = default;
  void send(HttpResponse response) const;
  // On the I/O thread, before send(): run `f` if the client disconnects
  // while this request is unanswered.
  void on_disconnect(std::function<void()> f) const;

 private:
  friend class Listener;
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

struct HttpServerOptions {
  HttpLimits limits;
  int idle_timeout_ms = 60'000;  // an idle keep-alive connection is closed after this
};

class HttpServer {
 public:
  using Handler = std::function<void(HttpRequest&& request, Responder responder)>;

  HttpServer(Handler handler, HttpServerOptions options = {});
  ~HttpServer();

  // Binds and listens; returns the bound port (useful with port 0).
  Expected<uint16_t> start(const std::string& host, uint16_t port);
  // Stops accepting, waits up to `drain_ms` for every unanswered request to
  // be answered and written, then closes all connections.
  void stop(int drain_ms = 10'000);

  // Runs `f` on the I/O thread (for work that must live there, like timers).
  void post(std::function<void()> f);

  uint64_t requests() const;  // answered, all routes
  uint64_t errors() const;    // answered with a status >= 400

 private:
  QThread thread_;
  Listener* listener_ = nullptr;  // lives on thread_
};

}  // namespace batchscope

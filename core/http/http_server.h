// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The HTTP/1.1 listener: a listening socket and its connections (TcpConn)
// on one I/O thread of their own, so serving never waits on the GUI or the
// model.
//
// Each parsed request goes to the handler on the I/O thread together with a
// Responder, which any thread may complete exactly once (an engine lane
// completes it when the batch returns). Responses go out in request order,
// so pipelined requests are answered in order. A client that disconnects
// runs the cancel hooks of its unanswered requests, so queued work for it is
// cancelled.
//
// Hostile and careless clients (each rule per connection):
//  - limits before memory: 431 for a head over 16 KiB, 413 for a body over
//    the limit, before either is buffered (HttpParser);
//  - deadlines: 408 when a request's head does not arrive within
//    header_timeout_ms of its first byte, or its body arrives slower than
//    min_body_bytes_per_s after a grace period (ReadWatch); an idle
//    keep-alive connection is closed after idle_timeout_ms;
//  - backpressure: while max_pending_responses answers wait or
//    max_unwritten_bytes are unwritten, the connection is not read, so a
//    client that pipelines without reading cannot grow the server's memory;
//  - a send timeout: an answer that makes no progress for send_timeout_ms
//    (its client does not read) closes the connection;
//  - graceful close: an answer that ends the connection (an error, or
//    Connection: close) is written, the socket half-closed, and what the
//    client still sends read and discarded for at most linger_ms and
//    linger_bytes, so a client busy writing a refused body reads the 413
//    instead of a connection reset;
//  - stopping: idle connections close at once, busy ones after their last
//    answer, and no new request is read; what is left when the drain time
//    is up is aborted and its answers counted as dropped.
// A client that shuts its sending side (half-closes, as `nc -N` does) gets
// every answer to the requests it sent, then the connection closes; one
// that closes normally looks the same until a write to it fails (its
// queued work runs). A client that resets is gone at once: its queued
// requests are cancelled and their answers counted as dropped.
//  - connections: at most max_connections (see HttpServerOptions).
//  - streamed answers (Server-Sent Events for generation) follow the same
//    rules: a stream at the head of the pipeline is written chunk by chunk
//    as it is produced, and pipelined answers behind it wait for its end.
//    It counts once, with its status, when its last chunk has left for the
//    kernel, or as dropped. Its client not reading: the send timeout
//    applies, and a producer whose chunks would take the unwritten bytes
//    past max_unwritten_bytes has its connection cut (the stream is not
//    buffered without bound; chunks still on their way to the I/O thread
//    are not counted, as a producer makes them at generation speed). While
//    a stream runs the idle timeout and the read deadlines are off.
//    Stopping lets it finish within the drain time and cuts it after. A
//    stream whose Responder goes without end_stream() is incomplete: the
//    connection closes without the last chunk. A HEAD request's stream
//    sends its head alone.
//  - no exception escapes an event handler: one thrown while a request is
//    handled answers it 500 (naming the cause) and serving goes on; a
//    Responder dropped unanswered answers 500, so every request parsed gets
//    exactly one response.
//
// Thread-safety: start() and stop() from one controlling thread; Responder
// from any thread; the handler runs on the I/O thread only; the counters may
// be read from any thread.

#include <QObject>
#include <QThread>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "http/http_parser.h"

namespace batchscope {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra, e.g. Retry-After
};

// {"error": message} with `status`.
HttpResponse error_response(int status, const std::string& message);
// How a service shapes its errors: error_response, or another shape (OpenAI's
// error object, openai_error.h) with the same status and headers.
using ErrorMaker = HttpResponse (*)(int status, const std::string& message);
const char* status_reason(int status);

// True for 127.0.0.0/8 and ::1: addresses no other machine can reach.
bool is_loopback_host(const std::string& host);

class Listener;

// Completes one request, with one whole answer (send) or a streamed one
// (begin_stream, stream..., end_stream). Copyable; the first send() or
// begin_stream() wins, later ones are ignored. If the client has gone, the
// response is dropped. When the last copy goes without either, the request
// is answered 500; when it goes after begin_stream() without end_stream(),
// the connection is closed (the answer is incomplete).
// Any thread may call any method; the steps of one stream must be made in
// order (begin, chunks, end), and are written in that order.
class Responder {
 public:
  Responder() = default;
  void send(HttpResponse response) const;

  // Answers with a head that has Transfer-Encoding: chunked and
  // Cache-Control: no-cache (plus `headers`), and no body yet; `status`
  // must allow a body (200, or an error status). False when the request
  // was already answered or begun.
  bool begin_stream(int status, std::string content_type,
                    std::vector<std::pair<std::string, std::string>> headers = {}) const;
  // One chunk of the body (empty is ignored), after begin_stream() and
  // before end_stream(); ignored otherwise, and once the client has gone.
  void stream(std::string bytes) const;
  // The last chunk: the answer is complete.
  void end_stream() const;
  // True once the answer can no longer reach the client (it disconnected,
  // or its connection was cut): a producer can stop early.
  bool client_gone() const;

  // On the I/O thread, before send() or end_stream(): run `f` if the
  // client disconnects while this request is unanswered or its stream
  // unfinished (this is how generation is cancelled).
  void on_disconnect(std::function<void()> f) const;

 private:
  friend class Listener;
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

struct HttpServerOptions {
  HttpLimits limits;
  int idle_timeout_ms = 60'000;    // an idle keep-alive connection is closed after this
  int header_timeout_ms = 10'000;  // a request's line and headers must arrive within this
  // After body_grace_ms, a body must arrive at least this fast on average
  // (bytes per second; 0: no minimum).
  double min_body_bytes_per_s = 1024;
  int body_grace_ms = 5'000;
  // An answer that makes no progress for this long (the client is not
  // reading it) closes the connection.
  int send_timeout_ms = 30'000;
  // After an answer that closes the connection has been written: read and
  // discard for at most this long and this much, then close.
  int linger_ms = 5'000;
  uint64_t linger_bytes = uint64_t{64} << 20;
  // Backpressure thresholds: answers waiting (pipelined) and bytes not yet
  // written, beyond which the connection is not read until they drain. A
  // stream whose next chunk would take its unwritten bytes past
  // max_unwritten_bytes has its connection cut instead.
  size_t max_pending_responses = 64;
  size_t max_unwritten_bytes = size_t{8} << 20;
  // Connections open at once; 0: default_max_connections() of the process's
  // descriptor limit. At the limit the keep-alive connection idle the
  // longest is closed to make room; when none is idle, a new connection is
  // read for one request: a health check (is_health_path) is answered, any
  // other request gets 503, and it closes. Beyond a few such connections
  // accepting pauses until one closes. A failed accept (out of descriptors)
  // pauses accepting for a moment, never spins.
  size_t max_connections = 0;
};

// The connection limit that leaves a process with `descriptors` open files
// (RLIMIT_NOFILE) room for its own: models, logs, pipes, the connections
// being accepted. At least 1.
size_t default_max_connections(uint64_t descriptors);
// The same for this process's soft limit now.
size_t default_max_connections();

// Counts of one server since it was made.
struct HttpCounters {
  uint64_t parsed = 0;   // requests read (or refused while reading): each is answered once
  uint64_t written = 0;  // answers whose last byte has left for the client's kernel
  uint64_t errors = 0;   // of which with status >= 400
  uint64_t dropped = 0;  // answers never written in full: the connection went first
  uint64_t handler_exceptions = 0;  // exceptions caught at the connection boundary
  uint64_t connections = 0;         // open now (a gauge; += adds the other's)
  uint64_t max_connections = 0;     // the limit in force (a gauge; += keeps the larger)
  uint64_t closed_for_room = 0;     // idle keep-alive connections closed to make room
  uint64_t refused_at_limit = 0;    // requests answered 503 on a connection over the limit
  uint64_t accept_errors = 0;       // accepts that failed (out of descriptors, ...)
  std::vector<std::pair<int, uint64_t>> by_status;  // written answers per status, ascending

  // Adds another server's counts (a listener restarted over a new engine).
  HttpCounters& operator+=(const HttpCounters& other);
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

  uint64_t requests() const;  // answers written, all routes
  uint64_t errors() const;    // of which with a status >= 400
  HttpCounters counters() const;

 private:
  QThread thread_;
  Listener* listener_ = nullptr;  // lives on thread_
};

}  // namespace batchscope

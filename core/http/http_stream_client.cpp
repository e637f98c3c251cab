// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/http_stream_client.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "http/client_pool.h"

namespace batchscope {
namespace {

struct StreamRequest : ClientPool::Request {
  HttpStreamClient::Event on_event;
};

TimePoint received_now() {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

}  // namespace

struct HttpStreamClient::Impl final : ClientPool {
  SseLimits limits;
  std::vector<SseReader> readers;  // per connection: the answer being read

  Impl(std::string host, uint16_t port, int connections, SseLimits limits)
      : ClientPool(std::move(host), port, connections),
        limits(limits),
        readers(static_cast<size_t>(std::max(1, connections))) {}
  ~Impl() override { stop(); }

  void connected(size_t conn) override { readers[conn] = SseReader(limits); }

  bool received(size_t conn, std::string_view bytes) override {
    const TimePoint when = received_now();
    if (!busy(conn)) {
      close(conn, "the server sent bytes while no request was waiting");
      return false;
    }
    return take(conn, readers[conn].feed(bytes), bytes.size(), when);
  }

  // An answer without a length ends where the connection does; any other is
  // cut short, which finish() says.
  bool server_closed(size_t conn) override {
    return !busy(conn) || take(conn, readers[conn].finish(), 0, received_now());
  }

  // Hands over what the reader made of `fed` bytes (0: the connection
  // closed); false once the connection has been closed.
  bool take(size_t conn, const SseStep& s, size_t fed, TimePoint when) {
    if (const Event& on_event = static_cast<StreamRequest&>(running(conn)).on_event) {
      for (const std::string& e : s.events) on_event(e, when);
    }
    if (!s.error.empty()) {
      close(conn, fed == 0 ? s.error : "malformed response: " + s.error);
      return false;
    }
    if (!s.done) return true;
    const bool keep = readers[conn].keep_alive();
    Done done = std::move(finish(conn)->done);
    readers[conn] = SseReader(limits);
    if (done) done(s.status, s.body);
    if (s.used < fed) {
      close(conn, "the server sent a response to no request");
      return false;
    }
    if (!keep || fed == 0) {
      close(conn, "the server closed the connection");
      return false;
    }
    return true;
  }
};

HttpStreamClient::HttpStreamClient(std::string host, uint16_t port, int connections,
                                   SseLimits limits)
    : impl_(std::make_unique<Impl>(std::move(host), port, connections, limits)) {}

HttpStreamClient::~HttpStreamClient() { stop(); }

Status HttpStreamClient::start() { return impl_->start(); }

void HttpStreamClient::send(std::string request, Event on_event, Done on_done) {
  auto r = std::make_unique<StreamRequest>();
  r->bytes = std::move(request);
  r->done = std::move(on_done);
  r->on_event = std::move(on_event);
  impl_->send(std::move(r));
}

void HttpStreamClient::stop() { impl_->stop(); }

}  // namespace batchscope

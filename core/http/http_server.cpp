// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/http_server.h"

#include <QHostAddress>
#include <chrono>
#include <cstdio>
#include <map>

#include "common/text_out.h"
#include "http/http_listener.h"

namespace batchscope {

const char* status_reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
  }
  return "Unknown";
}

HttpResponse error_response(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = "{\"error\":";
  append_json_string(r.body, message);
  r.body += '}';
  return r;
}

HttpCounters& HttpCounters::operator+=(const HttpCounters& other) {
  parsed += other.parsed;
  written += other.written;
  errors += other.errors;
  dropped += other.dropped;
  handler_exceptions += other.handler_exceptions;
  connections += other.connections;
  max_connections = std::max(max_connections, other.max_connections);
  closed_for_room += other.closed_for_room;
  refused_at_limit += other.refused_at_limit;
  accept_errors += other.accept_errors;
  std::map<int, uint64_t> codes(by_status.begin(), by_status.end());
  for (const auto& [code, n] : other.by_status) codes[code] += n;
  by_status.assign(codes.begin(), codes.end());
  return *this;
}

bool is_loopback_host(const std::string& host) {
  QHostAddress a;
  return a.setAddress(QString::fromStdString(host)) && a.isLoopback();
}

void Responder::send(HttpResponse response) const {
  if (!shared_ || shared_->sent.exchange(true)) return;
  deliver(shared_->hub, shared_->conn, shared_->seq, std::move(response));
}

bool Responder::begin_stream(int status, std::string content_type,
                             std::vector<std::pair<std::string, std::string>> headers) const {
  if (!shared_ || shared_->sent.exchange(true)) return false;
  shared_->streaming = true;
  StreamPart p;
  p.kind = StreamPart::Kind::kBegin;
  p.head.status = status;
  p.head.content_type = std::move(content_type);
  p.head.headers = std::move(headers);
  deliver_part(shared_->hub, shared_->conn, shared_->seq, std::move(p));
  return true;
}

void Responder::stream(std::string bytes) const {
  if (!shared_ || bytes.empty() || !shared_->streaming.load() || shared_->ended.load() ||
      shared_->gone.load()) {
    return;
  }
  // Framed here, on the producer's thread, not on the I/O thread.
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  StreamPart p;
  p.kind = StreamPart::Kind::kChunk;
  p.bytes.reserve(n + static_cast<qsizetype>(bytes.size()) + 2);
  p.bytes.append(size, n);
  p.bytes.append(bytes.data(), static_cast<qsizetype>(bytes.size()));
  p.bytes.append("\r\n", 2);
  deliver_part(shared_->hub, shared_->conn, shared_->seq, std::move(p));
}

void Responder::end_stream() const {
  if (!shared_ || !shared_->streaming.load() || shared_->ended.exchange(true)) return;
  deliver_part(shared_->hub, shared_->conn, shared_->seq,
               StreamPart{StreamPart::Kind::kEnd, {}, {}});
}

bool Responder::client_gone() const { return shared_ && shared_->gone.load(); }

void Responder::on_disconnect(std::function<void()> f) const {
  if (!shared_) return;
  Listener* l = shared_->hub->listener;  // on the I/O thread, where it is never cleared
  if (l) l->add_hook(shared_->conn, shared_->seq, std::move(f));
}

HttpServer::HttpServer(Handler handler, HttpServerOptions options) {
  thread_.setObjectName("batchscope-http");
  listener_ = new Listener(std::move(handler), options);
  listener_->moveToThread(&thread_);
  thread_.start();
}

HttpServer::~HttpServer() {
  stop(0);
  delete listener_;
}

Expected<uint16_t> HttpServer::start(const std::string& host, uint16_t port) {
  Expected<uint16_t> result = Error{ErrorCode::kInternal, "the listener did not start"};
  QMetaObject::invokeMethod(
      listener_, [&] { result = listener_->listen(host, port); }, Qt::BlockingQueuedConnection);
  return result;
}

void HttpServer::stop(int drain_ms) {
  if (!thread_.isRunning()) return;
  QMetaObject::invokeMethod(
      listener_,
      [this] {
        listener_->stop_accepting();
        listener_->begin_drain();
      },
      Qt::BlockingQueuedConnection);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(drain_ms);
  for (;;) {
    size_t left = 0;
    QMetaObject::invokeMethod(
        listener_, [&] { left = listener_->unanswered(); }, Qt::BlockingQueuedConnection);
    if (left == 0 || std::chrono::steady_clock::now() >= until) break;
    QThread::msleep(5);
  }
  QMetaObject::invokeMethod(
      listener_, [this] { listener_->close_all(); }, Qt::BlockingQueuedConnection);
  // Let the disconnects flush what is still being written (bounded), then
  // cut the rest here, on the I/O thread, so that gone() counts it.
  for (int i = 0; i < 200; ++i) {
    size_t open = 0;
    QMetaObject::invokeMethod(
        listener_, [&] { open = listener_->connections(); }, Qt::BlockingQueuedConnection);
    if (open == 0) break;
    QThread::msleep(5);
  }
  QMetaObject::invokeMethod(
      listener_, [this] { listener_->abort_all(); }, Qt::BlockingQueuedConnection);
  thread_.quit();
  thread_.wait();
}

void HttpServer::post(std::function<void()> f) {
  QMetaObject::invokeMethod(listener_, std::move(f), Qt::QueuedConnection);
}

uint64_t HttpServer::requests() const { return listener_->written(); }
uint64_t HttpServer::errors() const { return listener_->errors(); }
HttpCounters HttpServer::counters() const { return listener_->counters(); }

}  // namespace batchscope

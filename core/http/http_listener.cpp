// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/http_listener.h"

#include <sys/socket.h>
#include <unistd.h>

#include <QAbstractEventDispatcher>
#include <QHostAddress>
#include <QThread>
#include <QTimer>
#include <algorithm>
#include <cstdio>

namespace batchscope {

namespace {

TimePoint steady_now() {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

// The answer to a request whose handling threw: the listener keeps serving.
HttpResponse exception_response(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc&) {
    return error_response(500, "the server ran out of memory handling this request");
  } catch (const std::exception& x) {
    return error_response(500, std::string("internal error handling this request: ") + x.what());
  } catch (...) {
  }
  return error_response(500, "internal error handling this request");
}

}  // namespace

Responder::Shared::~Shared() {
  // The last copy went unanswered (a callback the engine never ran, a path
  // that forgot to answer): the client still gets exactly one response.
  // A stream it began and never ended is incomplete: the connection closes
  // without the last chunk, so the client cannot take it for whole.
  try {
    if (!sent.exchange(true)) {
      deliver(hub, conn, seq, error_response(500, "the server produced no answer to this request"));
    } else if (streaming.load() && !ended.exchange(true)) {
      deliver_part(hub, conn, seq, StreamPart{StreamPart::Kind::kCut, {}, {}});
    }
  } catch (...) {
  }
}

void deliver(const std::shared_ptr<Hub>& hub, uint64_t conn, uint64_t seq, HttpResponse r) {
  Listener* l = nullptr;
  {
    MutexLock g(hub->mu);
    l = hub->listener;
    if (!l) return;
    if (QThread::currentThread() != l->thread()) {
      const bool wake = hub->done.empty();
      hub->done.push_back({conn, seq, std::move(r)});
      if (wake)
        QMetaObject::invokeMethod(
            l, [l] { l->complete_queued(); }, Qt::QueuedConnection);
      return;
    }
  }
  // On the I/O thread the listener lives as long as the thread runs, and
  // completing may close a connection whose other answers deliver again:
  // no lock is held here.
  l->complete(conn, seq, std::move(r));
}

Listener::Listener(HttpServer::Handler handler, HttpServerOptions options)
    : handler_(std::move(handler)),
      options_(options),
      timeouts_{std::chrono::milliseconds(options.header_timeout_ms), options.min_body_bytes_per_s,
                std::chrono::milliseconds(options.body_grace_ms)},
      hub_(std::make_shared<Hub>()) {
  hub_->listener = this;
  max_connections_ =
      options_.max_connections > 0 ? options_.max_connections : default_max_connections();
}

Listener::~Listener() {
  if (listen_fd_ >= 0) ::close(listen_fd_);  // never started accepting on its thread
  MutexLock g(hub_->mu);
  hub_->listener = nullptr;
}

Expected<uint16_t> Listener::listen(const std::string& host, uint16_t port) {
  auto bound = open_listening_socket(host, port);
  if (!bound) return bound.error();
  // What this pass of the event loop wrote leaves before it waits again.
  QObject::connect(QAbstractEventDispatcher::instance(), &QAbstractEventDispatcher::aboutToBlock,
                   this, [this] { guarded([this] { flush_written(); }); });
  // One timer checks every connection's deadlines; a quarter of the
  // shortest one keeps a 408 within 25% of its deadline.
  const int shortest = std::min({options_.header_timeout_ms, options_.body_grace_ms,
                                 options_.linger_ms, options_.send_timeout_ms});
  ticker_ = new QTimer(this);
  ticker_->setInterval(std::clamp(shortest / 4, 10, 250));
  QObject::connect(ticker_, &QTimer::timeout, this, [this] { guarded([this] { tick(); }); });
  ticker_->start();
  return *bound;
}

size_t Listener::unanswered() const {
  size_t n = 0;
  for (const auto& [id, c] : conns_) {
    for (const Slot& s : c->pending) n += s.ready ? 0 : 1;
  }
  return n;
}

void Listener::begin_drain() {
  std::vector<uint64_t> ids;
  for (const auto& [id, c] : conns_) ids.push_back(id);
  for (uint64_t id : ids) {
    Conn* c = find(id);
    if (!c || c->lingering) continue;
    c->closing = true;
    if (c->pending.empty()) {
      linger(*c);
    } else {
      c->close_when_answered = true;
    }
  }
}

void Listener::abort_all() {
  std::vector<uint64_t> ids;
  for (const auto& [id, c] : conns_) ids.push_back(id);
  for (uint64_t id : ids) {
    if (Conn* c = find(id)) c->socket->abort();
  }
}

void Listener::close_all() {
  // Timers belong to this thread: the ticker goes here, not with the
  // Listener, which is deleted on the controlling thread.
  delete ticker_;
  ticker_ = nullptr;
  // disconnectFromHost() may report the disconnect at once, and gone()
  // erases from conns_: take the sockets first (deleted later, not now).
  // A stream still running when the drain time is up is cut at once:
  // flushing part of it would not make it whole.
  std::vector<std::pair<TcpConn*, bool>> sockets;
  for (auto& [id, c] : conns_) sockets.emplace_back(c->socket, live_stream(*c));
  for (auto [s, cut] : sockets) {
    if (cut) {
      s->abort();
    } else {
      s->close();
    }
  }
}

void Listener::complete(uint64_t conn, uint64_t seq, HttpResponse r) {
  Conn* c = find(conn);
  Slot* slot_ptr = c ? slot(*c, seq) : nullptr;
  if (!slot_ptr || slot_ptr->ready || slot_ptr->streaming) return;
  Slot& s = *slot_ptr;
  try {
    s.bytes = serialize(r, s.close);
    s.status = r.status;
  } catch (...) {
    ++handler_exceptions_;
    s.bytes = serialize(error_response(500, "the answer could not be written"), s.close);
    s.status = 500;
  }
  s.ready = true;
  // The hooks die after the flush: a hook's destructor may answer another
  // request, which must not move the queue under `s`.
  const auto hooks = std::move(s.hooks);
  flush(*c);
}

void Listener::flush_written() {
  // Flushing may close a connection (a failed write): look each up afresh.
  std::vector<uint64_t> ids;
  ids.swap(to_flush_);
  for (uint64_t id : ids) {
    if (Conn* c = find(id)) {
      c->flush_queued = false;
      c->socket->flush();
    }
  }
}

void Listener::complete_queued() {
  std::vector<Hub::Done> done;
  {
    MutexLock g(hub_->mu);
    done.swap(hub_->done);
  }
  for (Hub::Done& d : done) guarded([&] { complete(d.conn, d.seq, std::move(d.response)); });
}

void Listener::add_hook(uint64_t conn, uint64_t seq, std::function<void()> f) {
  Conn* c = find(conn);
  if (Slot* s = c ? slot(*c, seq) : nullptr; s && !s->ready) s->hooks.push_back(std::move(f));
}

HttpCounters Listener::counters() const {
  HttpCounters c;
  c.parsed = parsed_.load();
  c.written = written_.load();
  c.errors = errors_.load();
  c.dropped = dropped_.load();
  c.handler_exceptions = handler_exceptions_.load();
  c.connections = open_.load();
  c.max_connections = max_connections_;
  c.closed_for_room = closed_for_room_.load();
  c.refused_at_limit = refused_at_limit_.load();
  c.accept_errors = accept_errors_.load();
  for (size_t code = 0; code < by_status_.size(); ++code) {
    if (const uint64_t n = by_status_[code].load()) c.by_status.emplace_back(code, n);
  }
  return c;
}

Listener::Conn* Listener::find(uint64_t id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

Listener::Slot* Listener::slot(Conn& c, uint64_t seq) {
  if (c.pending.empty() || seq < c.pending.front().seq) return nullptr;
  const uint64_t i = seq - c.pending.front().seq;
  return i < c.pending.size() ? &c.pending[static_cast<size_t>(i)] : nullptr;
}

void Listener::accept() {
  const uint64_t first_new = next_conn_ + 1;
  while (may_accept(first_new)) {
    TcpConn* sock = accept_one(first_new);
    if (!sock) break;
    const bool over_limit = !place(first_new);
    const uint64_t id = ++next_conn_;
    auto c = std::make_unique<Conn>(id, options_.limits, timeouts_);
    c->socket = sock;
    c->over_limit = over_limit;
    over_limit_ += over_limit ? 1 : 0;
    c->idle = new QTimer(sock);
    c->idle->setSingleShot(true);
    c->idle->setInterval(options_.idle_timeout_ms);
    QObject::connect(c->idle, &QTimer::timeout, sock, [this, id] {
      Conn* conn = find(id);
      // Answers still owed or being written: not idle (the send timeout
      // deals with a client that does not read them).
      if (conn && conn->pending.empty() && conn->socket->bytes_to_write() == 0)
        conn->socket->close();
      else if (conn)
        conn->idle->start();
    });
    sock->on_readable = [this, id] { read(id); };
    sock->on_written = [this, id](int64_t n) { guarded([&] { on_written(id, n); }); };
    sock->on_closed = [this, id] { guarded([&] { gone(id); }); };
    c->idle->start();
    c->last_progress = c->last_active = steady_now();
    conns_.emplace(id, std::move(c));
    ++open_;
  }
}

void Listener::read(uint64_t id) {
  try {
    read_requests(id);
  } catch (...) {
    // Reading or parsing itself failed (memory): answer and close.
    ++handler_exceptions_;
    const std::exception_ptr e = std::current_exception();
    guarded([&] {
      if (Conn* c = find(id); c && !c->closing) answer_and_close(*c, id, exception_response(e));
    });
  }
}

void Listener::read_requests(uint64_t id) {
  Conn* c = find(id);
  if (!c) return;
  if (c->closing) return discard(*c);
  if (over_backlog(*c)) {
    c->paused = true;
    return;
  }
  const QByteArray data = c->socket->take_input();
  c->idle->start();
  c->last_active = steady_now();
  c->parser.append(data.constData(), static_cast<size_t>(data.size()));
  while (!c->closing) {
    auto next = c->parser.next();
    // An interim answer may not overtake earlier answers still owed; a
    // client waits a moment without it and then sends the body anyway.
    if (c->parser.take_continue() && c->pending.empty()) {
      send_bytes(*c, QByteArrayLiteral("HTTP/1.1 100 Continue\r\n\r\n"), 0);
    }
    if (std::holds_alternative<std::monostate>(next)) break;
    if (auto* err = std::get_if<HttpParseError>(&next)) {
      return answer_and_close(*c, id, error_response(err->status, err->message));
    }
    HttpRequest& req = std::get<HttpRequest>(next);
    Slot& s = new_slot(*c);
    s.close = !req.keep_alive;
    s.head_only = req.method == "HEAD";
    if (s.close) c->closing = true;
    if (refuse_over_limit(*c, req, s)) {
      c = find(id);
      if (!c) return;
      continue;  // closing: the loop ends
    }
    {
      Responder r;
      r.shared_ = std::make_shared<Responder::Shared>();
      r.shared_->hub = hub_;
      r.shared_->conn = id;
      r.shared_->seq = s.seq;
      s.responder = r.shared_;
      try {
        handler_(std::move(req), r);
      } catch (...) {
        ++handler_exceptions_;
        r.send(exception_response(std::current_exception()));
      }
    }              // the last copy of an unanswered Responder answers here
    c = find(id);  // answering may have closed the connection
    if (!c) return;
    if (!c->closing && over_backlog(*c)) {
      c->paused = true;  // the rest stays in the parser until answers drain
      return;
    }
  }
  if (!c->closing && c->socket->peer_finished()) return input_ended(*c);
  if (!c->closing) check_deadlines(*c, id, steady_now());
}

Listener::Slot& Listener::new_slot(Conn& c) {
  Slot& s = c.pending.emplace_back();
  s.seq = c.next_seq++;
  ++parsed_;
  return s;
}

void Listener::answer_and_close(Conn& c, uint64_t id, HttpResponse r) {
  Slot& s = new_slot(c);
  s.close = true;
  c.closing = true;
  complete(id, s.seq, std::move(r));
}

void Listener::check_deadlines(Conn& c, uint64_t id, TimePoint now) {
  if (c.closing || c.paused || live_stream(c)) return;
  auto why = c.watch.check(now, c.parser.phase(), c.parser.body_bytes(), c.parser.messages());
  if (why) answer_and_close(c, id, error_response(408, *why));
}

bool Listener::over_backlog(const Conn& c) const {
  return c.pending.size() >= options_.max_pending_responses ||
         static_cast<size_t>(c.socket->bytes_to_write()) > options_.max_unwritten_bytes;
}

void Listener::discard(Conn& c) {
  c.discarded += static_cast<uint64_t>(c.socket->take_input().size());
  if (c.lingering && c.discarded > options_.linger_bytes) return c.socket->abort();
  // Both sides done: nothing is left to wait for.
  if (c.half_closed && c.socket->peer_finished()) close_later(c.id);
}

void Listener::input_ended(Conn& c) {
  c.closing = true;
  if (c.pending.empty()) return linger(c);
  c.close_when_answered = true;  // every answer owed is written first
}

void Listener::close_later(uint64_t id) {
  QMetaObject::invokeMethod(
      this,
      [this, id] {
        if (Conn* c = find(id)) c->socket->close();
      },
      Qt::QueuedConnection);
}

void Listener::flush(Conn& c) {
  if (c.lingering) return;  // the connection's last answer has gone out
  while (!c.pending.empty()) {
    Slot& s = c.pending.front();
    if (s.cut) return cut_stream(c);
    // A live stream writes what it has; a HEAD request's stream waits for
    // its end (its head is all it sends, and counts once written).
    const bool partial = s.streaming && !s.ready && !s.head_only;
    if (!s.ready && !partial) break;
    // The last write of an answer carries its status, so that it counts
    // as written when that write has left for the kernel.
    if (!s.bytes.isEmpty()) send_bytes(c, s.bytes, s.ready ? s.status : 0);
    s.bytes = QByteArray();
    if (!s.ready) break;  // answers behind a live stream wait for its end
    // The read deadlines and the idle timer were off during the stream:
    // the client's time for whatever it sends next starts now.
    if (s.streaming) {
      c.watch.restart(steady_now());
      c.idle->start();
    }
    const bool close = s.close;
    c.pending.pop_front();
    if (close) return linger(c);
  }
  if (c.pending.empty() && c.close_when_answered) return linger(c);
  resume_if_drained(c);
}

void Listener::send_bytes(Conn& c, const QByteArray& bytes, int status) {
  if (c.socket->bytes_to_write() == 0) c.last_progress = steady_now();
  c.unsent.push_back({static_cast<int64_t>(bytes.size()), status});
  c.socket->write(bytes);
  if (!c.flush_queued) {
    c.flush_queued = true;
    to_flush_.push_back(c.id);
  }
}

void Listener::count_written(int status) {
  ++written_;
  if (status >= 400) ++errors_;
  if (static_cast<size_t>(status) < by_status_.size()) ++by_status_[status];
}

void Listener::linger(Conn& c) {
  c.lingering = true;
  c.closing = true;
  if (c.socket->bytes_to_write() == 0) half_close(c);
}

void Listener::half_close(Conn& c) {
  if (c.half_closed) return;
  c.half_closed = true;
  c.linger_until = steady_now() + std::chrono::milliseconds(options_.linger_ms);
  c.socket->shutdown_write();
  if (c.socket->peer_finished()) close_later(c.id);  // the client is done too
}

void Listener::on_written(uint64_t id, qint64 n) {
  Conn* c = find(id);
  if (!c) return;
  c->last_progress = c->last_active = steady_now();
  while (n > 0 && !c->unsent.empty()) {
    Unsent& u = c->unsent.front();
    const int64_t take = std::min<int64_t>(n, u.bytes);
    u.bytes -= take;
    n -= take;
    if (u.bytes > 0) break;
    if (u.status > 0) count_written(u.status);
    c->unsent.pop_front();
  }
  if (c->lingering && c->socket->bytes_to_write() == 0) half_close(*c);
  resume_if_drained(*c);
}

void Listener::resume_if_drained(Conn& c) {
  if (!c.paused || c.closing || over_backlog(c)) return;
  c.paused = false;
  c.watch.restart(steady_now());  // our pause is not the client's delay
  // Queued, not called: this may run inside a handler of this connection.
  QMetaObject::invokeMethod(
      this, [this, id = c.id] { read(id); }, Qt::QueuedConnection);
}

void Listener::tick() {
  const TimePoint now = steady_now();
  std::vector<uint64_t> ids;
  ids.reserve(conns_.size());
  for (const auto& [id, c] : conns_) ids.push_back(id);
  // Each step may close a connection (and erase it): look each up afresh.
  for (uint64_t id : ids) {
    Conn* c = find(id);
    if (!c) continue;
    // A client that stopped reading its answers holds buffers until this.
    if (c->socket->bytes_to_write() > 0 &&
        now - c->last_progress >= std::chrono::milliseconds(options_.send_timeout_ms)) {
      c->socket->abort();  // gone() counts what it still owed as dropped
      continue;
    }
    if (c->lingering) {
      if (now >= c->linger_until) c->socket->abort();
      continue;
    }
    check_deadlines(*c, id, now);
  }
}

void Listener::gone(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  std::unique_ptr<Conn> c = std::move(it->second);
  conns_.erase(it);
  --open_;
  over_limit_ -= c->over_limit ? 1 : 0;
  resume_accepting();  // a descriptor is free again
  // Answers that will never be written: owed, or still in the socket's buffer.
  for (const Unsent& u : c->unsent) dropped_ += u.status > 0 ? 1 : 0;
  drop_slots(c->pending);
  c->socket->deleteLater();
}

QByteArray Listener::serialize(const HttpResponse& r, bool close) const {
  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + status_reason(r.status) +
                     "\r\nContent-Type: " + r.content_type +
                     "\r\nContent-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (close) head += "Connection: close\r\n";
  for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
  head += "\r\n";
  QByteArray out;
  out.reserve(static_cast<qsizetype>(head.size() + r.body.size()));
  out.append(head.data(), static_cast<qsizetype>(head.size()));
  out.append(r.body.data(), static_cast<qsizetype>(r.body.size()));
  return out;
}

}  // namespace batchscope

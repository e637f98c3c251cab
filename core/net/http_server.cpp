#include "http_server.h"

#include "text_out.h"

#include <QHostAddress>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace batchscope {

const char* status_reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
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

// Where Responders post to; outlives the Listener so a late answer is dropped
// instead of reaching a deleted object.
struct Hub {
  std::mutex mu;
  Listener* listener = nullptr;
};

struct Responder::Shared {
  std::shared_ptr<Hub> hub;
  uint64_t conn = 0;
  uint64_t seq = 0;
  std::atomic<bool> sent{false};
};

class Listener : public QObject {
 public:
  Listener(HttpServer::Handler handler, HttpServerOptions options)
      : handler_(std::move(handler)), options_(options), hub_(std::make_shared<Hub>()) {
    hub_->listener = this;
  }
  ~Listener() override {
    std::lock_guard g(hub_->mu);
    hub_->listener = nullptr;
  }

  Expected<uint16_t> listen(const std::string& host, uint16_t port) {
    server_ = new QTcpServer(this);
    QObject::connect(server_, &QTcpServer::newConnection, this, [this] { accept(); });
    QHostAddress addr;
    if (!addr.setAddress(QString::fromStdString(host))) {
      return invalid_argument("--host " + host + " is not an IP address (for example 127.0.0.1)");
    }
    if (!server_->listen(addr, port)) {
      return invalid_argument("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                              server_->errorString().toStdString());
    }
    return static_cast<uint16_t>(server_->serverPort());
  }

  void stop_accepting() {
    if (server_) server_->close();
  }

  size_t unanswered() const {
    size_t n = 0;
    for (const auto& [id, c] : conns_) {
      for (const Slot& s : c->pending) n += s.ready ? 0 : 1;
    }
    return n;
  }

  size_t connections() const { return conns_.size(); }

  void close_all() {
    // disconnectFromHost() may report the disconnect at once, and gone()
    // erases from conns_: take the sockets first (deleted later, not now).
    std::vector<QTcpSocket*> sockets;
    for (auto& [id, c] : conns_) sockets.push_back(c->socket);
    for (QTcpSocket* s : sockets) s->disconnectFromHost();
  }

  void complete(uint64_t conn, uint64_t seq, HttpResponse r) {
    Conn* c = find(conn);
    if (!c || c->pending.empty() || seq < c->pending.front().seq) return;
    Slot& s = c->pending[seq - c->pending.front().seq];
    s.bytes = serialize(r, s.close);
    s.ready = true;
    s.error = r.status >= 400;
    s.hooks.clear();
    flush(*c);
  }

  void add_hook(uint64_t conn, uint64_t seq, std::function<void()> f) {
    Conn* c = find(conn);
    if (!c || c->pending.empty() || seq < c->pending.front().seq) return;
    Slot& s = c->pending[seq - c->pending.front().seq];
    if (!s.ready) s.hooks.push_back(std::move(f));
  }

  std::shared_ptr<Hub> hub() const { return hub_; }
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> errors{0};

 private:
  struct Slot {
    uint64_t seq = 0;
    bool ready = false;
    bool close = false;  // close the connection after this response
    bool error = false;
    QByteArray bytes;
    std::vector<std::function<void()>> hooks;
  };
  struct Conn {
    QTcpSocket* socket = nullptr;
    QTimer* idle = nullptr;
    HttpParser parser;
    std::deque<Slot> pending;
    uint64_t next_seq = 0;
    bool closing = false;  // no further requests are read
    explicit Conn(HttpLimits l) : parser(l) {}
  };

  Conn* find(uint64_t id) {
    auto it = conns_.find(id);
    return it == conns_.end() ? nullptr : it->second.get();
  }

  void accept() {
    while (QTcpSocket* sock = server_->nextPendingConnection()) {
      const uint64_t id = ++next_conn_;
      auto c = std::make_unique<Conn>(options_.limits);
      c->socket = sock;
      sock->setSocketOption(QAbstractSocket::LowDelayOption, 1);
      c->idle = new QTimer(sock);
      c->idle->setSingleShot(true);
      c->idle->setInterval(options_.idle_timeout_ms);
      QObject::connect(c->idle, &QTimer::timeout, sock, [this, id] {
        Conn* conn = find(id);
        if (conn && conn->pending.empty())
          conn->socket->disconnectFromHost();
        else if (conn)
          conn->idle->start();
      });
      QObject::connect(sock, &QTcpSocket::readyRead, this, [this, id] { read(id); });
      QObject::connect(sock, &QTcpSocket::disconnected, this, [this, id] { gone(id); });
      c->idle->start();
      conns_.emplace(id, std::move(c));
    }
  }

  void read(uint64_t id) {
    Conn* c = find(id);
    if (!c) return;
    const QByteArray data = c->socket->readAll();
    if (c->closing) return;
    c->idle->start();
    c->parser.append(data.constData(), static_cast<size_t>(data.size()));
    while (!c->closing) {
      auto next = c->parser.next();
      if (c->parser.take_continue()) c->socket->write("HTTP/1.1 100 Continue\r\n\r\n");
      if (std::holds_alternative<std::monostate>(next)) break;
      Slot& s = c->pending.emplace_back();
      s.seq = c->next_seq++;
      const uint64_t seq = s.seq;
      if (auto* err = std::get_if<HttpParseError>(&next)) {
        s.close = true;
        c->closing = true;
        complete(id, seq, error_response(err->status, err->message));
        return;
      }
      HttpRequest& req = std::get<HttpRequest>(next);
      s.close = !req.keep_alive;
      if (s.close) c->closing = true;
      Responder r;
      r.shared_ = std::make_shared<Responder::Shared>();
      r.shared_->hub = hub_;
      r.shared_->conn = id;
      r.shared_->seq = seq;
      handler_(std::move(req), r);
      c = find(id);  // the handler may have answered and closed
      if (!c) return;
    }
  }

  void flush(Conn& c) {
    while (!c.pending.empty() && c.pending.front().ready) {
      Slot& s = c.pending.front();
      c.socket->write(s.bytes);
      ++requests;
      if (s.error) ++errors;
      const bool close = s.close;
      c.pending.pop_front();
      if (close) {
        c.socket->disconnectFromHost();
        return;
      }
    }
  }

  void gone(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    std::unique_ptr<Conn> c = std::move(it->second);
    conns_.erase(it);
    for (Slot& s : c->pending) {
      for (auto& hook : s.hooks) hook();
    }
    c->socket->deleteLater();
  }

  QByteArray serialize(const HttpResponse& r, bool close) const {
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

  HttpServer::Handler handler_;
  HttpServerOptions options_;
  std::shared_ptr<Hub> hub_;
  QTcpServer* server_ = nullptr;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t next_conn_ = 0;
};

void Responder::send(HttpResponse response) const {
  if (!shared_ || shared_->sent.exchange(true)) return;
  std::lock_guard g(shared_->hub->mu);
  Listener* l = shared_->hub->listener;
  if (!l) return;
  const uint64_t conn = shared_->conn, seq = shared_->seq;
  if (QThread::currentThread() == l->thread()) {
    l->complete(conn, seq, std::move(response));
  } else {
    QMetaObject::invokeMethod(
        l,
        [l, conn, seq, r = std::move(response)]() mutable { l->complete(conn, seq, std::move(r)); },
        Qt::QueuedConnection);
  }
}

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
      listener_, [this] { listener_->stop_accepting(); }, Qt::BlockingQueuedConnection);
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
  // Let the disconnects flush what is still being written (bounded).
  for (int i = 0; i < 200; ++i) {
    size_t open = 0;
    QMetaObject::invokeMethod(
        listener_, [&] { open = listener_->connections(); }, Qt::BlockingQueuedConnection);
    if (open == 0) break;
    QThread::msleep(5);
  }
  thread_.quit();
  thread_.wait();
}

void HttpServer::post(std::function<void()> f) {
  QMetaObject::invokeMethod(listener_, std::move(f), Qt::QueuedConnection);
}

uint64_t HttpServer::requests() const { return listener_->requests.load(); }
uint64_t HttpServer::errors() const { return listener_->errors.load(); }

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The listener's own listening socket and accept loop, and its connection
// limit (http_server.h, max_connections): closing the longest-idle
// keep-alive connection to make room, reading one request on a connection
// over the limit, and pausing (never spinning) when the limit or the
// descriptors run out.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QHostAddress>
#include <QSocketNotifier>
#include <QTimer>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "http/http_listener.h"
#include "http/service_access.h"

namespace batchscope {

size_t default_max_connections(uint64_t descriptors) {
  // Kept for the process: 64, and a sixteenth of the rest for the
  // connections over the limit; never more than half.
  const uint64_t reserve = std::min(descriptors / 2, 64 + descriptors / 16);
  return static_cast<size_t>(std::max<uint64_t>(descriptors - reserve, 1));
}

size_t default_max_connections() {
  rlimit l{};
  if (getrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur == RLIM_INFINITY) return 1u << 20;
  return default_max_connections(static_cast<uint64_t>(l.rlim_cur));
}

Expected<uint16_t> Listener::open_listening_socket(const std::string& host, uint16_t port) {
  QHostAddress addr;
  if (!addr.setAddress(QString::fromStdString(host))) {
    return invalid_argument("--host " + host + " is not an IP address (for example 127.0.0.1)");
  }
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (addr.protocol() == QAbstractSocket::IPv4Protocol) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    in->sin_addr.s_addr = htonl(addr.toIPv4Address());
    len = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    const Q_IPV6ADDR a = addr.toIPv6Address();
    std::memcpy(&in6->sin6_addr, a.c, sizeof(a.c));
    len = sizeof(sockaddr_in6);
  }
  auto fail = [&](const char* step) -> Expected<uint16_t> {
    const std::string why = std::strerror(errno);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    return invalid_argument("cannot listen on " + host + ":" + std::to_string(port) + ": " + step +
                            ": " + why);
  };
  listen_fd_ = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return fail("socket");
  const int one = 1;  // a restarted server may bind while old connections linger
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0) return fail("bind");
  if (::listen(listen_fd_, SOMAXCONN) != 0) return fail("listen");
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return fail("getsockname");
  }
  const uint16_t bound =
      ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                    : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  accept_notifier_ = new QSocketNotifier(listen_fd_, QSocketNotifier::Read, this);
  QObject::connect(accept_notifier_, &QSocketNotifier::activated, this,
                   [this] { guarded([this] { accept(); }); });
  retry_accept_ = new QTimer(this);
  retry_accept_->setSingleShot(true);
  retry_accept_->setInterval(100);
  QObject::connect(retry_accept_, &QTimer::timeout, this,
                   [this] { guarded([this] { resume_accepting(); }); });
  return bound;
}

void Listener::stop_accepting() {
  delete accept_notifier_;
  accept_notifier_ = nullptr;
  delete retry_accept_;
  retry_accept_ = nullptr;
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

TcpConn* Listener::accept_one(uint64_t first_new) {
  for (bool room_made = false;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    // Bounded input, so that a connection we stop reading pushes back on
    // its client through TCP instead of filling our memory.
    if (fd >= 0) return new TcpConn(fd, int64_t{1} << 20, this);
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return nullptr;
    // Out of descriptors (EMFILE, ENFILE) or kernel memory: close an idle
    // connection and try once more; else wait for one to close, or 100 ms.
    ++accept_errors_;
    if (!room_made && make_room(first_new)) {
      room_made = true;
      continue;
    }
    pause_accepting();
    if (retry_accept_) retry_accept_->start();
    return nullptr;
  }
}

Listener::Conn* Listener::idlest(uint64_t first_new) {
  Conn* found = nullptr;
  for (auto& [id, c] : conns_) {
    // Accepted in this pass: not read yet, so not known to be idle.
    if (id >= first_new) continue;
    const bool idle = !c->closing && !c->over_limit && c->pending.empty() &&
                      c->parser.phase() == HttpPhase::kIdle && c->parser.buffered() == 0 &&
                      c->socket->bytes_to_write() == 0;
    if (idle && (!found || c->last_active < found->last_active)) found = c.get();
  }
  return found;
}

bool Listener::make_room(uint64_t first_new) {
  Conn* idlest = this->idlest(first_new);
  if (!idlest) return false;
  ++closed_for_room_;
  idlest->closing = true;
  // Nothing is owed or unwritten: the descriptor is closed now, and gone()
  // runs from inside abort().
  idlest->socket->abort();
  return true;
}

bool Listener::may_accept(uint64_t first_new) {
  if (listen_fd_ < 0 || accepting_paused_) return false;
  if (conns_.size() < max_connections_ || over_limit_ < kOverLimitConnections ||
      idlest(first_new)) {
    return true;
  }
  // Every connection busy, or accepted in this pass and so not known to be
  // idle, and the spare ones taken: the kernel's backlog holds the rest
  // until a connection closes (gone() resumes) or, 100 ms on, a pass finds
  // one of these idle (a client that connected and sent nothing) and closes
  // it to make room, so that a new client's /health is answered.
  pause_accepting();
  if (retry_accept_) retry_accept_->start();
  return false;
}

bool Listener::place(uint64_t first_new) {
  return conns_.size() < max_connections_ || make_room(first_new);
}

bool Listener::refuse_over_limit(Conn& c, const HttpRequest& req, Slot& s) {
  if (!c.over_limit) return false;
  s.close = true;
  c.closing = true;
  if (is_health_path(req.path())) return false;
  ++refused_at_limit_;
  HttpResponse r = error_response(
      503, "the server is at its limit of " + std::to_string(max_connections_) +
               " connections, all of them busy; try again, or raise --max-connections");
  r.headers.emplace_back("Retry-After", "1");
  complete(c.id, s.seq, std::move(r));
  return true;
}

void Listener::pause_accepting() {
  if (accepting_paused_ || !accept_notifier_) return;
  accepting_paused_ = true;
  accept_notifier_->setEnabled(false);
}

void Listener::resume_accepting() {
  if (!accepting_paused_ || !accept_notifier_) return;
  accepting_paused_ = false;
  accept_notifier_->setEnabled(true);
  // Level-triggered: connections already waiting wake the notifier again.
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/client_pool.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace batchscope {
namespace {

constexpr uint32_t kWake = UINT32_MAX;  // epoll data of the eventfd

}  // namespace

ClientPool::ClientPool(std::string host, uint16_t port, int connections)
    : host_(std::move(host)), port_(port), connections_(std::max(1, connections)) {}

ClientPool::~ClientPool() { stop(); }

Status ClientPool::resolve() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &res);
  if (rc != 0 || !res) {
    return invalid_argument("cannot resolve " + host_ + ": " + gai_strerror(rc));
  }
  std::memcpy(&addr_, res->ai_addr, res->ai_addrlen);
  addr_len_ = res->ai_addrlen;
  freeaddrinfo(res);
  return Status::Ok();
}

Status ClientPool::open(size_t conn) {
  Conn& c = conns_[conn];
  c.fd = ::socket(addr_.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c.fd < 0 || ::connect(c.fd, reinterpret_cast<sockaddr*>(&addr_), addr_len_) != 0) {
    const std::string why = std::strerror(errno);
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
    return invalid_argument("cannot connect to " + host_ + ":" + std::to_string(port_) + ": " +
                            why);
  }
  int one = 1;
  ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK);
  connected(conn);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = static_cast<uint32_t>(conn);
  ::epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
  return Status::Ok();
}

void ClientPool::close(size_t conn, const std::string& why) {
  Conn& c = conns_[conn];
  if (c.fd >= 0) {
    ::epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    c.fd = -1;
  }
  std::unique_ptr<Request> r = std::move(c.request);
  c.out.clear();
  c.out_off = 0;
  if (r && r->done) r->done(0, why);
}

std::unique_ptr<ClientPool::Request> ClientPool::finish(size_t conn) {
  return std::move(conns_[conn].request);
}

void ClientPool::flush(size_t conn) {
  Conn& c = conns_[conn];
  while (c.out_off < c.out.size()) {
    const ssize_t n =
        ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return close(conn, std::string("send failed: ") + std::strerror(errno));
    c.out_off += static_cast<size_t>(n);
  }
  epoll_event ev{};
  ev.events = EPOLLIN | (c.out_off < c.out.size() ? EPOLLOUT : 0u);
  ev.data.u32 = static_cast<uint32_t>(conn);
  ::epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
}

// Gives idle connections the next queued requests.
void ClientPool::dispatch() {
  MutexLock lk(mu_);
  for (size_t i = 0; i < conns_.size(); ++i) {
    if (queue_.empty()) break;
    Conn& c = conns_[i];
    if (c.request) continue;
    if (c.fd < 0) {
      lk.unlock();
      const Status s = open(i);
      lk.lock();
      if (!s) {
        if (queue_.empty()) break;
        std::unique_ptr<Request> r = std::move(queue_.front());
        queue_.pop_front();
        lk.unlock();
        if (r->done) r->done(0, s.message());
        lk.lock();
        continue;
      }
    }
    c.request = std::move(queue_.front());
    queue_.pop_front();
    c.out = std::move(c.request->bytes);
    c.out_off = 0;
    lk.unlock();
    flush(i);
    lk.lock();
  }
}

void ClientPool::readable(size_t conn) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(conns_[conn].fd, buf, sizeof buf, 0);
    if (n > 0) {
      if (!received(conn, std::string_view(buf, static_cast<size_t>(n)))) return;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    // An answer without a length ends where the connection does.
    if (n == 0 && !server_closed(conn)) return;
    return close(conn, n == 0 ? "the server closed the connection" : std::strerror(errno));
  }
}

void ClientPool::loop() {
  epoll_event events[64];
  while (!stopping_) {
    const int n = ::epoll_wait(ep_, events, 64, 100);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u32 == kWake) {
        uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(wake_, &v, sizeof v);
        continue;
      }
      const size_t conn = events[i].data.u32;
      if (conns_[conn].fd < 0) continue;
      // Read before acting on a hang-up: an answer that ends with the
      // connection is complete only once its last bytes are read. recv()
      // then reports the close or the error itself.
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) readable(conn);
      if (conns_[conn].fd >= 0 && (events[i].events & EPOLLOUT)) flush(conn);
    }
    dispatch();
  }
}

void ClientPool::wake_up() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(wake_, &one, sizeof one);
}

Status ClientPool::start() {
  if (Status s = resolve(); !s) return s;
  ep_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = kWake;
  ::epoll_ctl(ep_, EPOLL_CTL_ADD, wake_, &ev);
  conns_.resize(static_cast<size_t>(connections_));
  for (size_t i = 0; i < conns_.size(); ++i) {
    if (Status s = open(i); !s) return s;
  }
  thread_ = std::thread([this] { loop(); });
  return Status::Ok();
}

void ClientPool::send(std::unique_ptr<Request> request) {
  {
    MutexLock g(mu_);
    queue_.push_back(std::move(request));
  }
  wake_up();
}

void ClientPool::stop() {
  if (thread_.joinable()) {
    stopping_ = true;
    wake_up();
    thread_.join();
  }
  for (size_t i = 0; i < conns_.size(); ++i) close(i, "the client stopped");
  std::deque<std::unique_ptr<Request>> left;
  {
    MutexLock g(mu_);
    left.swap(queue_);
  }
  for (std::unique_ptr<Request>& r : left) {
    if (r->done) r->done(0, "the client stopped");
  }
  if (ep_ >= 0) ::close(ep_);
  if (wake_ >= 0) ::close(wake_);
  ep_ = wake_ = -1;
}

}  // namespace batchscope

#include "http_stream_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace batchscope {
namespace {

struct Pending {
  std::string request;
  HttpStreamClient::Event on_event;
  HttpStreamClient::Done on_done;
};

struct Conn {
  int fd = -1;
  bool busy = false;
  std::string out;  // bytes still to write
  size_t out_off = 0;
  SseReader reader;
  HttpStreamClient::Event on_event;
  HttpStreamClient::Done on_done;
};

TimePoint received_now() {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

constexpr uint32_t kWake = UINT32_MAX;

}  // namespace

struct HttpStreamClient::Impl {
  std::string host;
  uint16_t port = 0;
  int connections = 1;
  SseLimits limits;
  int ep = -1;
  int wake = -1;  // eventfd: new work queued, or stop
  std::vector<Conn> conns;
  std::mutex mu;
  std::deque<Pending> queue;  // guarded by mu
  std::atomic<bool> stopping{false};
  std::thread thread;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;

  Status resolve() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0 || !res)
      return invalid_argument("cannot resolve " + host + ": " + gai_strerror(rc));
    std::memcpy(&addr, res->ai_addr, res->ai_addrlen);
    addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    return Status::Ok();
  }

  Status open(Conn& c) {
    c.fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c.fd < 0 || ::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
      const std::string why = std::strerror(errno);
      if (c.fd >= 0) ::close(c.fd);
      c.fd = -1;
      return invalid_argument("cannot connect to " + host + ":" + std::to_string(port) + ": " +
                              why);
    }
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    c.reader = SseReader(limits);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(&c - conns.data());
    ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    return Status::Ok();
  }

  // Closes the connection; the request on it, if any, is done with status 0.
  void fail(Conn& c, const std::string& why) {
    if (c.fd >= 0) {
      ::epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
      ::close(c.fd);
      c.fd = -1;
    }
    Done done = c.busy ? std::move(c.on_done) : nullptr;
    c.busy = false;
    c.on_done = nullptr;
    c.on_event = nullptr;
    c.out.clear();
    c.out_off = 0;
    if (done) done(0, why);
  }

  void flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t n =
          ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail(c, std::string("send failed: ") + std::strerror(errno));
      c.out_off += static_cast<size_t>(n);
    }
    epoll_event ev{};
    ev.events = EPOLLIN | (c.out_off < c.out.size() ? EPOLLOUT : 0u);
    ev.data.u32 = static_cast<uint32_t>(&c - conns.data());
    ::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
  }

  // Gives idle connections the next queued requests.
  void dispatch() {
    std::unique_lock lk(mu);
    for (Conn& c : conns) {
      if (queue.empty()) break;
      if (c.busy) continue;
      if (c.fd < 0) {
        lk.unlock();
        const Status s = open(c);
        lk.lock();
        if (!s) {
          if (queue.empty()) break;
          Pending p = std::move(queue.front());
          queue.pop_front();
          lk.unlock();
          if (p.on_done) p.on_done(0, s.message());
          lk.lock();
          continue;
        }
      }
      Pending p = std::move(queue.front());
      queue.pop_front();
      c.busy = true;
      c.out = std::move(p.request);
      c.out_off = 0;
      c.on_event = std::move(p.on_event);
      c.on_done = std::move(p.on_done);
      lk.unlock();
      flush(c);
      lk.lock();
    }
  }

  void readable(Conn& c) {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        const TimePoint when = received_now();
        if (!c.busy) return fail(c, "the server sent bytes while no request was waiting");
        if (!take(c, c.reader.feed(std::string_view(buf, static_cast<size_t>(n))),
                  static_cast<size_t>(n), when)) {
          return;
        }
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      // An answer without a length ends where the connection does; any
      // other is cut short, which finish() says.
      if (n == 0 && c.busy) take(c, c.reader.finish(), 0, received_now());
      return fail(c, n == 0 ? "the server closed the connection" : std::strerror(errno));
    }
  }

  // Hands over what the reader made of `fed` bytes (0: the connection
  // closed); false once the connection has been closed.
  bool take(Conn& c, const SseStep& s, size_t fed, TimePoint when) {
    if (c.on_event) {
      for (const std::string& e : s.events) c.on_event(e, when);
    }
    if (!s.error.empty()) {
      fail(c, fed == 0 ? s.error : "malformed response: " + s.error);
      return false;
    }
    if (!s.done) return true;
    const bool keep = c.reader.keep_alive();
    Done done = std::move(c.on_done);
    c.busy = false;
    c.on_done = nullptr;
    c.on_event = nullptr;
    c.reader = SseReader(limits);
    if (done) done(s.status, s.body);
    if (s.used < fed) {
      fail(c, "the server sent a response to no request");
      return false;
    }
    if (!keep || fed == 0) {
      fail(c, "the server closed the connection");
      return false;
    }
    return true;
  }

  void loop() {
    epoll_event events[64];
    while (!stopping) {
      const int n = ::epoll_wait(ep, events, 64, 100);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u32 == kWake) {
          uint64_t v;
          [[maybe_unused]] ssize_t r = ::read(wake, &v, sizeof v);
          continue;
        }
        Conn& c = conns[events[i].data.u32];
        if (c.fd < 0) continue;
        // Read before acting on a hang-up: the last bytes come first.
        if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) readable(c);
        if (c.fd >= 0 && (events[i].events & EPOLLOUT)) flush(c);
      }
      dispatch();
    }
  }
};

HttpStreamClient::HttpStreamClient(std::string host, uint16_t port, int connections,
                                   SseLimits limits)
    : impl_(std::make_unique<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
  impl_->connections = std::max(1, connections);
  impl_->limits = limits;
}

HttpStreamClient::~HttpStreamClient() { stop(); }

Status HttpStreamClient::start() {
  Impl& m = *impl_;
  if (Status s = m.resolve(); !s) return s;
  m.ep = ::epoll_create1(EPOLL_CLOEXEC);
  m.wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = kWake;
  ::epoll_ctl(m.ep, EPOLL_CTL_ADD, m.wake, &ev);
  m.conns.resize(static_cast<size_t>(m.connections));
  for (Conn& c : m.conns) {
    if (Status s = m.open(c); !s) return s;
  }
  m.thread = std::thread([&m] { m.loop(); });
  return Status::Ok();
}

void HttpStreamClient::send(std::string request, Event on_event, Done on_done) {
  {
    std::lock_guard g(impl_->mu);
    impl_->queue.push_back({std::move(request), std::move(on_event), std::move(on_done)});
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(impl_->wake, &one, sizeof one);
}

void HttpStreamClient::stop() {
  Impl& m = *impl_;
  if (m.thread.joinable()) {
    m.stopping = true;
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(m.wake, &one, sizeof one);
    m.thread.join();
  }
  for (Conn& c : m.conns) m.fail(c, "the client stopped");
  std::deque<Pending> left;
  {
    std::lock_guard g(m.mu);
    left.swap(m.queue);
  }
  for (Pending& p : left) {
    if (p.on_done) p.on_done(0, "the client stopped");
  }
  if (m.ep >= 0) ::close(m.ep);
  if (m.wake >= 0) ::close(m.wake);
  m.ep = m.wake = -1;
}

}  // namespace batchscope

#include "http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "http_response.h"

namespace batchscope {

Expected<Url> parse_url(std::string_view text) {
  constexpr std::string_view kScheme = "http://";
  if (text.substr(0, kScheme.size()) != kScheme) {
    return invalid_argument("'" + std::string(text) + "' is not an http:// URL");
  }
  std::string_view rest = text.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  Url u;
  u.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  const size_t colon = hostport.rfind(':');
  u.host = std::string(hostport.substr(0, colon));
  if (colon != std::string_view::npos) {
    unsigned p = 0;
    const std::string_view ps = hostport.substr(colon + 1);
    auto [end, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), p);
    if (ec != std::errc() || end != ps.data() + ps.size() || p == 0 || p > 65535) {
      return invalid_argument("'" + std::string(text) + "' has no valid port");
    }
    u.port = static_cast<uint16_t>(p);
  }
  if (u.host.empty()) return invalid_argument("'" + std::string(text) + "' has no host");
  return u;
}

std::string json_post(const Url& url, std::string_view body) {
  std::string r =
      "POST " + url.path + " HTTP/1.1\r\nHost: " + url.host + ":" + std::to_string(url.port) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n";
  if (!url.bearer_token.empty()) r += "Authorization: Bearer " + url.bearer_token + "\r\n";
  r += "\r\n";
  r.append(body);
  return r;
}

namespace {

struct Pending {
  std::string request;
  HttpLoadClient::Done done;
};

struct Conn {
  int fd = -1;
  bool busy = false;
  std::string out;  // bytes still to write
  size_t out_off = 0;
  std::string in;  // bytes read, not yet a whole response
  HttpLoadClient::Done done;
};

}  // namespace

struct HttpLoadClient::Impl {
  std::string host;
  uint16_t port;
  int connections;
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
    if (rc != 0 || !res) {
      return invalid_argument("cannot resolve " + host + ": " + gai_strerror(rc));
    }
    std::memcpy(&addr, res->ai_addr, res->ai_addrlen);
    addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    return Status::Ok();
  }

  Status open(Conn& c) {
    c.fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
      const std::string why = std::strerror(errno);
      ::close(c.fd);
      c.fd = -1;
      return invalid_argument("cannot connect to " + host + ":" + std::to_string(port) + ": " +
                              why);
    }
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(&c - conns.data());
    ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    return Status::Ok();
  }

  void fail(Conn& c, const std::string& why) {
    if (c.fd >= 0) {
      ::epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
      ::close(c.fd);
      c.fd = -1;
    }
    if (c.busy && c.done) c.done(0, why);
    c.busy = false;
    c.done = nullptr;
    c.in.clear();
    c.out.clear();
    c.out_off = 0;
  }

  void flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t n =
          ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
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
          Pending p = std::move(queue.front());
          queue.pop_front();
          lk.unlock();
          p.done(0, s.message());
          lk.lock();
          continue;
        }
      }
      Pending p = std::move(queue.front());
      queue.pop_front();
      c.busy = true;
      c.out = std::move(p.request);
      c.out_off = 0;
      c.done = std::move(p.done);
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
        c.in.append(buf, static_cast<size_t>(n));
        // Parsed after every read, so a server cannot grow the buffer past
        // the response limit by sending faster than we parse.
        if (!take_responses(c, false)) return;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      // A response without a length ends where the connection does.
      if (n == 0 && !take_responses(c, true)) return;
      return fail(c, n == 0 ? "the server closed the connection" : std::strerror(errno));
    }
  }

  // Hands over each whole response in c.in; false once the connection has
  // been closed (a malformed response, or the server said it closes).
  bool take_responses(Conn& c, bool eof) {
    for (;;) {
      HttpResponseParse r = parse_response(c.in, eof);
      if (std::holds_alternative<std::monostate>(r)) return true;
      if (const auto* e = std::get_if<HttpResponseError>(&r)) {
        fail(c, "malformed response: " + e->message);
        return false;
      }
      const HttpResponse& resp = std::get<HttpResponse>(r);
      c.in.erase(0, resp.size);
      if (resp.status < 200) continue;  // interim (100 Continue); the real answer follows
      if (!c.busy) {
        fail(c, "the server sent a response to no request");
        return false;
      }
      Done done = std::move(c.done);
      c.busy = false;
      c.done = nullptr;
      done(resp.status, resp.body);
      if (!resp.keep_alive) {
        fail(c, "the server closed the connection");
        return false;
      }
    }
  }

  void loop() {
    epoll_event events[64];
    while (!stopping) {
      const int n = ::epoll_wait(ep, events, 64, 100);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u32 == UINT32_MAX) {
          uint64_t v;
          [[maybe_unused]] ssize_t r = ::read(wake, &v, sizeof v);
          continue;
        }
        Conn& c = conns[events[i].data.u32];
        if (c.fd < 0) continue;
        // Read before acting on a hang-up: a response that ends with the
        // connection is complete only once its last bytes are read. recv()
        // then reports the close or the error itself.
        if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) readable(c);
        if (c.fd >= 0 && (events[i].events & EPOLLOUT)) flush(c);
      }
      dispatch();
    }
  }
};

HttpLoadClient::HttpLoadClient(std::string host, uint16_t port, int connections)
    : impl_(std::make_unique<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
  impl_->connections = std::max(1, connections);
}

HttpLoadClient::~HttpLoadClient() { stop(); }

Status HttpLoadClient::start() {
  Impl& m = *impl_;
  if (Status s = m.resolve(); !s) return s;
  m.ep = ::epoll_create1(EPOLL_CLOEXEC);
  m.wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = UINT32_MAX;
  ::epoll_ctl(m.ep, EPOLL_CTL_ADD, m.wake, &ev);
  m.conns.resize(static_cast<size_t>(m.connections));
  for (Conn& c : m.conns) {
    if (Status s = m.open(c); !s) return s;
  }
  m.thread = std::thread([&m] { m.loop(); });
  return Status::Ok();
}

void HttpLoadClient::send(std::string request, Done done) {
  {
    std::lock_guard g(impl_->mu);
    impl_->queue.push_back({std::move(request), std::move(done)});
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(impl_->wake, &one, sizeof one);
}

void HttpLoadClient::stop() {
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
  for (Pending& p : left) p.done(0, "the client stopped");
  if (m.ep >= 0) ::close(m.ep);
  if (m.wake >= 0) ::close(m.wake);
  m.ep = m.wake = -1;
}

}  // namespace batchscope

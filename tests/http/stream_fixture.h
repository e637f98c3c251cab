// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The fixture of the streamed-answer suite (stream_test.cpp): an HttpServer
// with the test's own handler, producer threads the handler starts (joined
// at the end), a gate the test opens to let a producer go on, a blocking
// client that reads answers with SseReader as their bytes arrive, and a
// collector for HttpStreamClient's callbacks.
// Thread-safety: Gate and Collected from any thread; the rest on the test's.

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/http_server.h"
#include "http/http_stream_client.h"
#include "http/sse.h"
#include "tests/http/test_client.h"

namespace batchscope::test {

inline constexpr auto kWait = std::chrono::seconds(20);  // safety timeout of every wait

inline std::string event(int i) { return "data: {\"i\":" + std::to_string(i) + "}\n\n"; }
inline std::string data(int i) { return "{\"i\":" + std::to_string(i) + "}"; }

template <class Pred>
bool wait_until(Pred pred) {
  const auto give_up = std::chrono::steady_clock::now() + kWait;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class Gate {
 public:
  void open() {
    std::lock_guard g(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, kWait, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

struct Answer {
  int status = 0;
  std::vector<std::string> events;
  bool done = false;
  std::string body;
  std::string error;
};

// A blocking client that reads answers with SseReader as bytes arrive.
class SseClient {
 public:
  explicit SseClient(uint16_t port) : sock_(port) {}
  bool send(const std::string& raw) { return sock_.send(raw); }
  bool await_events(size_t n) {
    pump([&] { return answer_.events.size() >= n || answer_.done; });
    return answer_.events.size() >= n;
  }
  bool await_end() {
    return pump([&] { return answer_.done; });
  }
  bool closed_by_peer() {
    return pump([&] { return eof_; });
  }
  // The next answer on this connection (pipelined).
  void next_answer() {
    reader_ = SseReader();
    answer_ = Answer{};
    feed();
  }
  void reset() { sock_.reset(); }
  const Answer& answer() const { return answer_; }
  const std::string& raw() const { return raw_; }

 private:
  template <class Pred>
  bool pump(Pred done) {
    const auto until = std::chrono::steady_clock::now() + kWait;
    while (!done() && !eof_ && answer_.error.empty() && fill(until)) {
    }
    return done();
  }
  bool fill(std::chrono::steady_clock::time_point until) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{sock_.fd(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    const ssize_t n = ::recv(sock_.fd(), buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      if (!reader_.done()) take(reader_.finish());
      return false;
    }
    raw_.append(buf, static_cast<size_t>(n));
    pending_.append(buf, static_cast<size_t>(n));
    feed();
    return true;
  }
  void feed() {
    while (!pending_.empty() && !reader_.done() && !reader_.failed()) {
      SseStep s = reader_.feed(pending_);
      pending_.erase(0, s.used);
      take(std::move(s));
    }
  }
  void take(SseStep s) {
    for (std::string& e : s.events) answer_.events.push_back(std::move(e));
    answer_.status = s.status;
    answer_.done = s.done;
    if (!s.body.empty()) answer_.body = s.body;
    if (!s.error.empty()) answer_.error = s.error;
  }

  // TestClient keeps its descriptor private; this client reads raw bytes.
  class RawSocket {
   public:
    explicit RawSocket(uint16_t port) {
      fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd_);
        fd_ = -1;
      }
    }
    ~RawSocket() {
      if (fd_ >= 0) ::close(fd_);
    }
    int fd() const { return fd_; }
    bool send(const std::string& raw) {
      for (size_t off = 0; off < raw.size();) {
        const ssize_t n = ::send(fd_, raw.data() + off, raw.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return false;
        off += static_cast<size_t>(n);
      }
      return true;
    }
    void reset() {  // a reset, not a FIN: a client that gives up
      linger l{1, 0};
      ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      ::close(fd_);
      fd_ = -1;
    }

   private:
    int fd_ = -1;
  };

  RawSocket sock_;
  SseReader reader_;
  Answer answer_;
  std::string raw_;
  std::string pending_;  // received, not yet used by an answer
  bool eof_ = false;
};

class StreamTest : public ::testing::Test {
 protected:
  void start(HttpServer::Handler handler, HttpServerOptions so = {}) {
    server_ = std::make_unique<HttpServer>(std::move(handler), so);
    auto port = server_->start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.error().message;
    port_ = *port;
  }
  // Runs a producer (the stand-in for a generation loop) on its own thread.
  void spawn(std::function<void()> f) {
    std::lock_guard g(mu_);
    producers_.emplace_back(std::move(f));
  }
  void join_producers() {
    std::vector<std::thread> all;
    {
      std::lock_guard g(mu_);
      all.swap(producers_);
    }
    for (std::thread& t : all) t.join();
  }
  void TearDown() override {
    gate_.open();
    join_producers();
    if (server_) server_->stop(2000);
    join_producers();
    server_.reset();
  }
  // The counts once nothing is in flight (an answer counts when its last
  // byte has left for the kernel, a moment after a client may read it).
  HttpCounters settled() {
    HttpCounters h;
    wait_until([&] {
      h = server_->counters();
      return h.parsed == h.written + h.dropped;
    });
    return h;
  }
  std::string stream_request(const std::string& extra = "") {
    return http_request("POST", "/v1/completions", R"({"stream": true})", extra);
  }

  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  Gate gate_;
  std::atomic<int> cancels_{0};        // on_disconnect hooks run
  std::atomic<bool> saw_gone_{false};  // a producer saw client_gone()
  std::mutex mu_;
  std::vector<std::thread> producers_;
};

// What a stream client's callbacks saw, for a test thread to wait on.
struct Collected {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::string, TimePoint>> events;
  int status = -1;
  std::string body;
  int dones = 0;

  HttpStreamClient::Event on_event() {
    return [this](std::string_view d, TimePoint when) {
      std::lock_guard g(mu);
      events.emplace_back(std::string(d), when);
      cv.notify_all();
    };
  }
  HttpStreamClient::Done on_done() {
    return [this](int s, std::string_view b) {
      std::lock_guard g(mu);
      status = s;
      body.assign(b);
      ++dones;
      cv.notify_all();
    };
  }
  template <class Pred>
  bool await(Pred pred) {
    std::unique_lock l(mu);
    return cv.wait_for(l, kWait, pred);
  }
  bool await_done() {
    return await([&] { return dones > 0; });
  }
};

}  // namespace batchscope::test

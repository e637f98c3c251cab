// SPDX-License-Identifier: GPL-3.0-or-later
#include "tests/soak/faults.h"

#include <chrono>
#include <random>
#include <thread>

#include "tests/http/test_client.h"
#include "tests/soak/traffic.h"

namespace batchscope::soak {

namespace {

using test::TestClient;

std::string row_json(const Target& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.in; ++i) s += i ? ",0.5" : "0.5";
  return s + "]";
}

void pause_unless_stopped(const std::atomic<bool>& stop, std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stop.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Sends `raw` (possibly megabytes) and reads the answer, counted as `kind`.
void exchange(const Target& t, Tally& tally, Kind kind, const std::string& raw) {
  TestClient c(t.port);
  tally.sent(kind);
  if (!c.connected()) return tally.lost(kind, "cannot connect");
  if (!c.send(raw)) {
    // The server closed while we wrote: its answer may still be readable.
    if (auto r = c.read(5000)) return tally.answered(kind, r->status, r->body);
    return tally.lost(kind, "connection reset while the request was being written");
  }
  if (auto r = c.read(15000)) return tally.answered(kind, r->status, r->body);
  tally.lost(kind, "no answer");
}

}  // namespace

int one_request(const Target& t, const std::string& raw, std::string* body) {
  TestClient c(t.port);
  if (!c.connected() || !c.send(raw)) return 0;
  auto r = c.read(15000);
  if (!r) return 0;
  if (body) *body = r->body;
  return r->status;
}

std::string calm_options() {
  return R"({"max_batch_size": 8, "max_wait_ms": 1, "queue_capacity": 4096,
             "request_timeout_ms": 5000, "num_lanes": 1, "strategy": "fifo"})";
}

void oversized_client(const Target& t, Tally& tally, const std::atomic<bool>& stop) {
  const std::string body(t.max_body_bytes + 1, 'x');
  for (int i = 0; !stop.load(); ++i) {
    if (i % 2 == 0) {
      exchange(t, tally, Kind::kOversize,
               "POST /infer HTTP/1.1\r\nHost: " + t.host +
                   "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    } else {
      exchange(t, tally, Kind::kHugeHeader,
               "GET /health HTTP/1.1\r\nHost: " + t.host +
                   "\r\nX-Big: " + std::string(1u << 20, 'a') + "\r\n\r\n");
    }
    pause_unless_stopped(stop, std::chrono::milliseconds(1000));
  }
}

void slow_client(const Target& t, Tally& tally, const std::atomic<bool>& stop, bool body) {
  const Kind kind = body ? Kind::kSlowBody : Kind::kSlowHead;
  const std::string auth = t.auth.empty() ? "" : "Authorization: Bearer " + t.auth + "\r\n";
  while (!stop.load()) {
    TestClient c(t.port);
    tally.sent(kind);
    if (!c.connected()) {
      tally.lost(kind, "cannot connect");
      continue;
    }
    std::string head = body ? "POST /infer HTTP/1.1\r\nHost: " + t.host + "\r\n" + auth +
                                  "Content-Length: 100000\r\n\r\n"
                            : "GET /health HTTP/1.1\r\nHost: " + t.host + "\r\nX-Slow: ";
    c.send(head);
    // A byte every 250 ms until the server gives up on us (it must: a head
    // of this pace never ends, a body of 4 bytes/s is far below the minimum).
    bool answered = false;
    for (int i = 0; i < 400 && !answered; ++i) {
      if (auto r = c.read(250)) {
        tally.answered(kind, r->status, r->body);
        answered = true;
      } else if (!c.send("a")) {
        if (auto late = c.read(2000)) {
          tally.answered(kind, late->status, late->body);
          answered = true;
        }
        break;
      }
    }
    if (!answered) tally.lost(kind, "a trickling client was never cut off");
  }
}

void disconnecting_client(const Target& t, Tally& tally, const std::atomic<bool>& stop) {
  std::mt19937_64 rng(5);
  const std::string one = http_request(t.auth, "POST", "/infer", "{\"data\":" + row_json(t) + "}");
  while (!stop.load()) {
    TestClient c(t.port);
    if (!c.connected()) continue;
    const int n = std::uniform_int_distribution<int>(1, 3)(rng);
    std::string raw;
    for (int i = 0; i < n; ++i) raw += one;
    if (rng() % 4 == 0) raw += one.substr(0, one.size() / 2);  // half a request, never counted
    if (c.send(raw)) tally.abandoned(static_cast<uint64_t>(n));
    c.close();  // without reading
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void retune_client(const Target& t, Tally& tally, const std::atomic<bool>& stop, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // Ranges that keep the server able to carry the load: the soak is about
  // retuning under traffic, not about overload (queue limits still bite).
  const char* waits[] = {"0", "0.2", "0.5", "1", "1.5", "2"};
  const char* invalid[] = {R"({"max_batch_size": 0})", R"({"max_wait_ms": -1})",
                           R"({"num_lanes": 1.5})", R"({"queue_capacity": 1e300})",
                           R"({"strategy": "lifo"})"};
  TestClient c(t.port);
  while (!stop.load()) {
    std::string body;
    Kind kind = Kind::kRetune;
    if (pick(0, 9) == 0) {
      kind = Kind::kBadRetune;
      body = invalid[pick(0, 4)];
    } else {
      body = "{\"max_batch_size\": " +
             std::to_string(pick(std::min(4, t.model_max_batch), t.model_max_batch)) +
             ", \"max_wait_ms\": " + waits[pick(0, 5)] +
             ", \"queue_capacity\": " + std::to_string(pick(16, 4096)) +
             ", \"request_timeout_ms\": " + std::to_string(pick(50, 30000)) +
             ", \"num_lanes\": " + std::to_string(pick(1, 2)) + ", \"strategy\": \"" +
             (pick(0, 1) ? "fifo" : "adaptive") +
             "\", \"target_p99_ms\": " + std::to_string(pick(1, 50)) + "}";
    }
    tally.sent(kind);
    if (!c.send(http_request(t.auth, "PUT", "/v1/config", body))) {
      tally.lost(kind, "the retune connection failed");
      return;
    }
    if (auto r = c.read(15000)) {
      tally.answered(kind, r->status, r->body);
    } else {
      tally.lost(kind, "no answer to a retune");
      return;
    }
    pause_unless_stopped(stop, std::chrono::milliseconds(100));
  }
}

void resetting_client(const Target& t, Tally& tally, const std::atomic<bool>& stop) {
  const std::string one = http_request(t.auth, "GET", "/health");
  const std::string closing = one.substr(0, one.size() - 2) + "Connection: close\r\n\r\n";
  while (!stop.load()) {
    TestClient c(t.port);
    if (!c.connected()) continue;
    if (c.send(closing)) tally.reset_sent(1);
    c.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void stalled_reader(const Target& t, Tally& tally, const std::atomic<bool>& stop) {
  constexpr int kRequests = 300;
  std::string many;
  for (int i = 0; i < kRequests; ++i) many += http_request(t.auth, "GET", "/metrics");
  while (!stop.load()) {
    TestClient c(t.port);
    if (!c.connected()) continue;
    tally.sent(Kind::kStalledRead, kRequests);
    // Written from a thread: the server stops reading once answers pile up.
    std::thread writer([&] { c.send(many); });
    std::this_thread::sleep_for(std::chrono::seconds(2));
    int got = 0;
    for (; got < kRequests; ++got) {
      auto r = c.read(15000);
      if (!r) break;
      tally.answered(Kind::kStalledRead, r->status, r->status == 200 ? "" : r->body);
    }
    writer.join();
    for (int i = got; i < kRequests; ++i)
      tally.lost(Kind::kStalledRead, "a stalled reader lost an answer");
    pause_unless_stopped(stop, std::chrono::milliseconds(1000));
  }
}

}  // namespace batchscope::soak

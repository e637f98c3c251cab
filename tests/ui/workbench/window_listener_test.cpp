// SPDX-License-Identifier: GPL-3.0-or-later
// The window's own HTTP listener under load while the model is swapped: the
// listener stops for the swap and comes back on the same port over the new
// engine, behind the same bearer token, and the accounting over both
// listeners is exact: every request a listener read was answered and read by
// its client, and a request that met a closed connection was never read.

#include <gtest/gtest.h>

#include <QApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <map>
#include <mutex>
#include <thread>

#include "tests/http/test_client.h"
#include "tests/ui/workbench/toy_window.h"

namespace batchscope {
namespace {

struct ClientCounts {
  std::mutex mu;
  uint64_t sent = 0;  // requests written in full
  uint64_t lost = 0;  // written, then the connection closed without an answer
  uint64_t wrong = 0;
  std::map<int, uint64_t> by_status;
};

// Sends /infer requests one at a time, reconnecting whenever the listener
// closes, until `stop`; one in ten carries a wrong token.
void client(uint16_t port, int id, const std::atomic<bool>& stop, ClientCounts& counts) {
  auto conn = std::make_unique<test::TestClient>(port);
  for (int i = 0; !stop.load(); ++i) {
    if (!conn->connected()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      conn = std::make_unique<test::TestClient>(port);
      continue;
    }
    const float v = float(id * 100000 + i);
    const bool wrong_token = i % 10 == 9;
    const std::string body = "{\"data\": [" + std::to_string(v) + ", 0, 0, 0]}";
    const std::string auth =
        std::string("Authorization: Bearer ") + (wrong_token ? "guess" : "t0ken") + "\r\n";
    if (!conn->send(test::http_request("POST", "/infer", body, auth))) {
      conn = std::make_unique<test::TestClient>(port);
      continue;  // not written in full: not sent
    }
    auto r = conn->read(10000);
    std::lock_guard g(counts.mu);
    ++counts.sent;
    if (!r) {
      ++counts.lost;
      conn = std::make_unique<test::TestClient>(port);
      continue;
    }
    ++counts.by_status[r->status];
    const bool want_401 = wrong_token;
    if ((r->status == 401) != want_401) ++counts.wrong;
    if (r->status == 200) {
      const QJsonArray out =
          QJsonDocument::fromJson(QByteArray::fromStdString(r->body)).object()["result"].toArray();
      if (out.size() != 4 || out[0].toDouble() != 2.0 * v + 1) ++counts.wrong;
    }
  }
}

TEST(WindowListener, ServesAcrossAModelSwapAndAccountsForEveryRequest) {
  std::atomic<int> calls{0};
  WorkbenchConfig cfg = toy_config();
  cfg.loader = toy_loader(&calls);
  cfg.access.token = "t0ken";
  WorkbenchWindow w(cfg);
  auto port = w.start_server("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error().message;

  ClientCounts counts;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int id = 0; id < 4; ++id) clients.emplace_back([&, id] { client(*port, id, stop, counts); });
  auto wait_ok = [&](uint64_t n) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      {
        std::lock_guard g(counts.mu);
        if (counts.by_status[200] >= n) return true;
      }
      if (std::chrono::steady_clock::now() > give_up) return false;
      QApplication::processEvents();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  };
  ASSERT_TRUE(wait_ok(200)) << "the listener served nothing";
  ModelRequest r;
  r.path = "toy8.pt";
  w.load_model(r);
  ASSERT_TRUE(w.wait_loaded(20'000));
  ASSERT_EQ(w.model().metadata.name, "toy8");
  ASSERT_TRUE(w.server_running());  // back after the swap
  EXPECT_GT(w.http_counters().written, 0u);
  uint64_t ok_at_swap = 0;
  {
    std::lock_guard g(counts.mu);
    ok_at_swap = counts.by_status[200];
  }
  EXPECT_TRUE(wait_ok(ok_at_swap + 200)) << "the new listener served nothing";
  stop = true;
  for (std::thread& t : clients) t.join();
  // Every client is done (answered or gone). An answer is counted when its
  // last byte has left for the kernel, which the listener learns a moment
  // after its client may have read it: wait for the counts to settle.
  HttpCounters h = w.http_counters();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (h.parsed != h.written + h.dropped && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    h = w.http_counters();
  }
  std::lock_guard g(counts.mu);
  uint64_t answered = 0;
  for (const auto& [code, n] : counts.by_status) {
    answered += n;
    EXPECT_TRUE(code == 200 || code == 401 || code == 503) << code << " x " << n;
  }
  EXPECT_EQ(counts.wrong, 0u);
  EXPECT_EQ(answered + counts.lost, counts.sent);
  EXPECT_EQ(h.written, answered);  // every answer written was read
  EXPECT_EQ(h.dropped, 0u);
  EXPECT_EQ(h.parsed, h.written);  // so the lost ones were never read
  std::map<int, uint64_t> server(h.by_status.begin(), h.by_status.end());
  EXPECT_EQ(server, counts.by_status);
  EXPECT_GT(counts.by_status[401], 0u);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation routes over a real socket: a GenerationService on an
// HttpServer at 127.0.0.1, over a SyntheticLm whose steps a test can hold
// (StepGate), with the text the model gives for a prompt (expected()).

#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "api/generation_service.h"
#include "generation/synthetic_lm.h"
#include "http/http_client.h"
#include "http/http_stream_client.h"
#include "tests/batching/test_support.h"  // kSafety
#include "tests/http/test_client.h"

namespace batchscope::test {

// A model step a test can hold.
struct StepGate {
  std::mutex mu;
  std::condition_variable cv;
  bool closed = false, holding = false;
  void pass() {
    std::unique_lock g(mu);
    holding = true;
    cv.notify_all();
    cv.wait(g, [&] { return !closed; });
    holding = false;
  }
  bool await_holding() {
    std::unique_lock g(mu);
    return cv.wait_for(g, kSafety, [&] { return holding; });
  }
  void open() {
    std::lock_guard g(mu);
    closed = false;
    cv.notify_all();
  }
};

class GenerationTest : public ::testing::Test {
 protected:
  void start(Options o = {}, std::shared_ptr<Clock> clock = nullptr, bool gated = false,
             const ChatTemplate* chat = nullptr) {
    SyntheticLmOptions mo;
    mo.context_length = 256;
    if (gated) {
      gate_.closed = true;
      mo.spend = [this](Duration) { gate_.pass(); };
    }
    reference_ = std::make_unique<SyntheticLm>(mo);
    engine_ = std::make_unique<GenEngine>(std::make_unique<SyntheticLm>(mo), o, clock);
    ASSERT_TRUE(engine_->start().ok());
    GenServiceInfo info{engine_->info(), "cpu", "test"};
    if (chat) info.model.chat = *chat;
    service_ = std::make_unique<GenerationService>(*engine_, info);
    service_->set_access(access_);
    server_ = std::make_unique<HttpServer>(
        [this](HttpRequest&& req, Responder r) { service_->handle(std::move(req), r); });
    service_->set_server(server_.get());
    auto port = server_->start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok());
    port_ = *port;
  }
  void TearDown() override {
    gate_.open();
    if (server_) server_->stop(1000);
    if (engine_) engine_->stop(Duration::zero());
  }
  test::ClientResponse post(const std::string& path, const std::string& body) {
    TestClient c(port_);
    EXPECT_TRUE(c.send(http_request("POST", path, body)));
    auto r = c.read();
    EXPECT_TRUE(r.has_value());
    return r.value_or(test::ClientResponse{});
  }
  std::string expected(std::string_view prompt, uint32_t n) {
    std::vector<int32_t> h(prompt.begin(), prompt.end());
    std::string out;
    for (uint32_t i = 0; i < n; ++i) {
      h.push_back(reference_->next_after(h));
      out.push_back(static_cast<char>(h.back()));
    }
    return out;
  }
  // Streams a request with the load client: every event's data, then the status.
  std::pair<std::vector<std::string>, int> stream(const std::string& path,
                                                  const std::string& body) {
    HttpStreamClient client("127.0.0.1", port_, 1);
    EXPECT_TRUE(client.start().ok());
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> events;
    int status = -1;
    TimePoint last{};
    client.send(
        json_post(Url{"127.0.0.1", port_, path, ""}, body),
        [&](std::string_view data, TimePoint when) {
          std::lock_guard g(mu);
          EXPECT_GE(when, last);
          last = when;
          events.emplace_back(data);
        },
        [&](int s, std::string_view) {
          std::lock_guard g(mu);
          status = s;
          cv.notify_all();
        });
    std::unique_lock g(mu);
    EXPECT_TRUE(cv.wait_for(g, kSafety, [&] { return status != -1; }));
    g.unlock();
    client.stop();
    return {events, status};
  }

  // A client that resets its connection mid-stream: its sequence is
  // cancelled at the next step and its cache blocks are freed.
  void expect_leaving_cancels(const std::string& path, const std::string& body) {
    start(Options{}, nullptr, /*gated=*/true);
    {
      TestClient c(port_);
      ASSERT_TRUE(c.send(http_request("POST", path, body)));
      ASSERT_TRUE(gate_.await_holding());
      c.reset();
    }
    // The listener sees the reset and cancels; the step in progress ends, the next one cancels.
    const auto give_up = std::chrono::steady_clock::now() + kSafety;
    while (server_->counters().dropped == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    gate_.open();
    std::vector<GenRecord> done;
    std::vector<StepRecord> steps;
    while (done.empty() && std::chrono::steady_clock::now() < give_up) {
      std::vector<GenRecord> r;
      engine_->drain(r, steps);
      done.insert(done.end(), r.begin(), r.end());
    }
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].reason, FinishReason::kCancelled);
    EXPECT_LT(done[0].output_tokens, 200u);
    EXPECT_EQ(engine_->status().blocks_used, 0u);
  }

  StepGate gate_;
  ServiceAccess access_;  // set before start()
  std::unique_ptr<SyntheticLm> reference_;
  std::unique_ptr<GenEngine> engine_;
  std::unique_ptr<GenerationService> service_;
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
};

inline QJsonObject object(const std::string& body) {
  return QJsonDocument::fromJson(QByteArray::fromStdString(body)).object();
}

}  // namespace batchscope::test

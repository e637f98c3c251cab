// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The fixture of the listener's end-to-end suites: a toy model (one FP32
// input [-1, 4], output 2x + 1) on an engine with a manual clock and a runner
// the test can hold, the routes, and a listener on 127.0.0.1 with a 4 KiB
// body limit. Clients are real sockets (test_client.h).

#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <thread>

#include "api/inference_service.h"
#include "tests/batching/test_support.h"
#include "tests/http/test_client.h"
#include "tuning/adaptive_planner.h"

namespace batchscope::test {

inline QJsonObject parse(const std::string& body) {
  return QJsonDocument::fromJson(QByteArray::fromStdString(body)).object();
}

inline std::string data_body(float v) {
  return "{\"data\": [" + std::to_string(v) + ", " + std::to_string(v + 1) + ", " +
         std::to_string(v + 2) + ", " + std::to_string(v + 3) + "]}";
}

// Result of the test runner: 2x + 1 for each input element.
inline std::vector<double> expected_result(float v) {
  return {2.0 * v + 1, 2.0 * (v + 1) + 1, 2.0 * (v + 2) + 1, 2.0 * (v + 3) + 1};
}

inline std::vector<double> numbers(const QJsonValue& arr) {
  std::vector<double> out;
  for (const QJsonValue& x : arr.toArray()) out.push_back(x.toDouble());
  return out;
}

class ServerTest : public ::testing::Test {
 protected:
  static HttpServerOptions small_body() {
    HttpServerOptions so;
    so.limits.max_body_bytes = 4096;
    return so;
  }
  void start(Options o = Options{.max_batch_size = 8, .max_wait_us = 0},
             HttpServerOptions so = small_body(), ServiceAccess access = {}) {
    if (meta_.name.empty()) {  // a test may set another model before start()
      meta_.name = "toy";
      meta_.max_batch_size = 64;
      meta_.inputs = {TensorSpec{"data", DType::kFloat32, {-1, 4}, true}};
      meta_.outputs = {TensorSpec{"output", DType::kFloat32, {-1, 4}, false}};
    }
    engine_ = std::make_unique<Engine>(TestRunner::factory(control_), o, clock_);
    bind_model(*engine_, meta_);
    engine_->set_adaptive_planner(make_adaptive_plan);
    ASSERT_TRUE(engine_->start().ok());
    service_ = std::make_unique<InferenceService>(*engine_, ServiceInfo{meta_, "cpu", "test"});
    service_->set_access(access);
    server_ = std::make_unique<HttpServer>(
        [this](HttpRequest&& req, Responder r) { service_->handle(std::move(req), r); }, so);
    service_->set_server(server_.get());
    auto port = server_->start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.error().message;
    port_ = *port;
  }
  void TearDown() override {
    {
      std::lock_guard g(control_->mu);
      control_->hold = false;
    }
    control_->release(100000);
    if (engine_) engine_->stop(StopMode::kDrain);
    if (server_) server_->stop(2000);
  }
  // The server's counts once nothing is in flight: an answer is counted
  // when its last byte has left for the kernel, which the I/O thread learns
  // a moment after a client may already have read it.
  HttpCounters settled_counters() {
    const auto give_up = std::chrono::steady_clock::now() + kSafety;
    for (;;) {
      HttpCounters h = server_->counters();
      if (h.parsed == h.written + h.dropped || std::chrono::steady_clock::now() > give_up) return h;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  // Waits (with the safety timeout) until `n` requests are queued.
  void await_queued(size_t n) {
    const auto give_up = std::chrono::steady_clock::now() + kSafety;
    while (engine_->status().queue_depth < n) {
      ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "never " << n << " queued";
      std::this_thread::yield();
    }
  }
  ClientResponse call(const std::string& raw) {
    TestClient c(port_);
    EXPECT_TRUE(c.connected());
    c.send(raw);
    auto r = c.read();
    EXPECT_TRUE(r.has_value()) << "no response to " << raw.substr(0, 60);
    return r.value_or(ClientResponse{});
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::shared_ptr<TestRunner::Control> control_ = std::make_shared<TestRunner::Control>();
  ModelMetadata meta_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
};

}  // namespace batchscope::test

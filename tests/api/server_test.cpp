// SPDX-License-Identifier: GPL-3.0-or-later
// The listener and routes end to end over 127.0.0.1: every endpoint and
// status code, pipelining, concurrent clients, disconnect-cancels, /metrics
// against the requests made, and live retuning under load. The engine runs on
// a manual clock with a runner the test can hold, so queue-full and timeouts
// are produced deliberately, not by racing the clock.

#include "tests/api/server_fixture.h"

namespace batchscope::test {
namespace {

TEST_F(ServerTest, InferAnswersWithItsOwnResult) {
  start();
  ClientResponse r = call(http_request("POST", "/infer", data_body(3)));
  ASSERT_EQ(r.status, 200) << r.body;
  const QJsonObject o = parse(r.body);
  EXPECT_EQ(numbers(o["result"]), expected_result(3));
  EXPECT_GE(o["request_id"].toInteger(), 1);
  EXPECT_TRUE(o.contains("latency_ms"));
  EXPECT_EQ(r.headers["content-type"], "application/json");
}

TEST_F(ServerTest, BadInputGetsAClearErrorAndServingGoesOn) {
  start();
  struct Case {
    std::string raw;
    int status;
    const char* says;
  };
  const Case cases[] = {
      {http_request("POST", "/infer", "{\"data\": [1, 2]}"), 422, "expected 4"},
      {http_request("POST", "/infer", "{\"data\": [1, 2, 3, \"x\"]}"), 422, "element 3"},
      // Python's json.dumps writes NaN for a float('nan'): refused by the model's check.
      {http_request("POST", "/infer", "{\"data\": [1, 2, 3, NaN]}"), 422, "NaN or infinite"},
      {http_request("POST", "/infer", "{\"data\": [1, 2, 3, 1e999]}"), 400, "not valid JSON"},
      {http_request("POST", "/infer", "{\"data\": [1, 2,"), 400, "not valid JSON"},
      {http_request("POST", "/infer", "[1, 2, 3, 4]"), 400, "JSON object"},
      {http_request("POST", "/infer", "{\"values\": [1]}"), 400, "no 'data'"},
      {http_request("GET", "/infer"), 405, "use POST"},
      {http_request("GET", "/nowhere"), 404, "no route '/nowhere'"},
      {http_request("GET", "/v2/models/other"), 404, "unknown model 'other'"},
      {http_request("GET", "/v2/models/toy/versions/7"), 404, "no version '7'"},
      {http_request("PUT", "/v1/config", "{\"max_batch_size\": 0}"), 400, "max_batch_size = 0"},
      {http_request("PUT", "/v1/config", "{\"max_wait_us\": 99999999}"), 400, "allowed 0 to"},
      {http_request("PUT", "/v1/config", "{\"batch\": 3}"), 400, "unknown option 'batch'"},
      {http_request("DELETE", "/v1/config"), 405, "GET, PUT"},
  };
  for (const Case& c : cases) {
    ClientResponse r = call(c.raw);
    EXPECT_EQ(r.status, c.status) << c.raw;
    const std::string err = parse(r.body)["error"].toString().toStdString();
    EXPECT_NE(err.find(c.says), std::string::npos) << "got: " << r.body;
  }
  EXPECT_EQ(call(http_request("GET", "/v1/config")).status, 200);
  ClientResponse ok = call(http_request("POST", "/infer", data_body(1)));
  EXPECT_EQ(ok.status, 200);
  // Decoding errors never reach the engine; the model's own check (NaN) does.
  EXPECT_EQ(engine_->status().counters.invalid, 1u);
  EXPECT_EQ(engine_->status().counters.admitted, 1u);
}

TEST_F(ServerTest, OversizedBodiesAndHeadersAreRefusedBeforeTheyAreRead) {
  start();
  TestClient big(port_);
  big.send("POST /infer HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n");
  auto r = big.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_TRUE(big.closed_by_peer());

  TestClient fat(port_);
  fat.send("GET /health HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n");
  r = fat.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
}

TEST_F(ServerTest, KServeV2RoutesAndMultiRowInference) {
  start();
  EXPECT_EQ(parse(call(http_request("GET", "/v2")).body)["name"].toString(), "batchscope");
  EXPECT_TRUE(parse(call(http_request("GET", "/v2/health/live")).body)["live"].toBool());
  EXPECT_TRUE(parse(call(http_request("GET", "/v2/health/ready")).body)["ready"].toBool());
  EXPECT_TRUE(parse(call(http_request("GET", "/v2/models/toy/ready")).body)["ready"].toBool());
  const QJsonObject meta = parse(call(http_request("GET", "/v2/models/toy/versions/1")).body);
  EXPECT_EQ(meta["inputs"].toArray()[0].toObject()["datatype"].toString(), "FP32");
  EXPECT_EQ(meta["inputs"].toArray()[0].toObject()["shape"].toArray()[1].toInt(), 4);

  const std::string body =
      R"({"id": "req-7", "inputs": [{"name": "data", "datatype": "FP32", "shape": [3, 4],
          "data": [[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]}],
          "outputs": [{"name": "output"}]})";
  ClientResponse r = call(http_request("POST", "/v2/models/toy/infer", body));
  ASSERT_EQ(r.status, 200) << r.body;
  const QJsonObject o = parse(r.body);
  EXPECT_EQ(o["id"].toString(), "req-7");
  EXPECT_EQ(o["model_name"].toString(), "toy");
  const QJsonObject out = o["outputs"].toArray()[0].toObject();
  EXPECT_EQ(out["shape"].toArray()[0].toInt(), 3);
  std::vector<double> want;
  for (float v : {0.0f, 10.0f, 20.0f}) {
    for (double x : expected_result(v)) want.push_back(x);
  }
  EXPECT_EQ(numbers(out["data"]), want);  // rows reassembled in order

  ClientResponse wrong = call(http_request(
      "POST", "/v2/models/toy/versions/1/infer",
      R"({"inputs": [{"name": "data", "datatype": "INT64", "shape": [1, 4], "data": [1, 2, 3, 4]}]})"));
  EXPECT_EQ(wrong.status, 422);
  EXPECT_NE(wrong.body.find("expected FP32"), std::string::npos) << wrong.body;
  ClientResponse shape = call(http_request(
      "POST", "/v2/models/toy/infer",
      R"({"inputs": [{"name": "data", "datatype": "FP32", "shape": [1, 5], "data": [1, 2, 3, 4, 5]}]})"));
  EXPECT_EQ(shape.status, 422);
  EXPECT_NE(shape.body.find("expected [-1, 4]"), std::string::npos) << shape.body;
  EXPECT_EQ(call(http_request("POST", "/v2/models/toy/infer", R"({"id": "x"})")).status, 400);
}

TEST_F(ServerTest, AVariableLengthIsServedAndOneOverItsLargestIsNamed) {
  meta_.name = "varied";
  meta_.max_batch_size = 64;
  TensorSpec tokens{"tokens", DType::kFloat32, {-1, -1}, false};
  tokens.max_shape = {-1, 8};
  meta_.inputs = {tokens};
  meta_.outputs = {TensorSpec{"output", DType::kFloat32, {-1, -1}, false}};
  start();
  ClientResponse r =
      call(http_request("POST", "/v2/models/varied/infer",
                        R"({"inputs": [{"name": "tokens", "datatype": "FP32", "shape": [2, 3],
          "data": [1, 2, 3, 4, 5, 6]}]})"));
  ASSERT_EQ(r.status, 200) << r.body;
  const QJsonObject out = parse(r.body)["outputs"].toArray()[0].toObject();
  EXPECT_EQ(out["shape"].toArray()[0].toInt(), 2);
  EXPECT_EQ(out["shape"].toArray()[1].toInt(), 3);  // the request's own length
  EXPECT_EQ(numbers(out["data"]), (std::vector<double>{3, 5, 7, 9, 11, 13}));
  ClientResponse simple = call(http_request("POST", "/infer", R"({"data": [1, 2]})"));
  ASSERT_EQ(simple.status, 200) << simple.body;
  EXPECT_EQ(numbers(parse(simple.body)["result"]), (std::vector<double>{3, 5}));

  ClientResponse over =
      call(http_request("POST", "/v2/models/varied/infer",
                        R"({"inputs": [{"name": "tokens", "datatype": "FP32", "shape": [1, 9],
          "data": [1, 2, 3, 4, 5, 6, 7, 8, 9]}]})"));
  EXPECT_EQ(over.status, 422);
  EXPECT_NE(over.body.find("dimension 1 is 9, over its largest 8"), std::string::npos) << over.body;
  // And the server goes on serving.
  EXPECT_EQ(call(http_request("POST", "/infer", R"({"data": [4]})")).status, 200);
  // /metrics counts the positions the batches held and the requests' own.
  const std::string m = call(http_request("GET", "/metrics")).body;
  const auto value = [&m](const std::string& name) {
    const size_t at = m.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::stod(m.substr(at + name.size() + 2));
  };
  const double real = value("batchscope_real_positions_total");
  const double padded = value("batchscope_padded_positions_total");
  EXPECT_EQ(real, 3 + 3 + 2 + 1) << m;  // every request's length, once
  EXPECT_GE(padded, real) << m;
}

TEST_F(ServerTest, PipelinedRequestsComeBackInOrder) {
  start();
  TestClient c(port_);
  std::string all;
  for (int i = 0; i < 20; ++i) all += http_request("POST", "/infer", data_body(float(i)));
  all += http_request("GET", "/health");
  ASSERT_TRUE(c.send(all));
  for (int i = 0; i < 20; ++i) {
    auto r = c.read();
    ASSERT_TRUE(r) << "response " << i;
    ASSERT_EQ(r->status, 200);
    EXPECT_EQ(numbers(parse(r->body)["result"]), expected_result(float(i))) << "response " << i;
  }
  auto h = c.read();
  ASSERT_TRUE(h);
  EXPECT_EQ(parse(h->body)["status"].toString(), "ok");
}

TEST_F(ServerTest, ChunkedBodiesAndKeepAlive) {
  start();
  TestClient c(port_);
  const std::string body = data_body(5);
  const std::string half = body.substr(0, 10), rest = body.substr(10);
  char size1[16], size2[16];
  std::snprintf(size1, sizeof size1, "%zx", half.size());
  std::snprintf(size2, sizeof size2, "%zx", rest.size());
  c.send("POST /infer HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(size1) +
         "\r\n" + half + "\r\n" + size2 + "\r\n" + rest + "\r\n0\r\n\r\n");
  auto r = c.read();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(numbers(parse(r->body)["result"]), expected_result(5));
  c.send(http_request("POST", "/infer", data_body(6)));  // same connection
  r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(numbers(parse(r->body)["result"]), expected_result(6));
  c.send(http_request("GET", "/health", "", "Connection: close\r\n"));
  ASSERT_TRUE(c.read());
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(ServerTest, ExpectContinueGetsA100BeforeTheBody) {
  start();
  TestClient c(port_);
  const std::string body = data_body(2);
  c.send("POST /infer HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n");
  auto interim = c.read();  // sent before any body byte
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  c.send(body);
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(numbers(parse(r->body)["result"]), expected_result(2));
}

TEST_F(ServerTest, IdleConnectionsAreClosed) {
  meta_.name = "toy";
  HttpServerOptions so;
  so.idle_timeout_ms = 100;
  HttpServer quick([](HttpRequest&&, Responder r) { r.send(HttpResponse{}); }, so);
  auto port = quick.start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  TestClient c(*port);
  c.send(http_request("GET", "/anything"));
  ASSERT_TRUE(c.read());            // served, then idle
  EXPECT_TRUE(c.closed_by_peer());  // closed after about 100 ms
  quick.stop(100);
}

TEST_F(ServerTest, QueueFullIs429WithRetryAfterAndTimeoutIs504) {
  control_->hold = true;
  start(
      Options{.max_batch_size = 1, .max_wait_us = 0, .queue_capacity = 1, .request_timeout_ms = 5});
  TestClient a(port_), b(port_), c(port_);
  a.send(http_request("POST", "/infer", data_body(1)));
  ASSERT_TRUE(control_->await_entered(1));  // a runs, held
  b.send(http_request("POST", "/infer", data_body(2)));
  await_queued(1);  // b is queued
  c.send(http_request("POST", "/infer", data_body(3)));
  auto full = c.read();
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429);
  EXPECT_EQ(full->headers["retry-after"], "1");
  clock_->advance(milliseconds(5));  // b's deadline passes while a still runs
  auto late = b.read();
  ASSERT_TRUE(late);
  EXPECT_EQ(late->status, 504);
  EXPECT_NE(late->body.find("timed out"), std::string::npos);
  control_->release(1);
  auto first = a.read();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
}

TEST_F(ServerTest, ADisconnectWhileQueuedCancels) {
  control_->hold = true;
  start(Options{.max_batch_size = 1, .max_wait_us = 0});
  TestClient a(port_);
  a.send(http_request("POST", "/infer", data_body(1)));
  ASSERT_TRUE(control_->await_entered(1));
  {
    TestClient gone(port_);
    gone.send(http_request("POST", "/infer", data_body(2)));
    await_queued(1);
    gone.reset();  // gives up while its request waits
  }
  const auto give_up = std::chrono::steady_clock::now() + kSafety;
  while (engine_->status().counters.cancelled < 1) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "the queued request was not cancelled";
    std::this_thread::yield();
  }
  EXPECT_EQ(engine_->status().queue_depth, 0u);
  control_->release(1);
  ASSERT_TRUE(a.read());
  EXPECT_EQ(control_->log.snapshot().size(), 1u);  // the cancelled one never ran
}

// A client that shuts its sending side after its requests (nc -N, some
// proxies) is not gone: it reads every answer it asked for, then the end of
// the stream; a request it cut short was never read and gets nothing. A client
// that closes normally looks the same until a write to it fails, so its
// queued work runs; one that resets cancels at once (above).
TEST_F(ServerTest, AHalfClosedClientGetsEveryAnswerItAskedFor) {
  control_->hold = true;
  start(Options{.max_batch_size = 1, .max_wait_us = 0});
  TestClient c(port_);
  for (int i = 1; i <= 3; ++i) c.send(http_request("POST", "/infer", data_body(float(i))));
  ASSERT_TRUE(control_->await_entered(1));
  c.shutdown_write();  // while the first runs and the others wait
  control_->release(3);
  for (int i = 1; i <= 3; ++i) {
    auto r = c.read();
    ASSERT_TRUE(r) << "answer " << i << " never came";
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(engine_->status().counters.cancelled, 0u);

  TestClient cut(port_);
  cut.send(http_request("GET", "/health") + "POST /infer HTTP/1.1\r\nContent-Length: 10\r\n\r\n{");
  cut.shutdown_write();
  auto health = cut.read();
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_TRUE(cut.closed_by_peer());
  EXPECT_EQ(server_->counters().parsed, 4u);  // the 3 above and the health check
}

TEST_F(ServerTest, ShuttingDownAnswers503) {
  start();
  service_->shutting_down();
  EXPECT_EQ(call(http_request("POST", "/infer", data_body(1))).status, 503);
  EXPECT_EQ(call(http_request("GET", "/v2/health/ready")).status, 503);
  EXPECT_EQ(parse(call(http_request("GET", "/health")).body)["status"].toString(), "shutting_down");
}

TEST_F(ServerTest, ManyConcurrentClientsEachGetTheirOwnResult) {
  start(Options{.max_batch_size = 16, .max_wait_us = 0, .num_lanes = 2});
  constexpr int kClients = 12, kEach = 40;
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      TestClient c(port_);
      for (int i = 0; i < kEach; ++i) {
        const float v = float(t * 1000 + i);
        c.send(http_request("POST", "/infer", data_body(v)));
        auto r = c.read();
        if (r && r->status == 200 && numbers(parse(r->body)["result"]) == expected_result(v))
          ++good;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), kClients * kEach);
}

TEST_F(ServerTest, MetricsParseAndCountWhatWasServed) {
  start();
  for (int i = 0; i < 7; ++i) call(http_request("POST", "/infer", data_body(float(i))));
  call(http_request("POST", "/infer",
                    "{\"data\": [1, 2, 3, NaN]}"));         // refused by the model's check
  call(http_request("POST", "/infer", "{\"data\": [1]}"));  // refused while decoding
  ClientResponse m = call(http_request("GET", "/metrics"));
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.headers["content-type"].rfind("text/plain; version=0.0.4", 0), 0u);
  auto sample = [&](const std::string& name) -> double {
    const size_t at = m.body.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::stod(m.body.substr(at + name.size() + 2));
  };
  EXPECT_EQ(sample("batchscope_requests_total{outcome=\"ok\"}"), 7);
  EXPECT_EQ(sample("batchscope_requests_total{outcome=\"invalid\"}"), 1);
  EXPECT_EQ(sample("batchscope_request_duration_seconds_count{stage=\"total\"}"), 7);
  EXPECT_EQ(sample("batchscope_option_max_batch_size"), 8);
  EXPECT_EQ(sample("batchscope_http_errors_total"), 2);
  EXPECT_EQ(sample("batchscope_http_requests_total"), 9);
  // Every non-comment line is `name[{labels}] value`.
  size_t pos = 0;
  while (pos < m.body.size()) {
    const size_t end = m.body.find('\n', pos);
    const std::string line = m.body.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_NO_THROW(std::stod(line.substr(space + 1))) << line;
  }
}

TEST_F(ServerTest, RetuningUnderLoadTakesEffectAndLosesNothing) {
  start(Options{.max_batch_size = 4, .max_wait_us = 0, .num_lanes = 2});
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0}, ok{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      TestClient c(port_);
      for (int i = 0; !stop || i < 20; ++i) {
        const float v = float(t * 100000 + i);
        c.send(http_request("POST", "/infer", data_body(v)));
        ++sent;
        auto r = c.read();
        if (r && r->status == 200 && numbers(parse(r->body)["result"]) == expected_result(v)) ++ok;
        if (i > 400) break;
      }
    });
  }
  ClientResponse put =
      call(http_request("PUT", "/v1/config", R"({"max_batch_size": 16, "num_lanes": 1})"));
  ASSERT_EQ(put.status, 200) << put.body;
  const QJsonObject o = parse(put.body);
  EXPECT_EQ(o["version"].toInt(), 2);
  EXPECT_EQ(o["options"].toObject()["max_batch_size"].toInt(), 16);
  stop = true;
  for (auto& th : load) th.join();
  EXPECT_EQ(ok.load(), sent.load());  // every request answered with its own result
  EXPECT_EQ(engine_->status().options.max_batch_size, 16u);
  EXPECT_EQ(parse(call(http_request("GET", "/v1/config")).body)["version"].toInt(), 2);
}

}  // namespace
}  // namespace batchscope::test

namespace batchscope::test {
namespace {

TEST_F(ServerTest, StoppingWithIdleKeepAliveConnectionsClosesEachOnce) {
  start();
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<TestClient>(port_));
    ASSERT_TRUE(clients.back()->connected());
    clients.back()->send(http_request("GET", "/health", ""));
    ASSERT_TRUE(clients.back()->read().has_value());  // the connection stays open
  }
  server_->stop(2000);
  server_.reset();
  for (auto& c : clients) EXPECT_FALSE(c->read().has_value());  // closed by the server
}

TEST_F(ServerTest, MetricsCanComeFromTheOwnersMonitorInsteadOfDrainingTheEngine) {
  start();
  MetricsWindow totals;
  for (int i = 0; i < 42; ++i) totals.batch_sizes.record(3);
  totals.batches = 42;
  totals.batch_size_sum = 126;
  service_->set_metrics_source([&] { return totals; });
  ClientResponse r = call(http_request("GET", "/metrics", ""));
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("batchscope_batch_size_sum 126"), std::string::npos)
      << r.body.substr(0, 3000);
}

}  // namespace
}  // namespace batchscope::test

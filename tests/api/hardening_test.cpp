// SPDX-License-Identifier: GPL-3.0-or-later
// The listener against hostile and careless clients, over real sockets: sizes
// a client controls (shapes, bodies, header lines), exceptions at the
// connection boundary, read deadlines, graceful close, backpressure, the
// bearer token and read-only configuration, and the per-status accounting
// in /metrics. Each of the defects these guard against once ended the
// process, misquoted a value or reset a connection.

#include <QJsonArray>

#include "tests/api/server_fixture.h"

namespace batchscope::test {
namespace {

std::string v2_body(const std::string& shape, const std::string& data) {
  return R"({"inputs": [{"name": "data", "datatype": "FP32", "shape": )" + shape + R"(, "data": )" +
         data + "}]}";
}

std::string error_of(const ClientResponse& r) {
  return parse(r.body)["error"].toString().toStdString();
}

TEST_F(ServerTest, AHugeShapeIsRefusedBeforeAnythingIsAllocated) {
  start();
  struct Case {
    std::string shape;
    const char* says;
  };
  const Case cases[] = {
      {"[3000000000, 4]", "shape [3000000000, 4] needs 12000000000"},
      {"[1000000000000, 4]", "needs 4000000000000"},
      {"[9007199254740992, 4]", "needs 36028797018963968"},
      {"[1e300, 4]", "a dimension of 1e+300"},
      {"[1, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]", "22 dimensions"},
  };
  for (const Case& c : cases) {
    ClientResponse r =
        call(http_request("POST", "/v2/models/toy/infer", v2_body(c.shape, "[1, 2, 3, 4]")));
    EXPECT_EQ(r.status, 422) << c.shape;
    EXPECT_NE(error_of(r).find(c.says), std::string::npos) << r.body;
  }
  // Still serving, and none of them reached the engine.
  EXPECT_EQ(call(http_request("POST", "/infer", data_body(1))).status, 200);
  EXPECT_EQ(engine_->status().counters.submitted, 1u);
}

TEST_F(ServerTest, OptionErrorsQuoteTheValueAsSent) {
  start();
  struct Case {
    const char* body;
    const char* says;
  };
  const Case cases[] = {
      {R"({"max_wait_us": 1e300})", "max_wait_us = 1e+300 is out of range; allowed 0 to 10000000"},
      {R"({"max_batch_size": -3})", "max_batch_size = -3 is out of range; allowed 1 to 4096"},
      {R"({"max_wait_ms": 1e300})", "max_wait_ms = 1e+300 is out of range; allowed 0 to 10000"},
      {R"({"queue_capacity": 99999999999})", "queue_capacity = 99999999999 is out of range"},
      {R"({"num_lanes": 2.5})", "num_lanes must be a whole number, got 2.5"},
      {R"({"request_timeout_ms": -1e19})", "request_timeout_ms = -1e+19 is out of range"},
      {R"({"target_p99_ms": 0})", "target_p99_ms = 0 is out of range; allowed 0.01 to 600000"},
      {R"({"strategy": "lifo"})", "got 'lifo'"},
  };
  for (const Case& c : cases) {
    ClientResponse r = call(http_request("PUT", "/v1/config", c.body));
    EXPECT_EQ(r.status, 400) << c.body;
    EXPECT_NE(error_of(r).find(c.says), std::string::npos) << r.body;
  }
  EXPECT_EQ(engine_->status().options_version, 1u);  // nothing was applied
}

TEST_F(ServerTest, TheConfigDocumentRoundTrips) {
  start();
  ClientResponse put = call(http_request("PUT", "/v1/config", R"({"max_batch_size": 6})"));
  ASSERT_EQ(put.status, 200) << put.body;
  // What GET answers is accepted back as it is, and changes nothing.
  ClientResponse got = call(http_request("GET", "/v1/config"));
  ClientResponse again = call(http_request("PUT", "/v1/config", got.body));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(parse(again.body)["options"].toObject(), parse(got.body)["options"].toObject());
  EXPECT_EQ(engine_->status().options.max_batch_size, 6u);
  ClientResponse extra =
      call(http_request("PUT", "/v1/config", R"({"version": 3, "options": {}, "x": 1})"));
  EXPECT_EQ(extra.status, 400);
  EXPECT_NE(error_of(extra).find("unknown field 'x'"), std::string::npos) << extra.body;
}

TEST_F(ServerTest, AnExceptionWhileHandlingIsAnswered500AndServingGoesOn) {
  HttpServer server([](HttpRequest&& req, Responder r) {
    if (req.path() == "/oom") throw std::bad_alloc();
    if (req.path() == "/throw") throw std::runtime_error("broken route");
    if (req.path() == "/forget") return;  // drops its responder unanswered
    r.send(HttpResponse{200, "text/plain", "fine", {}});
  });
  auto port = server.start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  port_ = *port;
  ClientResponse oom = call(http_request("GET", "/oom"));
  EXPECT_EQ(oom.status, 500);
  EXPECT_NE(error_of(oom).find("ran out of memory"), std::string::npos) << oom.body;
  ClientResponse thrown = call(http_request("GET", "/throw"));
  EXPECT_EQ(thrown.status, 500);
  EXPECT_NE(error_of(thrown).find("broken route"), std::string::npos) << thrown.body;
  ClientResponse forgot = call(http_request("GET", "/forget"));
  EXPECT_EQ(forgot.status, 500);
  EXPECT_NE(error_of(forgot).find("no answer"), std::string::npos) << forgot.body;
  // Same connection afterwards: still served.
  TestClient c(port_);
  c.send(http_request("GET", "/throw") + http_request("GET", "/ok"));
  ASSERT_EQ(c.read().value_or(ClientResponse{}).status, 500);
  ASSERT_EQ(c.read().value_or(ClientResponse{}).status, 200);
  EXPECT_EQ(server.counters().handler_exceptions, 3u);
  server.stop(1000);
}

TEST_F(ServerTest, ARefusedBodyIsReadNotResetWhenTheClientKeepsWriting) {
  start();  // 4 KiB body limit
  TestClient c(port_);
  // Headers and 20 MB of body in one go, without waiting for 100 Continue:
  // every send must succeed (the server drains) and the 413 must be read.
  const std::string body(20u << 20, 'x');
  ASSERT_TRUE(c.send("POST /infer HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\n\r\n" + body))
      << "the server reset the connection while the body was being written";
  auto r = c.read();
  ASSERT_TRUE(r) << "no answer after the body";
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(error_of(*r).find("exceeds the 4096-byte body limit"), std::string::npos) << r->body;
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(ServerTest, AHugeHeaderLineIsAnswered431NotReset) {
  start();
  TestClient c(port_);
  ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nX-Big: " + std::string(1u << 20, 'a') + "\r\n\r\n"))
      << "the server reset the connection while the header was being written";
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(ServerTest, ATricklingHeadIsAnswered408) {
  HttpServerOptions so = small_body();
  so.header_timeout_ms = 200;
  start(Options{.max_batch_size = 8, .max_wait_us = 0}, so);
  TestClient c(port_);
  c.send("GET /health HTTP/1.1\r\nHo");
  c.send("s");  // still trickling; the deadline counts from the first byte
  auto r = c.read(5000);
  ASSERT_TRUE(r) << "a trickling head was never cut off";
  EXPECT_EQ(r->status, 408);
  EXPECT_NE(error_of(*r).find("did not arrive within 200 ms"), std::string::npos) << r->body;
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(ServerTest, ASlowBodyIsAnswered408) {
  HttpServerOptions so = small_body();
  so.min_body_bytes_per_s = 1000;
  so.body_grace_ms = 200;
  start(Options{.max_batch_size = 8, .max_wait_us = 0}, so);
  TestClient c(port_);
  c.send("POST /infer HTTP/1.1\r\nContent-Length: 4000\r\n\r\n{\"data\"");
  auto r = c.read(5000);
  ASSERT_TRUE(r) << "a slow body was never cut off";
  EXPECT_EQ(r->status, 408);
  EXPECT_NE(error_of(*r).find("below the minimum of 1000 bytes/s"), std::string::npos) << r->body;
}

TEST_F(ServerTest, AClientThatPipelinesWithoutReadingIsHeldBackAndFullyAnswered) {
  HttpServerOptions so = small_body();
  so.max_pending_responses = 4;
  so.max_unwritten_bytes = 4096;
  start(Options{.max_batch_size = 8, .max_wait_us = 0}, so);
  TestClient c(port_);
  constexpr int kRequests = 2000;
  std::string all;
  for (int i = 0; i < kRequests; ++i) all += http_request("POST", "/infer", data_body(float(i)));
  // Written from another thread: the server stops reading, so the send
  // blocks until this thread reads answers.
  std::thread writer([&] { c.send(all); });
  int in_order = 0;
  for (int i = 0; i < kRequests; ++i) {
    auto r = c.read();
    if (!r) break;
    if (r->status == 200 && numbers(parse(r->body)["result"]) == expected_result(float(i)))
      ++in_order;
  }
  writer.join();
  EXPECT_EQ(in_order, kRequests);
}

TEST_F(ServerTest, ATokenGuardsEveryRouteButHealth) {
  start(Options{.max_batch_size = 8, .max_wait_us = 0}, small_body(),
        ServiceAccess{"s3cret", true});
  ClientResponse none = call(http_request("POST", "/infer", data_body(1)));
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.headers["www-authenticate"], "Bearer realm=\"batchscope\"");
  EXPECT_NE(error_of(none).find("Authorization: Bearer"), std::string::npos) << none.body;
  EXPECT_EQ(call(http_request("GET", "/metrics", "", "Authorization: Bearer s3cre\r\n")).status,
            401);
  EXPECT_EQ(call(http_request("GET", "/v1/config", "", "Authorization: Basic s3cret\r\n")).status,
            401);
  EXPECT_EQ(
      call(http_request("POST", "/infer", data_body(1), "Authorization: Bearer s3cret\r\n")).status,
      200);
  EXPECT_EQ(call(http_request("GET", "/health")).status, 200);
  EXPECT_EQ(call(http_request("GET", "/v2/health/live")).status, 200);
  EXPECT_EQ(call(http_request("GET", "/v2/health/ready")).status, 200);
  EXPECT_EQ(call(http_request("GET", "/v2/models/toy")).status, 401);
  EXPECT_EQ(engine_->status().counters.submitted, 1u);
}

TEST_F(ServerTest, RemoteConfigCanBeReadOnly) {
  start(Options{.max_batch_size = 8, .max_wait_us = 0}, small_body(), ServiceAccess{"", false});
  ClientResponse put = call(http_request("PUT", "/v1/config", R"({"max_batch_size": 2})"));
  EXPECT_EQ(put.status, 403);
  EXPECT_NE(error_of(put).find("--no-remote-config"), std::string::npos) << put.body;
  EXPECT_EQ(call(http_request("GET", "/v1/config")).status, 200);
  EXPECT_EQ(engine_->status().options.max_batch_size, 8u);
}

TEST_F(ServerTest, MetricsCountAnswersPerStatusAndTheOnesDropped) {
  control_->hold = true;
  start(Options{.max_batch_size = 1, .max_wait_us = 0});
  TestClient a(port_);
  a.send(http_request("POST", "/infer", data_body(1)));
  ASSERT_TRUE(control_->await_entered(1));  // held in the model
  {
    TestClient gone(port_);
    gone.send(http_request("POST", "/infer", data_body(2)));
    await_queued(1);
    gone.reset();  // leaves with its request queued: that answer is dropped
  }
  const auto give_up = std::chrono::steady_clock::now() + kSafety;
  while (server_->counters().dropped < 1) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "the dropped answer was not counted";
    std::this_thread::yield();
  }
  control_->release(1);
  ASSERT_EQ(a.read().value_or(ClientResponse{}).status, 200);
  call(http_request("POST", "/infer", "{\"data\": [1]}"));  // 422
  call(http_request("GET", "/nowhere"));                    // 404
  ClientResponse m = call(http_request("GET", "/metrics"));
  auto has = [&](const std::string& line) {
    return m.body.find("\n" + line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has("batchscope_http_responses_total{code=\"200\"} 1")) << m.body;
  EXPECT_TRUE(has("batchscope_http_responses_total{code=\"404\"} 1"));
  EXPECT_TRUE(has("batchscope_http_responses_total{code=\"422\"} 1"));
  EXPECT_TRUE(has("batchscope_http_dropped_total 1"));
  // Read so far: a, gone, the 422, the 404 and this scrape.
  EXPECT_TRUE(has("batchscope_http_received_total 5"));
}

}  // namespace
}  // namespace batchscope::test

namespace batchscope::test {
namespace {

TEST(Exposure, OnlyLoopbackAddressesCountAsPrivate) {
  for (const char* h : {"127.0.0.1", "127.8.9.10", "::1"}) EXPECT_TRUE(is_loopback_host(h)) << h;
  for (const char* h : {"0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "localhost", ""}) {
    EXPECT_FALSE(is_loopback_host(h)) << h;
  }
}

TEST(Exposure, TheWarningSaysWhatAClientCanDoAndHowToLimitIt) {
  const std::string open = exposure_warning("0.0.0.0", ServiceAccess{});
  EXPECT_NE(open.find("run the model and retune it"), std::string::npos) << open;
  EXPECT_NE(open.find("--token"), std::string::npos);
  EXPECT_NE(open.find("--no-remote-config"), std::string::npos);
  const std::string guarded = exposure_warning("0.0.0.0", ServiceAccess{"s3cret-4711", false});
  EXPECT_NE(guarded.find("only /health"), std::string::npos) << guarded;
  EXPECT_NE(guarded.find("not retune it"), std::string::npos);
  EXPECT_EQ(guarded.find("--token"), std::string::npos);
  EXPECT_EQ(guarded.find("s3cret-4711"), std::string::npos);  // never the token itself
}

}  // namespace
}  // namespace batchscope::test

namespace batchscope::test {
namespace {

TEST_F(ServerTest, AClientThatResetsAfterConnectionCloseLeavesTheServerServing) {
  start();
  // Each answer ends its connection and the client resets at once: the
  // answer's write and the linger meet a connection that is already gone.
  for (int i = 0; i < 200; ++i) {
    TestClient c(port_);
    c.send(http_request("GET", "/health", "", "Connection: close\r\n"));
    c.reset();
  }
  EXPECT_EQ(call(http_request("GET", "/health")).status, 200);
}

TEST_F(ServerTest, AClientThatNeverReadsIsClosedAfterTheSendTimeout) {
  HttpServerOptions so = small_body();
  so.send_timeout_ms = 300;
  start(Options{.max_batch_size = 8, .max_wait_us = 0}, so);
  TestClient c(port_);
  // ~10 KiB answers, far more than the kernel's socket buffers hold, never
  // read. Sent from a thread: backpressure blocks the sender.
  std::string many;
  for (int i = 0; i < 20000; ++i) many += http_request("GET", "/metrics");
  std::thread sender([&] { c.send(many); });
  const auto give_up = std::chrono::steady_clock::now() + kSafety;
  while (server_->counters().dropped == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "a stalled reader was never cut off";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sender.join();  // the server closed the connection, so the send ends
  EXPECT_EQ(call(http_request("GET", "/health")).status, 200);  // others are served meanwhile
  const HttpCounters h = settled_counters();
  EXPECT_EQ(h.parsed, h.written + h.dropped);  // nothing left owed
}

TEST_F(ServerTest, AnAnswerThatClosesTheConnectionArrivesWholeHoweverSlowlyItIsRead) {
  HttpServerOptions so;
  so.linger_ms = 100;  // far shorter than the client takes to read
  const std::string big(8u << 20, 'b');
  HttpServer server(
      [&](HttpRequest&&, Responder r) {
        r.send(HttpResponse{200, "text/plain", big, {}});
      },
      so);
  auto port = server.start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  TestClient c(*port);
  c.send(http_request("GET", "/big", "", "Connection: close\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // a slow reader, not a check
  auto r = c.read(20000);
  ASSERT_TRUE(r) << "the answer was cut off";
  EXPECT_EQ(r->body.size(), big.size());
  server.stop(1000);
}

TEST_F(ServerTest, OneHundredContinueNeverOvertakesAnEarlierAnswer) {
  control_->hold = true;
  start(Options{.max_batch_size = 1, .max_wait_us = 0});
  TestClient c(port_);
  const std::string body = data_body(2);
  c.send(http_request("POST", "/infer", data_body(1)) +
         "POST /infer HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n");
  ASSERT_TRUE(control_->await_entered(1));  // the first is held in the model
  control_->release(1);
  auto first = c.read();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200) << "an interim 100 came before the first request's answer";
  control_->release(1);
  c.send(body);
  auto second = c.read();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200);
}

TEST_F(ServerTest, AfterStoppingEveryRequestReadIsAccountedFor) {
  start();
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<TestClient>(port_));
    std::string many;
    for (int k = 0; k < 50; ++k) many += http_request("GET", "/metrics");
    clients.back()->send(many);  // some read nothing back
  }
  server_->stop(500);
  const HttpCounters h = server_->counters();
  EXPECT_EQ(h.parsed, h.written + h.dropped);
  server_.reset();
}

TEST_F(ServerTest, TheTokenSchemeIsCaseInsensitiveAndOnlyHealthIsOpen) {
  start(Options{.max_batch_size = 8, .max_wait_us = 0}, small_body(),
        ServiceAccess{"s3cret", true});
  EXPECT_EQ(call(http_request("GET", "/v1/config", "", "Authorization: bearer s3cret\r\n")).status,
            200);
  EXPECT_EQ(call(http_request("GET", "/v1/config", "", "Authorization: BEARER s3cret\r\n")).status,
            200);
  ClientResponse probe = call(http_request("GET", "/v2/health/other"));
  EXPECT_EQ(probe.status, 401);  // not a 404 that names the model
  EXPECT_EQ(probe.body.find("toy"), std::string::npos);
  EXPECT_EQ(call(http_request("GET", "/v1/config", "", "Authorization: Bearer s3cret-and-more\r\n"))
                .status,
            401);
}

TEST_F(ServerTest, ClientTextEchoedInErrorsIsClipped) {
  start();
  const std::string long_name(3000, 'n');
  ClientResponse r = call(http_request("PUT", "/v1/config", "{\"" + long_name + "\": 1}"));
  EXPECT_EQ(r.status, 400);
  EXPECT_LT(r.body.size(), 600u) << r.body.size();
  ClientResponse route = call(http_request("GET", "/" + std::string(3000, 'r')));
  EXPECT_EQ(route.status, 404);
  EXPECT_LT(route.body.size(), 600u);
}

}  // namespace
}  // namespace batchscope::test

// SPDX-License-Identifier: GPL-3.0-or-later
// Streamed answers (Responder::begin_stream) over real sockets on
// 127.0.0.1: Server-Sent Events written as they are made, in request order
// with pipelined answers, cancelled when the client leaves, cut when never
// ended, drained or cut when stopping, bounded when the client does not
// read; and the streaming load client (HttpStreamClient) reading them.
// Producers are threads started by the handler; gates, not sleeps, decide
// what the test sees when.

#include "http/http_client.h"
#include "tests/http/stream_fixture.h"

namespace batchscope::test {
namespace {

TEST_F(StreamTest, EventsGoOutAsTheyAreMadeInOrderThenTheEnd) {
  start([this](HttpRequest&&, Responder r) {
    EXPECT_TRUE(r.begin_stream(200, "text/event-stream"));
    spawn([this, r] {
      r.stream(event(0));
      gate_.wait();
      for (int i = 1; i < 50; ++i) r.stream(event(i));
      r.stream("data: [DONE]\n\n");
      r.end_stream();
    });
  });
  SseClient c(port_);
  c.send(stream_request());
  // The first event arrives while the rest is not yet made: nothing waits
  // for the answer to be whole.
  ASSERT_TRUE(c.await_events(1)) << c.answer().error;
  EXPECT_FALSE(c.answer().done);
  gate_.open();
  ASSERT_TRUE(c.await_end()) << c.answer().error;
  EXPECT_EQ(c.answer().status, 200);
  ASSERT_EQ(c.answer().events.size(), 51u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(c.answer().events[i], data(i));
  EXPECT_EQ(c.answer().events.back(), "[DONE]");
  for (const char* h : {"Content-Type: text/event-stream\r\n", "Transfer-Encoding: chunked\r\n",
                        "Cache-Control: no-cache\r\n"}) {
    EXPECT_NE(c.raw().find(h), std::string::npos) << h;
  }
  EXPECT_EQ(c.raw().find("Content-Length"), std::string::npos);
  const HttpCounters h = settled();
  EXPECT_EQ(h.parsed, 1u);
  EXPECT_EQ(h.written, 1u);
  EXPECT_EQ(h.dropped, 0u);
  EXPECT_EQ(h.by_status, (std::vector<std::pair<int, uint64_t>>{{200, 1}}));
}

TEST_F(StreamTest, APipelinedRequestIsAnsweredAfterTheStreamBeforeIt) {
  std::atomic<bool> plain_answered{false};
  start([&, this](HttpRequest&& req, Responder r) {
    if (req.path() == "/plain") {
      r.send(HttpResponse{200, "text/plain", "plain", {}});
      plain_answered = true;
      return;
    }
    r.begin_stream(200, "text/event-stream");
    spawn([this, r] {
      r.stream(event(0));
      gate_.wait();
      for (int i = 1; i < 5; ++i) r.stream(event(i));
      r.end_stream();
    });
  });
  SseClient c(port_);
  c.send(stream_request() + http_request("GET", "/plain"));
  ASSERT_TRUE(c.await_events(1));
  ASSERT_TRUE(wait_until([&] { return plain_answered.load(); }));  // ready, held back
  gate_.open();
  // Read in sequence: an answer written inside the stream would break it.
  ASSERT_TRUE(c.await_end()) << c.answer().error;
  EXPECT_EQ(c.answer().events,
            (std::vector<std::string>{data(0), data(1), data(2), data(3), data(4)}));
  c.next_answer();
  ASSERT_TRUE(c.await_end()) << c.answer().error;
  EXPECT_EQ(c.answer().status, 200);
  EXPECT_EQ(c.answer().body, "plain");
  const HttpCounters h = settled();
  EXPECT_EQ(h.written, 2u);
  EXPECT_EQ(h.dropped, 0u);
}

TEST_F(StreamTest, AClientThatLeavesMidStreamCancelsItAndTheAnswerIsDropped) {
  start([this](HttpRequest&&, Responder r) {
    r.on_disconnect([this] { ++cancels_; });
    r.begin_stream(200, "text/event-stream");
    spawn([this, r] {
      const auto give_up = std::chrono::steady_clock::now() + kWait;
      for (int i = 0; !r.client_gone() && std::chrono::steady_clock::now() < give_up; ++i) {
        r.stream(event(i));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a token's time
      }
      saw_gone_ = r.client_gone();
    });
  });
  {
    SseClient c(port_);
    c.send(stream_request());
    ASSERT_TRUE(c.await_events(2));
    c.reset();
  }
  ASSERT_TRUE(wait_until([&] { return cancels_ == 1; })) << "the cancel hook never ran";
  ASSERT_TRUE(wait_until([&] { return saw_gone_.load(); })) << "the producer was never told";
  const HttpCounters h = settled();
  EXPECT_EQ(h.parsed, 1u);
  EXPECT_EQ(h.written, 0u);
  EXPECT_EQ(h.dropped, 1u);
}

TEST_F(StreamTest, AStreamNeverEndedClosesTheConnectionWithoutTheLastChunk) {
  start([this](HttpRequest&& req, Responder r) {
    if (req.path() == "/plain") return r.send(HttpResponse{200, "text/plain", "plain", {}});
    r.begin_stream(200, "text/event-stream");
    spawn([r] { r.stream(event(0)); });  // and forgets end_stream()
  });
  SseClient c(port_);
  c.send(stream_request() + http_request("GET", "/plain"));
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(c.answer().events, std::vector<std::string>{data(0)});
  EXPECT_FALSE(c.answer().done);
  EXPECT_NE(c.answer().error.find("before the response ended"), std::string::npos)
      << c.answer().error;
  EXPECT_EQ(c.raw().find("plain"), std::string::npos);  // cannot follow an unfinished answer
  const HttpCounters h = settled();
  EXPECT_EQ(h.parsed, 2u);
  EXPECT_EQ(h.written, 0u);
  EXPECT_EQ(h.dropped, 2u);
}

TEST_F(StreamTest, StoppingLetsALiveStreamFinishWithinTheDrainTime) {
  start([this](HttpRequest&&, Responder r) {
    r.begin_stream(200, "text/event-stream");
    spawn([this, r] {
      r.stream(event(0));
      gate_.wait();
      for (int i = 1; i < 5; ++i) r.stream(event(i));
      r.end_stream();
    });
  });
  SseClient c(port_);
  c.send(stream_request());
  ASSERT_TRUE(c.await_events(1));
  std::thread stopper([&] { server_->stop(20'000); });
  // Refused connections: the server has stopped accepting and is draining.
  EXPECT_TRUE(wait_until([&] { return !TestClient(port_).connected(); }));
  gate_.open();
  EXPECT_TRUE(c.await_end()) << c.answer().error;
  EXPECT_EQ(c.answer().events.size(), 5u);
  EXPECT_TRUE(c.closed_by_peer());  // after its last answer
  stopper.join();
  const HttpCounters h = server_->counters();
  EXPECT_EQ(h.written, 1u);
  EXPECT_EQ(h.dropped, 0u);
}

TEST_F(StreamTest, StoppingCutsAStreamThatOutlivesTheDrainTime) {
  start([this](HttpRequest&&, Responder r) {
    r.on_disconnect([this] { ++cancels_; });
    r.begin_stream(200, "text/event-stream");
    spawn([this, r] {
      r.stream(event(0));
      gate_.wait();  // opened after the test
      r.stream(event(1));
      r.end_stream();
    });
  });
  SseClient c(port_);
  c.send(stream_request());
  ASSERT_TRUE(c.await_events(1));
  server_->stop(100);
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(c.answer().events.size(), 1u);
  EXPECT_FALSE(c.answer().done);
  EXPECT_EQ(cancels_.load(), 1);
  const HttpCounters h = server_->counters();
  EXPECT_EQ(h.parsed, 1u);
  EXPECT_EQ(h.dropped, 1u);
}

// A producer that streams big events until its client is gone.
void flood(const Responder& r, std::atomic<bool>& saw_gone, size_t max_bytes) {
  const std::string big = "data: " + std::string(64 * 1024, 'x') + "\n\n";
  const auto give_up = std::chrono::steady_clock::now() + kWait;
  for (size_t sent = 0; !r.client_gone() && std::chrono::steady_clock::now() < give_up;) {
    if (sent < max_bytes) {
      r.stream(big);
      sent += big.size();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  saw_gone = r.client_gone();
}

TEST_F(StreamTest, AStreamItsClientDoesNotReadIsCutAtTheUnwrittenLimit) {
  HttpServerOptions so;
  so.max_unwritten_bytes = 1u << 20;
  so.send_timeout_ms = 600'000;  // only the limit can cut it
  start(
      [this](HttpRequest&&, Responder r) {
        r.on_disconnect([this] { ++cancels_; });
        r.begin_stream(200, "text/event-stream");
        spawn([this, r] { flood(r, saw_gone_, size_t{1} << 30); });
      },
      so);
  SseClient c(port_);
  c.send(stream_request());  // and never reads
  ASSERT_TRUE(wait_until([&] { return saw_gone_.load(); })) << "an unread stream was never cut";
  // The producer may see the client gone before the I/O thread has run the
  // disconnect callback.
  EXPECT_TRUE(wait_until([&] { return cancels_.load() >= 1; }));
  EXPECT_EQ(cancels_.load(), 1);
  const HttpCounters h = settled();
  EXPECT_EQ(h.parsed, 1u);
  EXPECT_EQ(h.dropped, 1u);
}

TEST_F(StreamTest, AStreamItsClientDoesNotReadIsCutAfterTheSendTimeout) {
  HttpServerOptions so;
  so.max_unwritten_bytes = 64u << 20;  // more than is made: only the timeout can cut it
  so.send_timeout_ms = 200;
  start(
      [this](HttpRequest&&, Responder r) {
        r.on_disconnect([this] { ++cancels_; });
        r.begin_stream(200, "text/event-stream");
        // Far more than the kernel's socket buffers hold, then quiet.
        spawn([this, r] { flood(r, saw_gone_, size_t{24} << 20); });
      },
      so);
  SseClient c(port_);
  c.send(stream_request());  // and never reads
  ASSERT_TRUE(wait_until([&] { return saw_gone_.load(); })) << "a stalled reader was never cut";
  // The producer may see the client gone before the I/O thread has run the
  // disconnect callback.
  EXPECT_TRUE(wait_until([&] { return cancels_.load() >= 1; }));
  EXPECT_EQ(cancels_.load(), 1);
  const HttpCounters h = settled();
  EXPECT_EQ(h.dropped, 1u);
}

TEST_F(StreamTest, AStreamOnAConnectionCloseRequestEndsTheConnection) {
  start([](HttpRequest&&, Responder r) {
    // All of it from the handler, on the I/O thread.
    r.begin_stream(200, "text/event-stream", {{"X-Request-Id", "7"}});
    r.stream(event(0));
    r.stream("data: [DONE]\n\n");
    r.end_stream();
  });
  SseClient c(port_);
  c.send(stream_request("Connection: close\r\n"));
  ASSERT_TRUE(c.await_end()) << c.answer().error;
  EXPECT_EQ(c.answer().events, (std::vector<std::string>{data(0), "[DONE]"}));
  EXPECT_NE(c.raw().find("Connection: close\r\n"), std::string::npos);
  EXPECT_NE(c.raw().find("X-Request-Id: 7\r\n"), std::string::npos);
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(settled().written, 1u);
}

TEST_F(StreamTest, AnAnswerIsEitherSentOrStreamedOnce) {
  start([](HttpRequest&& req, Responder r) {
    if (req.path() == "/sent") {
      r.send(HttpResponse{200, "text/plain", "sent", {}});
      EXPECT_FALSE(r.begin_stream(200, "text/event-stream"));
      r.stream("data: ignored\n\n");
      r.end_stream();
      return;
    }
    r.stream("data: too early\n\n");
    EXPECT_TRUE(r.begin_stream(200, "text/event-stream"));
    EXPECT_FALSE(r.begin_stream(500, "text/event-stream"));
    r.send(HttpResponse{500, "text/plain", "ignored", {}});
    r.stream("");
    r.stream("data: a\n\n");
    r.end_stream();
    r.stream("data: too late\n\n");
    r.end_stream();
  });
  SseClient c(port_);
  c.send(http_request("GET", "/sent") + stream_request() + http_request("GET", "/sent"));
  ASSERT_TRUE(c.await_end());
  EXPECT_EQ(c.answer().body, "sent");
  c.next_answer();
  ASSERT_TRUE(c.await_end()) << c.answer().error;
  EXPECT_EQ(c.answer().events, std::vector<std::string>{"a"});
  c.next_answer();
  ASSERT_TRUE(c.await_end());
  EXPECT_EQ(c.answer().body, "sent");
  const HttpCounters h = settled();
  EXPECT_EQ(h.written, 3u);
  EXPECT_EQ(h.errors, 0u);
}

TEST_F(StreamTest, AHeadRequestsStreamSendsItsHeadAlone) {
  start([](HttpRequest&& req, Responder r) {
    if (req.path() == "/plain") return r.send(HttpResponse{200, "text/plain", "plain", {}});
    r.begin_stream(200, "text/event-stream");
    r.stream(event(0));
    r.end_stream();
  });
  SseClient c(port_);
  c.send(http_request("HEAD", "/v1/completions") + http_request("GET", "/plain"));
  ASSERT_TRUE(wait_until([&] { return settled().written == 2; }));
  c.await_events(1);  // reads what came: the head, then the next answer's
  const size_t head_end = c.raw().find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  EXPECT_NE(c.raw().substr(0, head_end).find("Transfer-Encoding: chunked"), std::string::npos);
  EXPECT_EQ(c.raw().compare(head_end + 4, 9, "HTTP/1.1 "), 0) << c.raw();
}

TEST_F(StreamTest, NeitherTheIdleTimeoutNorTheReadDeadlinesCutALiveStream) {
  HttpServerOptions so;
  so.idle_timeout_ms = 150;
  so.header_timeout_ms = 100;
  start(
      [this](HttpRequest&&, Responder r) {
        r.begin_stream(200, "text/event-stream");
        spawn([this, r] {
          r.stream(event(0));
          gate_.wait();
          r.stream(event(1));
          r.end_stream();
        });
      },
      so);
  SseClient c(port_);
  // The stream, and the start of a next request that does not go on.
  c.send(stream_request() + "GET /plain HTTP/1.1\r\nHo");
  ASSERT_TRUE(c.await_events(1));
  // Two idle connections opened after it, closed one after the other by
  // the idle timeout: the stream's connection has outlived its own idle
  // timer and its header deadline meanwhile.
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(TestClient(port_).closed_by_peer());
  EXPECT_EQ(server_->counters().parsed, 1u) << "a 408 was answered during the stream";
  gate_.open();
  ASSERT_TRUE(c.await_end()) << c.answer().error;
  EXPECT_EQ(c.answer().events.size(), 2u);
}

TEST_F(StreamTest, TheStreamClientTimestampsEachEventAsItArrives) {
  start([this](HttpRequest&&, Responder r) {
    r.begin_stream(200, "text/event-stream");
    spawn([this, r] {
      r.stream(event(0));
      gate_.wait();
      for (int i = 1; i < 10; ++i) r.stream(event(i));
      r.stream("data: [DONE]\n\n");
      r.end_stream();
    });
  });
  HttpStreamClient client("127.0.0.1", port_, 1);
  ASSERT_TRUE(client.start().ok());
  Collected got;
  client.send(json_post(Url{"127.0.0.1", port_, "/v1/completions", ""}, R"({"stream": true})"),
              got.on_event(), got.on_done());
  ASSERT_TRUE(got.await([&] { return !got.events.empty(); }));
  gate_.open();  // the rest is made after the first event was received
  ASSERT_TRUE(got.await_done());
  client.stop();
  EXPECT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.dones, 1);
  ASSERT_EQ(got.events.size(), 11u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(got.events[i].first, data(i));
  EXPECT_EQ(got.events.back().first, "[DONE]");
  for (size_t i = 1; i < got.events.size(); ++i) {
    EXPECT_LE(got.events[i - 1].second, got.events[i].second) << i;
  }
  EXPECT_LT(got.events[0].second, got.events[1].second);
}

TEST_F(StreamTest, TheStreamClientRunsManyStreamsOverFewConnections) {
  start([this](HttpRequest&& req, Responder r) {
    r.begin_stream(200, "text/event-stream");
    spawn([r, n = req.body] {
      for (int k = 0; k < 5; ++k) r.stream("data: " + n + "." + std::to_string(k) + "\n\n");
      r.end_stream();
    });
  });
  HttpStreamClient client("127.0.0.1", port_, 3);
  ASSERT_TRUE(client.start().ok());
  constexpr int kRequests = 12;
  std::vector<std::unique_ptr<Collected>> got;
  const Url url{"127.0.0.1", port_, "/v1/completions", ""};
  for (int i = 0; i < kRequests; ++i) {
    got.push_back(std::make_unique<Collected>());
    client.send(json_post(url, std::to_string(i)), got.back()->on_event(), got.back()->on_done());
  }
  for (int i = 0; i < kRequests; ++i) {
    Collected& g = *got[i];
    ASSERT_TRUE(g.await_done()) << i;
    EXPECT_EQ(g.status, 200) << g.body;
    ASSERT_EQ(g.events.size(), 5u) << i;
    for (int k = 0; k < 5; ++k) {
      EXPECT_EQ(g.events[k].first, std::to_string(i) + "." + std::to_string(k));
    }
  }
  client.stop();
  EXPECT_EQ(settled().written, uint64_t{kRequests});
}

TEST_F(StreamTest, TheStreamClientReportsErrorAnswersCutStreamsAndRefusals) {
  const std::string busy = R"({"error":"the queue is full"})";
  start([&, this](HttpRequest&& req, Responder r) {
    if (req.path() == "/busy") {
      return r.send(HttpResponse{429, "application/json", busy, {{"Retry-After", "1"}}});
    }
    r.begin_stream(200, "text/event-stream");
    spawn([r] { r.stream(event(0)); });  // never ended
  });
  HttpStreamClient client("127.0.0.1", port_, 1);
  ASSERT_TRUE(client.start().ok());
  Collected error_answer;
  client.send(json_post(Url{"127.0.0.1", port_, "/busy", ""}, "{}"), error_answer.on_event(),
              error_answer.on_done());
  ASSERT_TRUE(error_answer.await_done());
  EXPECT_EQ(error_answer.status, 429);
  EXPECT_EQ(error_answer.body, busy);
  EXPECT_TRUE(error_answer.events.empty());

  Collected cut;
  client.send(json_post(Url{"127.0.0.1", port_, "/cut", ""}, "{}"), cut.on_event(), cut.on_done());
  ASSERT_TRUE(cut.await_done());
  EXPECT_EQ(cut.status, 0);
  EXPECT_NE(cut.body.find("before the response ended"), std::string::npos) << cut.body;
  ASSERT_EQ(cut.events.size(), 1u);
  EXPECT_EQ(cut.events[0].first, data(0));

  server_->stop(1000);
  HttpStreamClient refused("127.0.0.1", port_, 1);
  const Status s = refused.start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Connection refused"), std::string::npos) << s.message();
  Collected later;  // the first client's connection went with the cut stream
  client.send(json_post(Url{"127.0.0.1", port_, "/busy", ""}, "{}"), later.on_event(),
              later.on_done());
  ASSERT_TRUE(later.await_done());
  EXPECT_EQ(later.status, 0);
  EXPECT_NE(later.body.find("Connection refused"), std::string::npos) << later.body;
}

}  // namespace
}  // namespace batchscope::test

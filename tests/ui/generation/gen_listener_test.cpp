// SPDX-License-Identifier: GPL-3.0-or-later
// The generation window's HTTP listener over a real GenEngine and the
// weightless SyntheticLm, with real sockets on 127.0.0.1: completions whole
// and streamed, their requests in the view's plots, step inspector and
// /metrics (the view's totals), a malformed body refused while serving goes
// on, stopping (the port refuses), the token, the warning for a host beyond
// loopback, and a window closed while a stream is under way.
#include <gtest/gtest.h>

#include <QApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "generation/synthetic_lm.h"
#include "tests/http/stream_fixture.h"
#include "tests/http/test_client.h"
#include "tests/ui/generation/gen_test_support.h"
#include "ui/generation/gen_listener.h"
#include "ui/generation/gen_main_window.h"
#include "ui/generation/gen_plots.h"
#include "ui/generation/gen_step_inspector.h"
#include "ui/generation/gen_view.h"

namespace batchscope {
namespace {

using test::http_request;

std::unique_ptr<GenEngine> make_engine(double step_us = 0, double token_us = 0) {
  auto e = test::make_gen_engine(step_us, token_us);
  EXPECT_TRUE(e);
  return e;
}

using test::pump_until;

// Runs a blocking client on a thread of its own while the event loop turns
// here (the view keeps refreshing meanwhile); its result.
template <class F>
auto off_gui(F client) {
  auto result = std::async(std::launch::async, client);
  EXPECT_TRUE(pump_until([&] {
    return result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  })) << "the client got no answer";
  return result.get();
}

test::ClientResponse request(uint16_t port, const std::string& method, const std::string& path,
                             const std::string& body = "", const std::string& extra = "") {
  return off_gui([=] {
    test::TestClient c(port);
    EXPECT_TRUE(c.connected());
    EXPECT_TRUE(c.send(http_request(method, path, body, extra)));
    return c.read().value_or(test::ClientResponse{});
  });
}

QJsonObject json(const std::string& body) {
  return QJsonDocument::fromJson(QByteArray::fromStdString(body)).object();
}

using test::greedy_text;

// The sum of a counter's samples over its labels in a Prometheus text body.
uint64_t prometheus_sum(const std::string& text, const std::string& name) {
  uint64_t sum = 0;
  size_t pos = 0;
  while ((pos = text.find("\n" + name, pos)) != std::string::npos) {
    const size_t end = text.find('\n', pos + 1);
    const std::string line = text.substr(pos + 1, end - pos - 1);
    const char after = line.size() > name.size() ? line[name.size()] : ' ';
    if (after == '{' || after == ' ') sum += std::stoull(line.substr(line.rfind(' ') + 1));
    pos = end;
  }
  return sum;
}

class GenListenerTest : public ::testing::Test {
 protected:
  void open(GenListenerConfig listener, double step_us = 500) {
    GenViewConfig cfg;
    cfg.listener = std::move(listener);
    window_ = std::make_unique<GenMainWindow>(make_engine(step_us), cfg);
    window_->resize(1400, 900);
    window_->show();
  }
  void open_listening(double step_us = 500) {
    GenListenerConfig l;
    l.listen_port = 0;
    l.version = "test";
    open(l, step_us);
    ASSERT_TRUE(listener()->running()) << listener()->text().toStdString();
    port_ = listener()->port();
    ASSERT_NE(port_, 0);
  }
  GenView* view() const { return window_->view(); }
  GenListener* listener() const { return view()->listener(); }

  std::unique_ptr<GenMainWindow> window_;
  uint16_t port_ = 0;
};

TEST_F(GenListenerTest, ServesACompletionThatShowsInTheViewAndItsMetrics) {
  open_listening();
  EXPECT_TRUE(listener()->text().contains(QString("http://127.0.0.1:%1").arg(port_)))
      << listener()->text().toStdString();
  EXPECT_TRUE(listener()->text().contains("POST /v1/completions"));
  EXPECT_TRUE(listener()->text().contains("/v2/models/synthetic_lm/generate[_stream]"));
  EXPECT_EQ(listener()->button()->text(), "Stop listener");

  const std::string prompt = "Once upon a time";
  const auto r =
      request(port_, "POST", "/v1/completions",
              "{\"prompt\": \"" + prompt + "\", \"max_tokens\": 24, \"temperature\": 0}");
  ASSERT_EQ(r.status, 200) << r.body;
  const QJsonObject body = json(r.body);
  const QJsonArray choices = body["choices"].toArray();
  ASSERT_EQ(choices.size(), 1) << r.body;
  const std::string text = choices[0].toObject()["text"].toString().toStdString();
  EXPECT_EQ(text, greedy_text(prompt, 24));
  const QJsonObject usage = body["usage"].toObject();
  EXPECT_EQ(usage["prompt_tokens"].toInt(), static_cast<int>(prompt.size()));
  EXPECT_EQ(usage["completion_tokens"].toInt(), static_cast<int>(text.size()));

  // The view drained the request's records (the service did not): its
  // totals, the step inspector and the plots show it.
  ASSERT_TRUE(pump_until([&] { return view()->metrics().totals().finished >= 1; }));
  EXPECT_GT(view()->inspector()->model()->rowCount(), 0);

  // /metrics reports the view's totals.
  ASSERT_TRUE(pump_until([&] { return view()->metrics().totals().finished == 1; }));
  const auto m = request(port_, "GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(prometheus_sum(m.body, "batchscope_generation_requests_total"), 1u) << m.body;
  EXPECT_NE(m.body.find("batchscope_time_to_first_token_seconds_count 1"), std::string::npos)
      << m.body;

  // The plots show a window once a later one has begun: more requests, until they do.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  uint64_t sent = 1;
  while (view()->plots()->ttft_points() == 0 && std::chrono::steady_clock::now() < give_up) {
    ASSERT_EQ(request(port_, "POST", "/v1/completions", "{\"prompt\": \"more\", \"max_tokens\": 8}")
                  .status,
              200);
    ++sent;
    view()->refresh();
  }
  EXPECT_GT(view()->plots()->ttft_points(), 0) << "the HTTP requests did not reach the plots";
  // An answer can reach its client just before the engine keeps its record:
  // wait until the view has folded every one, then /metrics agrees.
  ASSERT_TRUE(pump_until([&] { return view()->metrics().totals().finished == sent; }));
  const auto later = request(port_, "GET", "/metrics");
  EXPECT_EQ(prometheus_sum(later.body, "batchscope_generation_requests_total"), sent);
}

TEST_F(GenListenerTest, StreamsEventsThenDone) {
  open_listening();
  const std::string prompt = "The cache";
  const auto answer = off_gui([&] {
    test::SseClient c(port_);
    EXPECT_TRUE(c.send(http_request("POST", "/v1/completions",
                                    "{\"prompt\": \"" + prompt +
                                        "\", \"max_tokens\": 12, \"stream\": true, "
                                        "\"stream_options\": {\"include_usage\": true}}")));
    EXPECT_TRUE(c.await_end());
    return c.answer();
  });
  ASSERT_EQ(answer.status, 200) << answer.body << answer.error;
  ASSERT_GE(answer.events.size(), 3u);
  EXPECT_EQ(answer.events.back(), "[DONE]");
  std::string text;
  bool usage = false;
  for (size_t i = 0; i + 1 < answer.events.size(); ++i) {
    const QJsonObject chunk = json(answer.events[i]);
    const QJsonArray choices = chunk["choices"].toArray();
    if (!choices.isEmpty()) text += choices[0].toObject()["text"].toString().toStdString();
    if (chunk.contains("usage")) usage = true;
  }
  EXPECT_EQ(text, greedy_text(prompt, 12));
  EXPECT_TRUE(usage);
  ASSERT_TRUE(pump_until([&] { return view()->metrics().totals().finished >= 1; }));
}

TEST_F(GenListenerTest, AMalformedBodyIsRefusedAndServingGoesOn) {
  open_listening(0);
  const auto bad = request(port_, "POST", "/v1/completions", "{\"prompt\": \"hi\", ");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("not valid JSON"), std::string::npos) << bad.body;
  const auto wrong =
      request(port_, "POST", "/v1/completions", "{\"prompt\": \"hi\", \"max_tokens\": -3}");
  EXPECT_EQ(wrong.status, 422);
  EXPECT_NE(wrong.body.find("max_tokens"), std::string::npos) << wrong.body;
  const auto good =
      request(port_, "POST", "/v1/completions", "{\"prompt\": \"hi\", \"max_tokens\": 4}");
  EXPECT_EQ(good.status, 200) << good.body;
  EXPECT_TRUE(listener()->running());
  ASSERT_TRUE(pump_until([&] { return listener()->text().contains("3 answered, 2 errors"); }))
      << listener()->text().toStdString();
}

TEST_F(GenListenerTest, StoppedTheListenerRefusesConnectionsAndStartsAgain) {
  open_listening(0);
  ASSERT_EQ(
      request(port_, "POST", "/v1/completions", "{\"prompt\": \"a\", \"max_tokens\": 3}").status,
      200);
  listener()->button()->click();  // stop
  EXPECT_FALSE(listener()->running());
  EXPECT_EQ(listener()->button()->text(), "Start listener");
  EXPECT_EQ(listener()->text(), "Off.");
  EXPECT_FALSE(test::TestClient(port_).connected()) << "the port still accepts";

  listener()->button()->click();  // the same host and port again
  ASSERT_TRUE(listener()->running()) << listener()->text().toStdString();
  EXPECT_EQ(listener()->port(), port_);
  EXPECT_EQ(
      request(port_, "POST", "/v1/completions", "{\"prompt\": \"b\", \"max_tokens\": 3}").status,
      200);
  // Both services stay until the engine stops.
  EXPECT_EQ(listener()->take_services().size(), 2u);
  EXPECT_FALSE(listener()->running());
}

TEST_F(GenListenerTest, TheTokenGuardsEveryRouteButHealth) {
  GenListenerConfig l;
  l.listen_port = 0;
  l.access.token = "t0ken";
  l.access.remote_config = false;
  open(l, 0);
  ASSERT_TRUE(listener()->running());
  const uint16_t port = listener()->port();
  const std::string body = "{\"prompt\": \"hi\", \"max_tokens\": 2}";
  EXPECT_EQ(request(port, "POST", "/v1/completions", body).status, 401);
  EXPECT_EQ(request(port, "GET", "/health").status, 200);
  EXPECT_EQ(
      request(port, "POST", "/v1/completions", body, "Authorization: Bearer t0ken\r\n").status,
      200);
  EXPECT_EQ(
      request(port, "PUT", "/v1/config", "{\"max_num_seqs\": 8}", "Authorization: Bearer t0ken\r\n")
          .status,
      403);
  EXPECT_TRUE(listener()->text().contains("Bearer")) << listener()->text().toStdString();
  EXPECT_TRUE(listener()->text().contains("GET /v1/config"));
  EXPECT_FALSE(listener()->text().contains("PUT"));
}

TEST_F(GenListenerTest, AHostBeyondLoopbackIsWarnedAbout) {
  GenListenerConfig l;
  l.host = "0.0.0.0";
  l.listen_port = 0;
  open(l, 0);
  ASSERT_TRUE(listener()->running()) << listener()->text().toStdString();
  EXPECT_TRUE(listener()->text().contains("http://0.0.0.0:"));
  EXPECT_TRUE(listener()->text().contains("other machines can reach"))
      << listener()->text().toStdString();
}

TEST_F(GenListenerTest, ABadPortIsExplainedInTheBox) {
  open_listening(0);
  GenViewConfig cfg;
  cfg.listener.listen_port = port_;  // taken by the first window
  auto second = std::make_unique<GenMainWindow>(make_engine(0), cfg);
  EXPECT_FALSE(second->view()->listener()->running());
  EXPECT_NE(second->view()->listener()->text(), "Off.");
  EXPECT_EQ(second->view()->listener()->button()->text(), "Start listener");
}

TEST_F(GenListenerTest, ClosingTheWindowWhileAStreamRunsIsSafe) {
  // About 3 ms a token, 1000 tokens: the stream outlasts the listener's drain,
  // so the engine still holds it when the listener has gone, and ends it
  // through the stopped service.
  open_listening(3000);
  test::SseClient c(port_);
  ASSERT_TRUE(c.send(http_request("POST", "/v1/completions",
                                  "{\"prompt\": \"x\", \"max_tokens\": 1000, \"stream\": true, "
                                  "\"ignore_eos\": true}")));
  ASSERT_TRUE(c.await_events(3));
  window_.reset();  // listener, view, engine, then the services
  EXPECT_FALSE(c.await_end()) << "the stream was not cut";
  EXPECT_FALSE(test::TestClient(port_).connected());
}

}  // namespace
}  // namespace batchscope

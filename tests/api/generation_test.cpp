// SPDX-License-Identifier: GPL-3.0-or-later
// The generation routes over real sockets: OpenAI completions whole and
// streamed (read by the streaming load client), Triton's generate, bad
// requests, a full queue, a deadline and a client that leaves mid-stream.
#include "tests/api/generation_fixture.h"

namespace batchscope {
namespace {

using test::GenerationTest;
using test::http_request;
using test::kSafety;
using test::object;
using test::TestClient;

TEST_F(GenerationTest, ACompletionIsTheModelsTextWithItsUsage) {
  start();
  auto r =
      post("/v1/completions",
           R"({"model":"synthetic_lm","prompt":"And God said","max_tokens":12,"temperature":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  const QJsonObject o = object(r.body);
  const QJsonObject choice = o["choices"].toArray()[0].toObject();
  EXPECT_EQ(choice["text"].toString().toStdString(), expected("And God said", 12));
  EXPECT_EQ(choice["finish_reason"].toString(), "length");
  EXPECT_EQ(o["object"].toString(), "text_completion");
  EXPECT_EQ(o["usage"].toObject()["prompt_tokens"].toInt(), 12);
  EXPECT_EQ(o["usage"].toObject()["completion_tokens"].toInt(), 12);
  EXPECT_EQ(o["usage"].toObject()["total_tokens"].toInt(), 24);
}

TEST_F(GenerationTest, AStreamedCompletionArrivesTokenByTokenThenDone) {
  start();
  auto [events, status] =
      stream("/v1/completions", R"({"prompt":"In the beginning","max_tokens":9,"temperature":0,)"
                                R"("stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(status, 200);
  ASSERT_EQ(events.size(), 9u + 3u);  // nine tokens, the finish, the usage, [DONE]
  std::string text;
  for (size_t i = 0; i < 9; ++i) {
    const QJsonObject c = object(events[i])["choices"].toArray()[0].toObject();
    EXPECT_TRUE(c["finish_reason"].isNull());
    text += c["text"].toString().toStdString();
  }
  EXPECT_EQ(text, expected("In the beginning", 9));
  EXPECT_EQ(object(events[9])["choices"].toArray()[0].toObject()["finish_reason"].toString(),
            "length");
  EXPECT_EQ(object(events[10])["usage"].toObject()["completion_tokens"].toInt(), 9);
  EXPECT_EQ(events[11], "[DONE]");
}

TEST_F(GenerationTest, TritonsGenerateWholeAndStreamed) {
  start();
  auto r = post(
      "/v2/models/synthetic_lm/generate",
      R"({"id":"q1","text_input":"Let there be","parameters":{"max_tokens":6,"temperature":0}})");
  ASSERT_EQ(r.status, 200) << r.body;
  const QJsonObject o = object(r.body);
  EXPECT_EQ(o["id"].toString(), "q1");
  EXPECT_EQ(o["model_name"].toString(), "synthetic_lm");
  EXPECT_EQ(o["text_output"].toString().toStdString(), expected("Let there be", 6));
  auto [events, status] = stream("/v2/models/synthetic_lm/versions/1/generate_stream",
                                 R"({"text_input":"Let there be","max_tokens":4,"temperature":0})");
  ASSERT_EQ(status, 200);
  ASSERT_EQ(events.size(), 5u);
  std::string text;
  for (const std::string& e : events) text += object(e)["text_output"].toString().toStdString();
  EXPECT_EQ(text, expected("Let there be", 4));
  EXPECT_EQ(object(events[4])["finish_reason"].toString(), "length");
}

TEST_F(GenerationTest, BadRequestsAreRefusedNamingWhatIsWrong) {
  start();
  struct Case {
    std::string path, body;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/v1/completions", "{not json", 400, "not valid JSON"},
      {"/v1/completions", R"({"max_tokens":4})", 422, "prompt is missing"},
      {"/v1/completions", R"({"prompt":"a","max_tokens":"many"})", 422,
       "max_tokens must be a whole number from 1 to 1000000, got 'many'"},
      {"/v1/completions", R"({"prompt":"a","temperature":7})", 422,
       "temperature must be a number from 0 to 2, got 7"},
      {"/v1/completions", R"({"prompt":[65,999]})", 422, "prompt[1] must be"},
      {"/v1/completions", R"({"prompt":"a","stop":["x","y","z","w","v"]})", 422, "at most 4"},
      {"/v1/completions", R"({"prompt":"a","n":2})", 422, "n = 2 is not supported"},
      {"/v1/completions", R"({"prompt":"a","bogus":1})", 422, "unknown field 'bogus'"},
      {"/v1/completions", R"({"prompt":"abc","max_tokens":300})", 422,
       "the model's context is 256 tokens, but 303 were asked for"},
      {"/v1/completions", R"({"model":"gpt-4","prompt":"a"})", 404, "model 'gpt-4' is not served"},
      {"/v2/models/other/generate", R"({"text_input":"a"})", 404, "unknown model 'other'"},
      {"/v2/models/synthetic_lm/generate", R"({"text_input":5})", 422,
       "text_input must be a string, got 5"},
  };
  for (const Case& c : cases) {
    auto r = post(c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.body << " -> " << r.body;
    EXPECT_NE(r.body.find(c.message), std::string::npos) << c.body << " -> " << r.body;
  }
  // And the server goes on serving.
  EXPECT_EQ(post("/v1/completions", R"({"prompt":"ok","max_tokens":2})").status, 200);
}

TEST_F(GenerationTest, AFullQueueAnswers429WithRetryAfter) {
  // The first request counts as waiting until the step that admitted it
  // ends (it is held in that step here), the second waits: the third is refused.
  Options o;
  o.queue_capacity = 2;
  start(o, nullptr, /*gated=*/true);
  TestClient first(port_);
  ASSERT_TRUE(
      first.send(http_request("POST", "/v1/completions", R"({"prompt":"a","max_tokens":2})")));
  ASSERT_TRUE(gate_.await_holding());
  TestClient second(port_);
  ASSERT_TRUE(
      second.send(http_request("POST", "/v1/completions", R"({"prompt":"b","max_tokens":2})")));
  auto full = post("/v1/completions", R"({"prompt":"c","max_tokens":2})");
  EXPECT_EQ(full.status, 429);
  EXPECT_EQ(full.headers["retry-after"], "1");
  gate_.open();
  EXPECT_EQ(first.read()->status, 200);
  EXPECT_EQ(second.read()->status, 200);
}

TEST_F(GenerationTest, ARequestPastItsDeadlineIsAnswered504) {
  auto clock = std::make_shared<ManualClock>();
  Options o;
  o.scheduling = Scheduling::kStatic;
  o.max_wait_us = 10'000'000;
  o.request_timeout_ms = 250;
  start(o, clock);
  const TimePoint t = clock->now();
  TestClient c(port_);
  ASSERT_TRUE(
      c.send(http_request("POST", "/v1/completions", R"({"prompt":"late","max_tokens":3})")));
  ASSERT_TRUE(clock->await_parked(t + milliseconds(250)));
  clock->advance(milliseconds(250));
  auto r = c.read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 504);
  EXPECT_NE(r->body.find("request_timeout_ms = 250"), std::string::npos) << r->body;
}

TEST_F(GenerationTest, AClientThatLeavesMidStreamCancelsItsSequence) {
  expect_leaving_cancels("/v1/completions",
                         R"({"prompt":"leaving","max_tokens":200,"stream":true})");
}

}  // namespace
}  // namespace batchscope

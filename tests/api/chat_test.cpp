// SPDX-License-Identifier: GPL-3.0-or-later
// OpenAI chat completions over real sockets: whole and streamed (read by the
// streaming load client), the chat template, OpenAI's error object on every
// /v1/* route (and Triton's routes keeping theirs), and a chat stream that
// its client leaves, which cancels its sequence.
#include "api/chat_json.h"
#include "http/stream_event.h"
#include "tests/api/generation_fixture.h"

namespace batchscope {
namespace {

using test::GenerationTest;
using test::http_request;
using test::object;
using test::TestClient;

const std::string kChat =
    R"("messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Who begat Enos?"}])";
const std::string kPrompt = "System: Be brief.\nUser: Who begat Enos?\nAssistant: ";

TEST_F(GenerationTest, AChatCompletionIsTheModelsReplyToTheTemplatedMessages) {
  start();
  auto r = post("/v1/chat/completions", "{" + kChat + R"(,"max_tokens":10,"temperature":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  const QJsonObject o = object(r.body);
  EXPECT_EQ(o["object"].toString(), "chat.completion");
  EXPECT_TRUE(o["id"].toString().startsWith("chatcmpl-"));
  const QJsonObject choice = o["choices"].toArray()[0].toObject();
  EXPECT_EQ(choice["message"].toObject()["role"].toString(), "assistant");
  EXPECT_EQ(choice["message"].toObject()["content"].toString().toStdString(),
            expected(kPrompt, 10));
  EXPECT_EQ(choice["finish_reason"].toString(), "length");
  EXPECT_EQ(o["usage"].toObject()["prompt_tokens"].toInt(), static_cast<int>(kPrompt.size()));
  EXPECT_EQ(o["usage"].toObject()["completion_tokens"].toInt(), 10);
  // max_completion_tokens is the same limit; text parts join.
  r = post("/v1/chat/completions",
           R"({"messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":)"
           R"([{"type":"text","text":"Who begat "},{"type":"text","text":"Enos?"}]}],)"
           R"("max_completion_tokens":10,"temperature":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(object(r.body)["choices"]
                .toArray()[0]
                .toObject()["message"]
                .toObject()["content"]
                .toString()
                .toStdString(),
            expected(kPrompt, 10));
}

TEST_F(GenerationTest, WithoutMaxTokensAChatFillsWhatTheContextLeaves) {
  start();  // the synthetic model's context: 256 tokens
  auto r = post("/v1/chat/completions", "{" + kChat + R"(,"temperature":0,"ignore_eos":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  const QJsonObject usage = object(r.body)["usage"].toObject();
  EXPECT_EQ(usage["completion_tokens"].toInt(), 256 - static_cast<int>(kPrompt.size()));
  EXPECT_EQ(usage["total_tokens"].toInt(), 256);
  // Completions keep OpenAI's default of 16.
  r = post("/v1/completions", R"({"prompt":"abc","ignore_eos":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(object(r.body)["usage"].toObject()["completion_tokens"].toInt(), 16);
}

TEST_F(GenerationTest, WhatAnSdkSendsBackIsRead) {
  start();
  // null for "not given", and an answer's message put back in the conversation.
  auto r =
      post("/v1/chat/completions",
           R"({"model":null,"temperature":null,"top_p":null,"stream":null,"max_tokens":null,)"
           R"("max_completion_tokens":4,"messages":[{"role":"user","content":"hi"},)"
           R"({"role":"assistant","content":null,"refusal":null,"audio":null,"annotations":null},)"
           R"({"role":"user","content":"and?"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(object(r.body)["usage"].toObject()["prompt_tokens"].toInt(),
            static_cast<int>(std::string("User: hi\nAssistant: \nUser: and?\nAssistant: ").size()));
}

TEST_F(GenerationTest, AStreamedChatSaysTheRoleThenTheContentThenTheFinishAndUsage) {
  start();
  auto [events, status] =
      stream("/v1/chat/completions", "{" + kChat +
                                         R"(,"max_tokens":7,"temperature":0,"stream":true,)"
                                         R"("stream_options":{"include_usage":true}})");
  ASSERT_EQ(status, 200);
  ASSERT_EQ(events.size(), 1u + 7u + 3u);  // role, seven tokens, finish, usage, [DONE]
  const QJsonObject first = object(events[0])["choices"].toArray()[0].toObject();
  EXPECT_EQ(first["delta"].toObject()["role"].toString(), "assistant");
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_EQ(object(events[i])["object"].toString(), "chat.completion.chunk") << events[i];
    text += read_stream_event(events[i]).text;
  }
  EXPECT_EQ(text, expected(kPrompt, 7));
  const QJsonObject last = object(events[8])["choices"].toArray()[0].toObject();
  EXPECT_EQ(last["finish_reason"].toString(), "length");
  EXPECT_TRUE(last["delta"].toObject().isEmpty());
  EXPECT_TRUE(object(events[9])["choices"].toArray().isEmpty());
  EXPECT_EQ(read_stream_event(events[9]).completion_tokens, 7u);
  EXPECT_EQ(events[10], "[DONE]");
}

TEST_F(GenerationTest, ASidecarsChatTemplateShapesThePromptAndModelsSaysSo) {
  auto t = make_chat_template("<s>{content}</s>", "<u>{content}</u>", "<a>{content}</a>", "<a>");
  ASSERT_TRUE(t.ok());
  start(Options{}, nullptr, false, &*t);
  auto r =
      post("/v1/chat/completions",
           R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},)"
           R"({"role":"user","content":"and?"}],"max_tokens":5,"temperature":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(object(r.body)["choices"]
                .toArray()[0]
                .toObject()["message"]
                .toObject()["content"]
                .toString()
                .toStdString(),
            expected("<u>hi</u><a>yo</a><u>and?</u><a>", 5));
  TestClient c(port_);
  ASSERT_TRUE(c.send(http_request("GET", "/v1/models", "")));
  auto models = c.read();
  ASSERT_TRUE(models.has_value());
  const QJsonObject m = object(models->body)["data"].toArray()[0].toObject();
  EXPECT_EQ(m["id"].toString(), "synthetic_lm");
  EXPECT_EQ(m["chat_template"].toString(), "sidecar");
  EXPECT_EQ(m["max_model_len"].toInt(), 256);
}

TEST_F(GenerationTest, EveryV1RouteAnswersOpenAisErrorObjectAndTritonsKeepTheirs) {
  start();
  struct Case {
    std::string method, path, body;
    int status;
    std::string type, param, message;
  };
  const std::vector<Case> cases = {
      {"POST", "/v1/chat/completions", "{", 400, "invalid_request_error", "", "not valid JSON"},
      {"POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"a"}],"n":2})", 422,
       "invalid_request_error", "n", "n = 2 is not supported"},
      {"POST", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function"}]})", 422,
       "invalid_request_error", "tools", "tools = an array is not supported"},
      {"POST", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":"a"}],"max_tokens":-1})", 422,
       "invalid_request_error", "max_tokens", "got -1"},
      {"POST", "/v1/chat/completions", R"({"messages":[{"role":"tool","content":"a"}]})", 422,
       "invalid_request_error", "messages[0].role", "got 'tool'"},
      {"POST", "/v1/chat/completions", R"({"messages":[]})", 422, "invalid_request_error",
       "messages", "messages is empty"},
      {"POST", "/v1/chat/completions", R"({"max_tokens":3})", 422, "invalid_request_error",
       "messages", "messages is missing"},
      {"POST", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})", 422,
       "invalid_request_error", "messages[0].content[0].type", "got 'image_url'"},
      {"POST", "/v1/chat/completions",
       R"({"model":"gpt-4","messages":[{"role":"user","content":"a"}]})", 404, "not_found_error",
       "model", "model 'gpt-4' is not served"},
      {"POST", "/v1/completions", R"({"prompt":"a","top_p":0})", 422, "invalid_request_error",
       "top_p", "top_p must be"},
      {"GET", "/v1/chat/completions", "", 405, "invalid_request_error", "", "method not allowed"},
      {"GET", "/v1/nothing", "", 404, "not_found_error", "", "no route '/v1/nothing'"},
      {"PUT", "/v1/config", R"({"max_num_seqs":0})", 400, "invalid_request_error", "",
       "max_num_seqs"},
  };
  for (const Case& k : cases) {
    TestClient c(port_);
    ASSERT_TRUE(c.send(http_request(k.method, k.path, k.body)));
    auto r = c.read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, k.status) << k.body << " -> " << r->body;
    const QJsonObject e = object(r->body)["error"].toObject();
    EXPECT_EQ(e["type"].toString().toStdString(), k.type) << r->body;
    if (k.param.empty())
      EXPECT_TRUE(e["param"].isNull()) << r->body;
    else
      EXPECT_EQ(e["param"].toString().toStdString(), k.param) << r->body;
    EXPECT_EQ(e["code"].toInt(), k.status) << r->body;
    EXPECT_NE(e["message"].toString().toStdString().find(k.message), std::string::npos) << r->body;
  }
  auto triton = post("/v2/models/synthetic_lm/generate", R"({"text_input":5})");
  EXPECT_EQ(triton.status, 422);
  EXPECT_TRUE(object(triton.body)["error"].isString()) << triton.body;
  EXPECT_EQ(post("/v1/chat/completions",
                 R"({"messages":[{"role":"user","content":"ok"}],"max_tokens":2})")
                .status,
            200);
}

TEST_F(GenerationTest, AnUnauthorizedV1RequestGetsOpenAisErrorObject) {
  access_.token = "secret";
  start();
  auto r = post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"a"}]})");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(object(r.body)["error"].toObject()["type"].toString(), "authentication_error")
      << r.body;
}

TEST_F(GenerationTest, AClientThatLeavesAChatStreamCancelsItsSequence) {
  expect_leaving_cancels(
      "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"bye"}],"max_tokens":200,"stream":true})");
}

}  // namespace
}  // namespace batchscope

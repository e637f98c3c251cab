// SPDX-License-Identifier: GPL-3.0-or-later
// The chat request reader, the chat template and the stream event reader,
// without a server: what each accepts, and how each refusal names its field.
#include <gtest/gtest.h>

#include "api/chat_json.h"
#include "api/openai_error.h"
#include "generation/chat_template.h"
#include "http/stream_event.h"

namespace batchscope {
namespace {

LmInfo model() {
  LmInfo m;
  m.name = "m";
  return m;
}

std::string prompt_text(const CompletionRequest& r) {
  return std::string(r.prompt.begin(), r.prompt.end());
}

TEST(ChatJson, MessagesBecomeTheDefaultTemplatesPromptAndFieldsAreRead) {
  auto r = parse_chat(
      R"({"model":"m","messages":[{"role":"system","content":"S"},)"
      R"({"role":"user","content":"U","name":"ann"},{"role":"assistant","content":"A"},)"
      R"({"role":"user","content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}],)"
      R"("max_completion_tokens":9,"temperature":0.5,"top_p":0.9,"seed":3,"stop":"\n",)"
      R"("stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,)"
      R"("n":1,"logprobs":false,"tools":[],"tool_choice":"none",)"
      R"("response_format":{"type":"text"},"user":"u","store":false})",
      model());
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r)) << std::get<HttpError>(r).message;
  const CompletionRequest& c = std::get<CompletionRequest>(r);
  EXPECT_EQ(prompt_text(c), "System: S\nUser: U\nAssistant: A\nUser: xy\nAssistant: ");
  EXPECT_EQ(c.model, "m");
  EXPECT_EQ(c.max_tokens, 9u);
  EXPECT_TRUE(c.max_tokens_set);
  EXPECT_EQ(c.sampling.temperature, 0.5);
  EXPECT_EQ(c.sampling.top_p, 0.9);
  EXPECT_EQ(c.sampling.seed, 3u);
  // The request's stop, then the template's.
  EXPECT_EQ(c.stop, (std::vector<std::string>{"\n", "\nUser:"}));
  EXPECT_TRUE(c.stream && c.include_usage && c.ignore_eos);
}

TEST(ChatJson, MaxCompletionTokensWinsAndAbsentMaxTokensIsSaid) {
  for (
      const char* body :
      {R"({"messages":[{"role":"user","content":"a"}],"max_tokens":5,"max_completion_tokens":7})",
       R"({"max_completion_tokens":7,"messages":[{"role":"user","content":"a"}],"max_tokens":5})"}) {
    auto r = parse_chat(body, model());
    ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r)) << body;
    EXPECT_EQ(std::get<CompletionRequest>(r).max_tokens, 7u) << body;
  }
  auto r = parse_chat(R"({"messages":[{"role":"user","content":"a"}]})", model());
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r));
  EXPECT_FALSE(std::get<CompletionRequest>(r).max_tokens_set);
}

TEST(ChatJson, APromptPastTheContextIsRefusedBeforeItIsMade) {
  LmInfo m = model();
  m.context_length = 64;
  auto t = make_chat_template(std::string(4000, 's') + "{content}", "{content}", "{content}", "");
  ASSERT_TRUE(t.ok());
  m.chat = *t;
  std::string body = R"({"messages":[)";
  for (int i = 0; i < 4000; ++i)
    body += std::string(i ? "," : "") + R"({"role":"system","content":""})";
  body += "]}";
  auto r = parse_chat(body, m);
  ASSERT_TRUE(std::holds_alternative<HttpError>(r));
  EXPECT_EQ(std::get<HttpError>(r).param, "messages");
  EXPECT_NE(
      std::get<HttpError>(r).message.find("prompt of 16000000 tokens; the model's context is 64"),
      std::string::npos)
      << std::get<HttpError>(r).message;
}

TEST(ChatJson, RefusalsNameTheFieldAndQuoteTheValue) {
  struct Case {
    std::string body;
    int status;
    std::string param, message;
  };
  const std::vector<Case> cases = {
      {"[1]", 400, "", "must be a JSON object"},
      {R"({"messages":"hi"})", 422, "messages", "messages must be an array of messages, got 'hi'"},
      {R"({"messages":[5]})", 422, "messages[0]", "got 5"},
      {R"({"messages":[{"content":"a"}]})", 422, "messages[0].role", "messages[0].role is missing"},
      {R"({"messages":[{"role":"user"}]})", 422, "messages[0].content", "is missing"},
      {R"({"messages":[{"role":"user","content":7}]})", 422, "messages[0].content", "got 7"},
      {R"({"messages":[{"role":"user","content":"a","extra":1}]})", 422, "messages[0].extra",
       "unknown field 'messages[0].extra'"},
      {R"({"messages":[{"role":"assistant","content":"a","tool_calls":[{"id":"x"}]}]})", 422,
       "messages[0].tool_calls", "no tools"},
      {R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", 422,
       "messages[0].content[0].text", "must be a string"},
      {R"({"messages":[{"role":"user","content":"a"}],"logprobs":true})", 422, "logprobs",
       "logprobs = true is not supported"},
      {R"({"messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_object"}})",
       422, "response_format", "not supported"},
      {R"({"messages":[{"role":"user","content":"a"}],"echo":true})", 422, "echo",
       "unknown field 'echo'"},
      {R"({"messages":[{"role":"user","content":"a"}],"stream_options":{"include_usage":1}})", 422,
       "stream_options.include_usage", "true or false"},
      {R"({"messages":[{"role":"user","content":"a"}],"max_tokens":0})", 422, "max_tokens",
       "got 0"},
      {R"({"messages":[{"role":"user","content":null}]})", 422, "messages[0].content",
       "only an assistant's may be"},
      {R"({"messages":[{"role":"user","content":"a","refusal":"no"}]})", 422, "messages[0].refusal",
       "unknown field"},
      {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"" + std::string(300, 'k') + "\":1}",
       422, std::string(128, 'k') + "...", "unknown field"},
  };
  for (const Case& k : cases) {
    auto r = parse_chat(k.body, model());
    ASSERT_TRUE(std::holds_alternative<HttpError>(r)) << k.body;
    const HttpError& e = std::get<HttpError>(r);
    EXPECT_EQ(e.status, k.status) << k.body;
    EXPECT_EQ(e.param, k.param) << k.body << " -> " << e.message;
    EXPECT_NE(e.message.find(k.message), std::string::npos) << k.body << " -> " << e.message;
  }
}

TEST(ChatTemplate, EachRoleMustHoldItsContentOnceAndRendersInOrder) {
  EXPECT_FALSE(make_chat_template("no marker", "{content}", "{content}", "").ok());
  auto twice = make_chat_template("{content}", "{content}{content}", "{content}", "");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("chat_template.user"), std::string::npos);
  EXPECT_FALSE(
      make_chat_template("{content}", "{content}", "{content}", std::string(5000, 'x')).ok());
  auto t = make_chat_template("[S]{content}\n", "[U]{content}\n", "[A]{content}\n", "[A]");
  ASSERT_TRUE(t.ok());
  EXPECT_STREQ(t->source(), "sidecar");
  EXPECT_STREQ(ChatTemplate{}.source(), "default");
  EXPECT_EQ(render_chat(*t, {{"system", "s"}, {"user", "u"}, {"assistant", "a"}}),
            "[S]s\n[U]u\n[A]a\n[A]");
  EXPECT_EQ(rendered_size(*t, {{"system", "s"}, {"user", "u"}, {"assistant", "a"}}), 18u);
  EXPECT_TRUE(t->stop.empty());
  EXPECT_EQ(ChatTemplate{}.stop, (std::vector<std::string>{"\nUser:"}));
  EXPECT_FALSE(
      make_chat_template("{content}", "{content}", "{content}", "", {"a", "b", "c", "d", "e"})
          .ok());
  EXPECT_FALSE(make_chat_template("{content}", "{content}", "{content}", "", {""}).ok());
  // A reply put back renders as it was generated: the cue is the assistant's text up to its
  // content.
  const ChatTemplate d;
  const std::string generated = render_chat(d, {{"user", "u"}}) + "reply\n";
  EXPECT_EQ(render_chat(d, {{"user", "u"}, {"assistant", "reply"}}).substr(0, generated.size()),
            generated);
}

TEST(StreamEvent, ReadsCompletionsChatUsageErrorsAndDone) {
  EXPECT_TRUE(read_stream_event("[DONE]").done);
  EXPECT_EQ(read_stream_event(R"({"choices":[{"text":"ab","finish_reason":null}]})").text, "ab");
  const StreamEvent chat =
      read_stream_event(R"({"choices":[{"delta":{"content":"c\n"},"finish_reason":null}]})");
  EXPECT_EQ(chat.text, "c\n");
  EXPECT_FALSE(chat.finished);
  EXPECT_TRUE(read_stream_event(R"({"choices":[{"delta":{},"finish_reason":"length"}]})").finished);
  const StreamEvent usage =
      read_stream_event(R"({"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12}})");
  EXPECT_EQ(usage.completion_tokens, 12u);
  EXPECT_EQ(usage.prompt_tokens, 30u);
  EXPECT_FALSE(read_stream_event(R"({"usage":{"prompt_tokens":-1}})").prompt_tokens);
  EXPECT_EQ(read_stream_event(R"({"error":{"message":"boom","code":500}})").error, "boom");
  EXPECT_EQ(read_stream_event(R"({"error":"plain"})").error, "plain");
  const StreamEvent junk = read_stream_event("{\"choices\":[{\"text\":");
  EXPECT_TRUE(junk.text.empty() && junk.error.empty() && !junk.done && !junk.completion_tokens);
}

TEST(OpenAiError, TheObjectCarriesMessageTypeParamAndCode) {
  EXPECT_EQ(
      openai_error_body(422, "x \"y\"", "n"),
      R"({"error":{"message":"x \"y\"","type":"invalid_request_error","param":"n","code":422}})");
  EXPECT_EQ(openai_error_body(429, "full", ""),
            R"({"error":{"message":"full","type":"rate_limit_error","param":null,"code":429}})");
  const ErrorMaker make = openai_error_response;
  const HttpResponse shaped = make(503, "stopping");
  EXPECT_EQ(shaped.status, 503);
  EXPECT_EQ(shaped.content_type, "application/json");
  EXPECT_EQ(shaped.body, openai_error_body(503, "stopping", ""));
}

}  // namespace
}  // namespace batchscope

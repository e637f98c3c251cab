// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/gen_http_target.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>

#include "common/text_out.h"
#include "http/stream_event.h"

namespace batchscope {

namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

}  // namespace

Expected<OpenAiApi> parse_openai_api(const std::string& text) {
  if (text == "chat") return OpenAiApi::kChat;
  if (text == "completions") return OpenAiApi::kCompletions;
  return invalid_argument("--api must be chat or completions, got '" + text + "'");
}

const char* openai_api_name(OpenAiApi api) {
  return api == OpenAiApi::kChat ? "chat" : "completions";
}

OpenAiApi settle_api_url(Url& url, const std::string& given) {
  const OpenAiApi api = given == "chat"                            ? OpenAiApi::kChat
                        : given == "completions"                   ? OpenAiApi::kCompletions
                        : ends_with(url.path, "/chat/completions") ? OpenAiApi::kChat
                                                                   : OpenAiApi::kCompletions;
  const char* route = api == OpenAiApi::kChat ? "/chat/completions" : "/completions";
  if (url.path.empty() || url.path == "/" || url.path == "/v1" || url.path == "/v1/") {
    url.path = std::string("/v1") + route;
  } else if (!given.empty()) {
    // --api decides the route: a path that names the other one is turned
    // to this one under the same prefix.
    for (std::string_view tail : {"/chat/completions", "/completions"}) {
      if (ends_with(url.path, tail)) {
        url.path = url.path.substr(0, url.path.size() - tail.size()) + route;
        break;
      }
    }
  }
  return api;
}

std::string served_model(const Url& url, int timeout_ms) {
  std::string path = url.path;
  for (std::string_view tail : {"/chat/completions", "/completions"}) {
    if (ends_with(path, tail)) {
      path.resize(path.size() - tail.size());
      break;
    }
  }
  std::string request = "GET " + path + "/models HTTP/1.1\r\nHost: " + url.host + ":" +
                        std::to_string(url.port) + "\r\n";
  if (!url.bearer_token.empty()) request += "Authorization: Bearer " + url.bearer_token + "\r\n";
  request += "\r\n";
  HttpStreamClient client(url.host, url.port, 1);
  if (!client.start()) return "";
  auto answer = std::make_shared<std::promise<std::string>>();
  std::future<std::string> got = answer->get_future();
  client.send(
      std::move(request), [](std::string_view, TimePoint) {},
      [answer](int status, std::string_view body) {
        answer->set_value(status == 200 ? std::string(body) : std::string());
      });
  std::string body;
  if (got.wait_for(std::chrono::milliseconds(timeout_ms)) == std::future_status::ready)
    body = got.get();
  client.stop();
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(body));
  return doc.object().value("data").toArray().at(0).toObject().value("id").toString().toStdString();
}

GenHttpTarget::GenHttpTarget(Url url, OpenAiApi api, std::string model, int connections)
    : url_(std::move(url)),
      api_(api),
      model_(std::move(model)),
      client_(url_.host, url_.port, connections) {}

void GenHttpTarget::send(const std::string& prompt, uint32_t max_tokens, Callbacks cb) {
  std::string body = "{";
  if (!model_.empty()) {
    body += "\"model\":";
    append_json_string(body, model_);
    body += ',';
  }
  if (api_ == OpenAiApi::kChat) {
    body += "\"messages\":[{\"role\":\"user\",\"content\":";
    append_json_string(body, prompt);
    body += "}]";
  } else {
    body += "\"prompt\":[";
    for (size_t i = 0; i < prompt.size(); ++i) {
      if (i) body += ',';
      append_uint(body, static_cast<unsigned char>(prompt[i]));
    }
    body += ']';
  }
  body += ",\"max_tokens\":" + std::to_string(max_tokens) +
          ",\"temperature\":0,\"ignore_eos\":true,\"stream\":true,"
          "\"stream_options\":{\"include_usage\":true}}";
  struct State {
    Callbacks cb;
    std::string error;                // what an error event said
    uint32_t events = 0;              // events that added text
    std::optional<uint64_t> counted;  // the usage chunk's count
  };
  auto state = std::make_shared<State>();
  state->cb = std::move(cb);
  client_.send(
      json_post(url_, body),
      [state](std::string_view data, TimePoint when) {
        const StreamEvent ev = read_stream_event(data);
        if (!ev.error.empty()) state->error = ev.error;
        if (!ev.text.empty()) {
          ++state->events;
          state->cb.on_tokens(when, 1);
        }
        if (ev.completion_tokens) state->counted = ev.completion_tokens;
        if (ev.prompt_tokens && state->cb.on_prompt_tokens) {
          state->cb.on_prompt_tokens(
              static_cast<uint32_t>(std::min<uint64_t>(*ev.prompt_tokens, UINT32_MAX)));
        }
      },
      [state](int status, std::string_view) {
        const bool ok = status == 200 && state->error.empty();
        const std::string outcome = status == 429 ? "rejected"
                                    : status == 0 ? "connection failed"
                                    : !ok         ? "error " + std::to_string(status)
                                                  : "length";
        // A token held back (part of a character) arrives in the next
        // event: the usage count is exact where the server sends one.
        const uint32_t tokens = static_cast<uint32_t>(state->counted.value_or(state->events));
        state->cb.on_done(ok, tokens, SteadyClock().now(), outcome);
      });
}

}  // namespace batchscope

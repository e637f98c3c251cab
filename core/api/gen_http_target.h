// SPDX-License-Identifier: GPL-3.0-or-later
// The generative load over HTTP for `batchscope bench --target URL|self-http`:
// OpenAI's POST /v1/completions or /v1/chat/completions, streamed with
// usage, each event timestamped as it arrives, so TTFT and ITL are the
// client's view of any OpenAI-compatible server (ours, vLLM, TGI,
// llama.cpp's server).
//  - completions send the prompt as token ids (bytes); chat sends it as
//    one user message, which the server wraps in its chat template;
//  - every request asks for temperature 0, ignore_eos and max_tokens;
//  - a token is an event that adds text; the usage chunk, where the server
//    sends one, gives the exact count at the end, and the prompt's length as
//    the server counted it (a chat template's tokens included);
//  - "model" is the name the server lists first at GET .../v1/models, or
//    the one given.
// Thread-safety: send() from the load's thread; callbacks on the client's.

#pragma once

#include <string>

#include "http/http_client.h"
#include "http/http_stream_client.h"
#include "traffic/gen_load.h"

namespace batchscope {

enum class OpenAiApi { kCompletions, kChat };

// "chat" or "completions"; the error quotes the value.
Expected<OpenAiApi> parse_openai_api(const std::string& text);
const char* openai_api_name(OpenAiApi api);
// The URL's API: `given` when set; else chat for a path ending in
// /chat/completions, completions otherwise. A bare host (path "/" or
// "/v1") gets the route of the API, and with `given` a path ending in the
// other API's route is turned to this one's.
OpenAiApi settle_api_url(Url& url, const std::string& given);

// The first model id a server lists at the models route beside url.path;
// empty when it lists none or cannot be asked (within `timeout_ms`).
std::string served_model(const Url& url, int timeout_ms = 5000);

class GenHttpTarget final : public GenTarget {
 public:
  GenHttpTarget(Url url, OpenAiApi api, std::string model, int connections);
  Status start() { return client_.start(); }
  void stop() { client_.stop(); }
  void send(const std::string& prompt, uint32_t max_tokens, Callbacks cb) override;

 private:
  Url url_;
  OpenAiApi api_;
  std::string model_;
  HttpStreamClient client_;
};

}  // namespace batchscope

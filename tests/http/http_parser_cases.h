// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the request parser's tests share: requests written out by hand, the
// valid cases, and feeding a parser whole or a byte at a time.

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "http/http_parser.h"

namespace batchscope::test {

using namespace std::string_literals;
using Result = std::variant<std::monostate, HttpRequest, HttpParseError>;
using Headers = std::vector<std::pair<std::string, std::string>>;

// What a request should parse to, written out by hand.
struct Want {
  std::string method;
  std::string target;
  int version_minor = 1;
  Headers headers;
  std::string body;
  bool keep_alive = true;
};

inline void expect_request(const HttpRequest& got, const Want& want, const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(got.method, want.method);
  EXPECT_EQ(got.target, want.target);
  EXPECT_EQ(got.version_minor, want.version_minor);
  EXPECT_EQ(got.headers, want.headers);
  EXPECT_EQ(got.body, want.body);
  EXPECT_EQ(got.keep_alive, want.keep_alive);
}

// Calls next() until it asks for more bytes; stops after an error, which
// next() would otherwise repeat forever.
inline void drain(HttpParser& p, std::vector<Result>& out) {
  for (;;) {
    Result r = p.next();
    if (std::holds_alternative<std::monostate>(r)) return;
    const bool error = std::holds_alternative<HttpParseError>(r);
    out.push_back(std::move(r));
    if (error) return;
  }
}

inline std::vector<Result> feed_whole(std::string_view raw, HttpLimits limits = {}) {
  HttpParser p(limits);
  std::vector<Result> out;
  p.append(raw.data(), raw.size());
  drain(p, out);
  return out;
}

// Feeds one byte per append() and checks that nothing completes before the
// last byte: a request is never reported early.
inline std::vector<Result> feed_bytewise(std::string_view raw, HttpLimits limits = {}) {
  HttpParser p(limits);
  std::vector<Result> out;
  for (size_t i = 0; i < raw.size() && !p.failed(); ++i) {
    p.append(&raw[i], 1);
    drain(p, out);
  }
  return out;
}

// The parser's cap on a chunk-size line; bounds what a chunked body buffers.
inline constexpr size_t kMaxChunkLineForTest = 4096;

inline const HttpParseError* as_error(const Result& r) { return std::get_if<HttpParseError>(&r); }
inline const HttpRequest* as_request(const Result& r) { return std::get_if<HttpRequest>(&r); }

struct ValidCase {
  std::string name;
  std::string raw;
  Want want;
};

inline std::vector<ValidCase> valid_cases() {
  return {
      {"simple GET",
       "GET /v2/health/ready HTTP/1.1\r\nHost: localhost:8000\r\n\r\n",
       {"GET", "/v2/health/ready", 1, {{"host", "localhost:8000"}}, "", true}},
      {"POST with Content-Length",
       "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
       "Content-Length: 13\r\n\r\n{\"inputs\":[]}",
       {"POST",
        "/v2/models/mlp/infer",
        1,
        {{"host", "a"}, {"content-type", "application/json"}, {"content-length", "13"}},
        "{\"inputs\":[]}",
        true}},
      {"chunked with extensions and trailers",
       "POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
       "5;name=value\r\nhello\r\n6 ; a=b;c\r\n world\r\nA\r\n0123456789\r\n"
       "0;last\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n",
       {"POST", "/up", 1, {{"transfer-encoding", "chunked"}}, "hello world0123456789", true}},
      {"chunked with LF line ends, mixed-case coding, no trailers",
       "POST /c HTTP/1.1\nTransfer-Encoding: Chunked\n\n3\nabc\n000\n\n",
       {"POST", "/c", 1, {{"transfer-encoding", "Chunked"}}, "abc", true}},
      {"bare LF line endings",
       "GET /lf HTTP/1.1\nHost: a\n\n",
       {"GET", "/lf", 1, {{"host", "a"}}, "", true}},
      {"leading empty lines are ignored",
       "\r\n\n\r\nGET / HTTP/1.1\r\n\r\n",
       {"GET", "/", 1, {}, "", true}},
      {"POST without body headers has an empty body",
       "POST /x HTTP/1.1\r\nHost: a\r\n\r\n",
       {"POST", "/x", 1, {{"host", "a"}}, "", true}},
      {"Content-Length 0",
       "PUT /z HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
       {"PUT", "/z", 1, {{"content-length", "0"}}, "", true}},
      {"repeated Content-Length values that agree",
       "POST /d HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3, 003\r\n\r\nabc",
       {"POST", "/d", 1, {{"content-length", "3"}, {"content-length", "3, 003"}}, "abc", true}},
      {"HTTP/1.0 defaults to close",
       "GET /old HTTP/1.0\r\n\r\n",
       {"GET", "/old", 0, {}, "", false}},
      {"names lowercased, values trimmed, empty value kept",
       "GET /h HTTP/1.1\r\nX-MiXeD-CaSe: \t spaced  value \t\r\nX-Empty:\r\nX-Tab:\tv\r\n\r\n",
       {"GET",
        "/h",
        1,
        {{"x-mixed-case", "spaced  value"}, {"x-empty", ""}, {"x-tab", "v"}},
        "",
        true}},
      {"Expect 100-continue is a plain header",
       "POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
       {"POST", "/e", 1, {{"expect", "100-continue"}, {"content-length", "2"}}, "ok", true}},
      {"binary body bytes pass through",
       "POST /b HTTP/1.1\r\nContent-Length: 4\r\n\r\n\0\r\n\xff"s,
       {"POST", "/b", 1, {{"content-length", "4"}}, "\0\r\n\xff"s, true}},
  };
}

}  // namespace batchscope::test

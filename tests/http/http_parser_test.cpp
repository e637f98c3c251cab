// SPDX-License-Identifier: GPL-3.0-or-later
// The request parser on valid input: every request parses the same whole,
// byte by byte and split anywhere; pipelined requests in order; keep-alive;
// header lookup; the path. Refusals are in http_parser_refusal_test.cpp.

#include "http/http_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/http/http_parser_cases.h"

namespace batchscope {
namespace {

using namespace std::string_literals;
using namespace test;

TEST(HttpParser, ParsesValidRequestsInOneAppend) {
  for (const ValidCase& c : valid_cases()) {
    HttpParser p;
    p.append(c.raw.data(), c.raw.size());
    Result r = p.next();
    const HttpRequest* req = as_request(r);
    ASSERT_NE(req, nullptr) << c.name;
    expect_request(*req, c.want, c.name);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(p.next())) << c.name;
    EXPECT_EQ(p.buffered(), 0u) << c.name;
    EXPECT_FALSE(p.failed()) << c.name;
  }
}

TEST(HttpParser, ByteByByteGivesTheSameRequestOnlyAtTheLastByte) {
  for (const ValidCase& c : valid_cases()) {
    HttpParser p;
    for (size_t i = 0; i + 1 < c.raw.size(); ++i) {
      p.append(&c.raw[i], 1);
      ASSERT_TRUE(std::holds_alternative<std::monostate>(p.next()))
          << c.name << ": completed early at byte " << i;
    }
    p.append(&c.raw.back(), 1);
    Result r = p.next();
    const HttpRequest* req = as_request(r);
    ASSERT_NE(req, nullptr) << c.name;
    expect_request(*req, c.want, c.name + " (byte by byte)");
    EXPECT_EQ(p.buffered(), 0u) << c.name;
  }
}

TEST(HttpParser, EverySplitPointGivesTheSameRequest) {
  for (const ValidCase& c : valid_cases()) {
    for (size_t k = 0; k <= c.raw.size(); ++k) {
      HttpParser p;
      std::vector<Result> out;
      p.append(c.raw.data(), k);
      drain(p, out);
      p.append(c.raw.data() + k, c.raw.size() - k);
      drain(p, out);
      ASSERT_EQ(out.size(), 1u) << c.name << " split at " << k;
      ASSERT_NE(as_request(out[0]), nullptr) << c.name << " split at " << k;
      expect_request(*as_request(out[0]), c.want, c.name + " split at " + std::to_string(k));
    }
  }
}

TEST(HttpParser, PipelinedRequestsComeOutInOrder) {
  const std::vector<ValidCase> cases = valid_cases();
  std::string stream;
  for (const ValidCase& c : cases) stream += c.raw;

  for (const bool bytewise : {false, true}) {
    SCOPED_TRACE(bytewise ? "byte by byte" : "one append");
    const std::vector<Result> out = bytewise ? feed_bytewise(stream) : feed_whole(stream);
    ASSERT_EQ(out.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      ASSERT_NE(as_request(out[i]), nullptr) << cases[i].name;
      expect_request(*as_request(out[i]), cases[i].want, cases[i].name);
    }
  }
}

TEST(HttpParser, PartialPipelinedRequestWaitsForTheRest) {
  const std::string a = "GET /a HTTP/1.1\r\n\r\n";
  const std::string b = "POST /b HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  const std::string first = a + b.substr(0, 30);
  HttpParser p;
  p.append(first.data(), first.size());
  Result r1 = p.next();
  ASSERT_NE(as_request(r1), nullptr);
  EXPECT_EQ(as_request(r1)->target, "/a");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(p.next()));
  // Complete head lines are parsed on arrival; only the 12 bytes of the
  // unfinished "Content-Length: 5" line stay buffered.
  EXPECT_EQ(p.buffered(), 12u);
  p.append(b.data() + 30, b.size() - 30);
  Result r2 = p.next();
  ASSERT_NE(as_request(r2), nullptr);
  EXPECT_EQ(as_request(r2)->target, "/b");
  EXPECT_EQ(as_request(r2)->body, "hello");
  EXPECT_EQ(p.buffered(), 0u);
}

// Appends of 1.5 requests at a time exercise the offset-and-compact path;
// buffered() must always equal the bytes not yet returned. (Bodiless requests:
// body bytes already moved into a pending request are no longer buffered.)
TEST(HttpParser, BufferedCountsUnconsumedBytesAcrossCompaction) {
  const std::string one = "GET /p HTTP/1.1\r\nHost: a\r\n\r\n";
  std::string stream;
  for (int i = 0; i < 50; ++i) stream += one;
  const size_t piece = one.size() * 3 / 2;
  HttpParser p;
  size_t fed = 0;
  size_t done = 0;
  while (fed < stream.size()) {
    const size_t n = std::min(piece, stream.size() - fed);
    p.append(stream.data() + fed, n);
    fed += n;
    std::vector<Result> out;
    drain(p, out);
    for (const Result& r : out) {
      ASSERT_NE(as_request(r), nullptr);
      EXPECT_EQ(as_request(r)->target, "/p");
    }
    done += out.size();
    EXPECT_EQ(p.buffered(), fed - done * one.size());
  }
  EXPECT_EQ(done, 50u);
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(HttpParser, KeepAliveFollowsVersionAndConnectionTokens) {
  struct Case {
    std::string version;
    std::string header_lines;  // whole lines, CRLF included
    bool keep_alive;
  };
  const std::vector<Case> cases = {
      {"HTTP/1.1", "", true},
      {"HTTP/1.1", "Connection: close\r\n", false},
      {"HTTP/1.1", "Connection: CLOSE\r\n", false},
      {"HTTP/1.1", "Connection: keep-alive\r\n", true},
      {"HTTP/1.1", "Connection: Upgrade, close\r\n", false},
      {"HTTP/1.1", "Connection: closed\r\n", true},
      {"HTTP/1.1", "Connection: keep-alive\r\nConnection: close\r\n", false},
      {"HTTP/1.0", "", false},
      {"HTTP/1.0", "Connection: keep-alive\r\n", true},
      {"HTTP/1.0", "Connection: Keep-Alive\r\n", true},
      {"HTTP/1.0", "Connection: foo ,keep-alive\r\n", true},
      {"HTTP/1.0", "Connection: keep-alive, close\r\n", false},
      {"HTTP/1.0", "Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n", false},
  };
  for (const Case& c : cases) {
    std::string raw = "GET / " + c.version + "\r\n" + c.header_lines + "\r\n";
    if (c.header_lines.find("chunked") != std::string::npos) raw += "0\r\n\r\n";
    const std::vector<Result> out = feed_whole(raw);
    ASSERT_EQ(out.size(), 1u) << raw;
    ASSERT_NE(as_request(out[0]), nullptr) << raw;
    EXPECT_EQ(as_request(out[0])->keep_alive, c.keep_alive) << raw;
  }
}

TEST(HttpParser, HeaderLookupUsesLowercaseNamesAndFirstValue) {
  const std::string raw =
      "GET / HTTP/1.1\r\nX-Dup: first\r\nx-dup: second\r\nContent-Type:  text/plain \r\n\r\n";
  const std::vector<Result> out = feed_whole(raw);
  ASSERT_EQ(out.size(), 1u);
  const HttpRequest& req = std::get<HttpRequest>(out[0]);
  EXPECT_EQ(req.header("x-dup"), "first");
  EXPECT_EQ(req.header("content-type"), "text/plain");
  EXPECT_EQ(req.header("Content-Type"), "");  // lookups take lowercase names
  EXPECT_EQ(req.header("absent"), "");
  EXPECT_EQ(req.headers.size(), 3u);
}

TEST(HttpParser, PathStripsTheQueryString) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v2/models/mlp/infer?x=1", "/v2/models/mlp/infer"},
      {"/v2/models/mlp/infer", "/v2/models/mlp/infer"},
      {"/a?", "/a"},
      {"/a?b?c", "/a"},
      {"/a#frag", "/a"},
      {"?only=query", ""},
      {"*", "*"},
      {"http://host:1/x?q=1", "http://host:1/x"},
  };
  for (const auto& [target, path] : cases) {
    HttpRequest req;
    req.target = target;
    EXPECT_EQ(req.path(), path) << target;
  }
}

}  // namespace
}  // namespace batchscope

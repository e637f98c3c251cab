// SPDX-License-Identifier: GPL-3.0-or-later
// The request parser on bad and hostile input: each refusal with its status
// and message, the error state sticky, the header and body limits enforced
// before memory is spent, both body headers refused, and seeded random
// corruption giving the same outcome however the stream is split.

#include "http/http_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/http/http_parser_cases.h"

namespace batchscope {
namespace {

using namespace std::string_literals;
using namespace test;

struct ErrorCase {
  std::string name;
  std::string raw;
  int status;
  std::string message;  // expected verbatim
  HttpLimits limits = {};
};

std::vector<ErrorCase> error_cases() {
  const std::string get = "GET / HTTP/1.1\r\n";
  const std::string post = "POST / HTTP/1.1\r\n";
  return {
      {"request line without spaces", "GARBAGE\r\n\r\n", 400,
       "request line 'GARBAGE' is not 'METHOD target HTTP/1.1'"},
      {"request line without version", "GET /\r\n\r\n", 400,
       "request line 'GET /' has no HTTP version"},
      {"double space before target", "GET  / HTTP/1.1\r\n\r\n", 400,
       "request line 'GET  / HTTP/1.1' has an empty target or extra spaces"},
      {"bare CR before the request line", "\rGET / HTTP/1.1\r\n\r\n", 400,
       "request method '?GET' is empty or has invalid characters"},
      {"invalid method character", "G(T / HTTP/1.1\r\n\r\n", 400,
       "request method 'G(T' is empty or has invalid characters"},
      {"lowercase protocol name", "GET / http/1.1\r\n\r\n", 400,
       "HTTP version 'http/1.1' is malformed; expected 'HTTP/1.1'"},
      {"text after the version", "GET / HTTP/1.1 x\r\n\r\n", 400,
       "HTTP version 'HTTP/1.1 x' is malformed; expected 'HTTP/1.1'"},
      {"HTTP/2.0", "GET / HTTP/2.0\r\n\r\n", 505,
       "HTTP version 'HTTP/2.0' is not supported; use HTTP/1.1"},
      {"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505,
       "HTTP version 'HTTP/2.0' is not supported; use HTTP/1.1"},
      {"HTTP/0.9", "GET / HTTP/0.9\r\n\r\n", 505,
       "HTTP version 'HTTP/0.9' is not supported; use HTTP/1.1"},
      {"obsolete line folding", get + "X-A: b\r\n  c\r\n\r\n", 400,
       "obsolete line folding (a header line starting with whitespace) is not supported; send "
       "each header on one line"},
      {"header line without colon", get + "NoColon\r\n\r\n", 400,
       "header line 'NoColon' has no colon"},
      {"header line with a space and no colon", get + "Bad Header\r\n\r\n", 400,
       "header line 'Bad Header' has no colon"},
      {"empty header name", get + ": v\r\n\r\n", 400,
       "header name '' is empty or has invalid characters (no space before the colon)"},
      {"DEL inside a long value", get + "X-Long: abcdefghijklmnop\x7fqrstuvwxyz\r\n\r\n", 400,
       "header 'X-Long' contains a control character"},
      {"NUL inside a long value", get + "X-Long: abcdefghijklmnopqrstuv\0wxyz\r\n\r\n"s, 400,
       "header 'X-Long' contains a control character"},
      {"space before the colon", get + "Host : a\r\n\r\n", 400,
       "header name 'Host ' is empty or has invalid characters (no space before the colon)"},
      {"bare CR inside a value", get + "X-A: a\rb\r\n\r\n", 400,
       "header 'X-A' contains a control character"},
      {"Content-Length not a number", post + "Content-Length: abc\r\n\r\n", 400,
       "Content-Length 'abc' is not a non-negative decimal number"},
      {"negative Content-Length", post + "Content-Length: -5\r\n\r\n", 400,
       "Content-Length '-5' is not a non-negative decimal number"},
      {"empty Content-Length", post + "Content-Length:\r\n\r\n", 400,
       "Content-Length is empty; expected a non-negative decimal number"},
      {"duplicate Content-Length that disagree",
       post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400,
       "conflicting Content-Length values '5' and '6'"},
      {"Content-Length list that disagrees", post + "Content-Length: 5, 6\r\n\r\nhello!", 400,
       "conflicting Content-Length values '5' and '6'"},
      {"Content-Length and chunked",
       post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
       "both Content-Length and Transfer-Encoding are present; send only one"},
      {"chunked and Content-Length",
       post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400,
       "both Content-Length and Transfer-Encoding are present; send only one"},
      {"gzip transfer coding", post + "Transfer-Encoding: gzip\r\n\r\n", 501,
       "Transfer-Encoding 'gzip' is not supported; only 'chunked' is"},
      {"gzip then chunked", post + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501,
       "Transfer-Encoding 'gzip' is not supported; only 'chunked' is"},
      {"chunked then gzip", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
       501, "Transfer-Encoding 'gzip' is not supported; only 'chunked' is"},
      {"chunked twice", post + "Transfer-Encoding: chunked, chunked\r\n\r\n", 400,
       "Transfer-Encoding applies 'chunked' more than once"},
      {"chunk size not hex", post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400,
       "chunk size 'zz' is not a hexadecimal number"},
      {"chunk size missing", post + "Transfer-Encoding: chunked\r\n\r\n\r\n", 400,
       "chunk size '' is not a hexadecimal number"},
      {"chunk size negative", post + "Transfer-Encoding: chunked\r\n\r\n-1\r\n", 400,
       "chunk size '-1' is not a hexadecimal number"},
      {"chunk size with junk", post + "Transfer-Encoding: chunked\r\n\r\n5 x\r\n", 400,
       "chunk size '5 x' is not a hexadecimal number"},
      {"chunk size with trailing space", post + "Transfer-Encoding: chunked\r\n\r\n5 \r\n", 400,
       "chunk size '5 ' is not a hexadecimal number"},
      {"chunk longer than its size", post + "Transfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n", 400,
       "chunk data is not followed by CRLF; the chunk size does not match the data"},
      {"Content-Length over the limit", post + "Content-Length: 101\r\n\r\n", 413,
       "Content-Length '101' exceeds the 100-byte body limit", HttpLimits{16u * 1024, 100}},
      {"Content-Length beyond 64 bits", post + "Content-Length: 99999999999999999999999\r\n\r\n",
       413, "Content-Length '99999999999999999999999' exceeds the 16777216-byte body limit"},
      {"chunk size beyond 64 bits",
       post + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\n", 413,
       "chunked body exceeds the 16777216-byte body limit"},
      {"headers over the limit", get + "X-Pad: " + std::string(100, 'p') + "\r\n\r\n", 431,
       "request line and headers exceed 64 bytes", HttpLimits{64, 100}},
      {"trailers over the limit",
       post + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: " + std::string(100, 't') + "\r\n\r\n",
       431, "chunked trailers exceed 64 bytes", HttpLimits{64, 100}},
      {"many short trailers over the limit",
       post + "Transfer-Encoding: chunked\r\n\r\n0\r\n" +
           [] {
             std::string t;
             for (int i = 0; i < 10; ++i) t += "X-T: 123456\r\n";
             return t;
           }() +
           "\r\n",
       431, "chunked trailers exceed 64 bytes", HttpLimits{64, 100}},
      {"too many header fields", get + "a:1\r\nb:2\r\nc:3\r\n\r\n", 431,
       "more than 2 header fields", HttpLimits{16u * 1024, 100, 2}},
      {"endless empty lines", std::string(64, '\n'), 400,
       "empty lines before the request line reach the 64-byte header limit", HttpLimits{64, 100}},
  };
}

TEST(HttpParser, ErrorsCarryTheirStatusAndAnActionableMessage) {
  for (const ErrorCase& c : error_cases()) {
    for (const bool bytewise : {false, true}) {
      const std::vector<Result> out =
          bytewise ? feed_bytewise(c.raw, c.limits) : feed_whole(c.raw, c.limits);
      ASSERT_EQ(out.size(), 1u) << c.name << (bytewise ? " (byte by byte)" : "");
      const HttpParseError* err = as_error(out[0]);
      ASSERT_NE(err, nullptr) << c.name;
      EXPECT_EQ(err->status, c.status) << c.name;
      EXPECT_EQ(err->message, c.message) << c.name;
    }
  }
}

TEST(HttpParser, ErrorStateIsStickyAndStopsBuffering) {
  HttpParser p;
  const std::string bad = "GET / HTTP/2.0\r\n\r\nGET / HTTP/1.1\r\n\r\n";
  p.append(bad.data(), bad.size());
  Result r = p.next();
  ASSERT_NE(as_error(r), nullptr);
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.buffered(), 0u);
  const std::string good = "GET / HTTP/1.1\r\n\r\n";
  p.append(good.data(), good.size());
  EXPECT_EQ(p.buffered(), 0u);
  Result again = p.next();
  ASSERT_NE(as_error(again), nullptr);
  EXPECT_EQ(as_error(again)->status, 505);
  EXPECT_EQ(as_error(again)->message, as_error(r)->message);
}

TEST(HttpParser, HeaderLimitIsInclusiveAtTheExactBoundary) {
  const size_t limit = 128;
  const std::string prefix = "GET / HTTP/1.1\r\nX-Pad: ";
  const std::string suffix = "\r\n\r\n";
  const std::string fits =
      prefix + std::string(limit - prefix.size() - suffix.size(), 'a') + suffix;
  ASSERT_EQ(fits.size(), limit);
  const std::vector<Result> ok = feed_whole(fits, HttpLimits{limit, 100});
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_NE(as_request(ok[0]), nullptr);

  const std::string over =
      prefix + std::string(limit + 1 - prefix.size() - suffix.size(), 'a') + suffix;
  const std::vector<Result> bad = feed_whole(over, HttpLimits{limit, 100});
  ASSERT_EQ(bad.size(), 1u);
  ASSERT_NE(as_error(bad[0]), nullptr);
  EXPECT_EQ(as_error(bad[0])->status, 431);

  // Leading empty lines are charged to the same budget.
  const std::vector<Result> shifted = feed_whole("\r\n" + fits, HttpLimits{limit, 100});
  ASSERT_EQ(shifted.size(), 1u);
  ASSERT_NE(as_error(shifted[0]), nullptr);
  EXPECT_EQ(as_error(shifted[0])->status, 431);
}

// A peer that never sends the blank line gets 431 as soon as the limit is
// held, and the parser never holds more than the limit plus one append.
TEST(HttpParser, HeaderLimitFiresWithoutTheBlankLineAndBoundsTheBuffer) {
  const size_t limit = 1024;
  for (const std::string& piece : {std::string("X-Fill: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"),
                                   std::string(100, 'a'),   // one endless line
                                   std::string(1, 'a')}) {  // hits the limit exactly
    HttpParser p(HttpLimits{limit, 1000});
    const std::string start = "GET / HTTP/1.1\r\n";
    p.append(start.data(), start.size());
    size_t fed = start.size();
    ASSERT_TRUE(std::holds_alternative<std::monostate>(p.next()));
    for (;;) {
      p.append(piece.data(), piece.size());
      fed += piece.size();
      EXPECT_LE(p.buffered(), limit + piece.size());
      Result r = p.next();
      if (fed < limit) {
        ASSERT_TRUE(std::holds_alternative<std::monostate>(r)) << "failed early at " << fed;
        continue;
      }
      const HttpParseError* err = as_error(r);
      ASSERT_NE(err, nullptr) << "no error at " << fed << " bytes";
      EXPECT_EQ(err->status, 431);
      EXPECT_EQ(err->message, "request line and headers exceed 1024 bytes");
      EXPECT_EQ(p.buffered(), 0u);
      break;
    }
  }
}

TEST(HttpParser, ContentLengthOverLimitFailsBeforeAnyBodyByte) {
  HttpParser p(HttpLimits{16u * 1024, 1000});
  const std::string head = "POST /big HTTP/1.1\r\nContent-Length: 1001\r\n\r\n";
  p.append(head.data(), head.size());
  Result r = p.next();
  const HttpParseError* err = as_error(r);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->status, 413);
  EXPECT_EQ(err->message, "Content-Length '1001' exceeds the 1000-byte body limit");
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(HttpParser, BodyAtTheLimitStreamsThroughWithoutPilingUp) {
  HttpParser p(HttpLimits{16u * 1024, 1000});
  const std::string head = "POST /big HTTP/1.1\r\nContent-Length: 1000\r\n\r\n";
  p.append(head.data(), head.size());
  EXPECT_TRUE(std::holds_alternative<std::monostate>(p.next()));
  EXPECT_EQ(p.buffered(), 0u);  // the head is consumed; the body is awaited
  std::string body;
  for (int i = 0; i < 1000; ++i) body += static_cast<char>('a' + i % 26);
  for (size_t off = 0; off < body.size(); off += 64) {
    const size_t n = std::min<size_t>(64, body.size() - off);
    p.append(body.data() + off, n);
    Result r = p.next();
    EXPECT_EQ(p.buffered(), 0u);
    if (off + n < body.size()) {
      ASSERT_TRUE(std::holds_alternative<std::monostate>(r)) << off;
    } else {
      ASSERT_NE(as_request(r), nullptr);
      EXPECT_EQ(as_request(r)->body, body);
    }
  }
}

TEST(HttpParser, ChunkedBodyFailsOnTheChunkThatPassesTheLimit) {
  const std::string head = "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string first = "40\r\n" + std::string(64, 'x') + "\r\n";
  const std::string second = "24\r\n" + std::string(36, 'y') + "\r\n";  // total exactly 100

  HttpParser p(HttpLimits{16u * 1024, 100});
  for (const std::string* s : {&head, &first, &second}) {
    p.append(s->data(), s->size());
    ASSERT_TRUE(std::holds_alternative<std::monostate>(p.next()));
  }
  const std::string third = "1\r\n";  // one more byte would pass the limit
  p.append(third.data(), third.size());
  Result r = p.next();
  const HttpParseError* err = as_error(r);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->status, 413);
  EXPECT_EQ(err->message, "chunked body exceeds the 100-byte body limit");

  // The same stream ending at exactly the limit is accepted.
  const std::string exact = head + first + second + "0\r\n\r\n";
  const std::vector<Result> ok = feed_whole(exact, HttpLimits{16u * 1024, 100});
  ASSERT_EQ(ok.size(), 1u);
  ASSERT_NE(as_request(ok[0]), nullptr);
  EXPECT_EQ(as_request(ok[0])->body, std::string(64, 'x') + std::string(36, 'y'));
}

TEST(HttpParser, BothContentLengthAndTransferEncodingAreRefused) {
  // Smuggling guard: whichever header comes first, and even when the
  // Content-Length agrees with the chunked data.
  const std::string raw =
      "POST / HTTP/1.1\r\nContent-Length: 8\r\nTransfer-Encoding: "
      "chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
  const std::vector<Result> out = feed_whole(raw);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_NE(as_error(out[0]), nullptr);
  EXPECT_EQ(as_error(out[0])->status, 400);
}

std::string describe(const Result& r) {
  std::ostringstream out;
  if (const HttpRequest* req = as_request(r)) {
    out << "request " << req->method << ' ' << req->target << " 1." << req->version_minor
        << " ka=" << req->keep_alive << " body=" << req->body.size() << ':' << req->body;
    for (const auto& [name, value] : req->headers) out << " [" << name << '=' << value << ']';
  } else if (const HttpParseError* err = as_error(r)) {
    out << "error " << err->status << ' ' << err->message;
  }
  return out.str();
}

// Seeded random corruption of a pipelined stream, fed whole, byte by byte
// and in random pieces: every split must give the same outcomes (and, under
// the sanitizers, touch no memory it should not).
TEST(HttpParser, RandomSplitsAgreeOnCorruptedStreams) {
  std::string clean;
  for (const ValidCase& c : valid_cases()) clean += c.raw;
  std::mt19937 rng(12345);
  const HttpLimits small{96, 48, 6};
  for (int iter = 0; iter < 400; ++iter) {
    std::string s = clean;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % s.size();
      const char alphabet[] = "\r\n :;0aF-\t,\x7f";
      const char c = alphabet[rng() % (sizeof(alphabet) - 1)];
      switch (rng() % 3) {
        case 0: s[at] = c; break;
        case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        default: s.erase(at, 1); break;
      }
    }
    for (const HttpLimits& limits : {HttpLimits{}, small}) {
      std::vector<std::string> whole;
      for (const Result& r : feed_whole(s, limits)) whole.push_back(describe(r));
      std::vector<std::string> bytewise;
      for (const Result& r : feed_bytewise(s, limits)) bytewise.push_back(describe(r));
      std::vector<std::string> pieces;
      HttpParser p(limits);
      std::vector<Result> out;
      for (size_t off = 0; off < s.size();) {
        const size_t n = std::min<size_t>(1 + rng() % 40, s.size() - off);
        p.append(s.data() + off, n);
        off += n;
        drain(p, out);
        if (p.failed()) break;
        ASSERT_LE(p.buffered(), limits.max_header_bytes + kMaxChunkLineForTest + n);
      }
      for (const Result& r : out) pieces.push_back(describe(r));
      ASSERT_EQ(whole, bytewise) << "iteration " << iter;
      ASSERT_EQ(whole, pieces) << "iteration " << iter;
    }
  }
}

// Not a test: a throughput check to run by hand with
//   --gtest_also_run_disabled_tests --gtest_filter='*Throughput*'
// on an optimised build. Speed is never asserted (DESIGN.md section 6).
TEST(HttpParser, DISABLED_ThroughputSmallPosts) {
  const std::string one =
      "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: localhost:8000\r\nUser-Agent: bench\r\n"
      "Content-Type: application/json\r\nContent-Length: 26\r\n\r\n{\"inputs\":[[1,2,3,4,5,6]]}";
  constexpr int kPerAppend = 1000;
  constexpr int kRounds = 1000;
  std::string batch;
  for (int i = 0; i < kPerAppend; ++i) batch += one;

  for (const bool pipelined : {true, false}) {
    HttpParser p;
    size_t requests = 0;
    size_t body_bytes = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int round = 0; round < kRounds; ++round) {
      for (int i = 0; i < (pipelined ? 1 : kPerAppend); ++i) {
        if (pipelined) {
          p.append(batch.data(), batch.size());
        } else {
          p.append(one.data(), one.size());
        }
        for (;;) {
          Result r = p.next();
          HttpRequest* req = std::get_if<HttpRequest>(&r);
          if (req == nullptr) break;
          ++requests;
          body_bytes += req->body.size();
        }
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    ASSERT_EQ(requests, size_t{kPerAppend} * kRounds);
    ASSERT_EQ(body_bytes, requests * 26);
    std::printf("%s: %zu requests of %zu bytes, %.1f ns/request\n",
                pipelined ? "1000 pipelined per append" : "one request per append", requests,
                one.size(), ns / static_cast<double>(requests));
  }
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// parse_response, the load client's reader of server responses: framing,
// limits and malformed input; and HttpLoadClient against a raw socket server
// that answers with bytes the test chooses.

#include "http/http_response.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "http/http_client.h"

namespace batchscope {
namespace {

using namespace std::string_literals;

ReceivedResponse expect_response(const HttpResponseParse& r) {
  if (const auto* e = std::get_if<HttpResponseError>(&r)) {
    ADD_FAILURE() << "error: " << e->message;
    return {};
  }
  if (std::holds_alternative<std::monostate>(r)) {
    ADD_FAILURE() << "asks for more bytes";
    return {};
  }
  return std::get<ReceivedResponse>(r);
}

std::string expect_error(const HttpResponseParse& r) {
  if (const auto* e = std::get_if<HttpResponseError>(&r)) return e->message;
  ADD_FAILURE() << (std::holds_alternative<std::monostate>(r) ? "asks for more bytes"
                                                              : "parsed a response");
  return {};
}

bool needs_more(const HttpResponseParse& r) { return std::holds_alternative<std::monostate>(r); }

TEST(HttpResponse, ContentLengthBodyAndWhatFollows) {
  const std::string in = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1";
  const ReceivedResponse r = expect_response(parse_response(in));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(r.size, in.size() - 8);
}

TEST(HttpResponse, EveryPrefixAsksForMore) {
  const std::string whole =
      "HTTP/1.1 422 Unprocessable\r\ncontent-length: 4\r\n\r\n{\"a\"HTTP/1.1 204 No "
      "Content\r\n\r\n";
  const size_t first = whole.find("HTTP/1.1 204");
  for (size_t k = 0; k < first; ++k) {
    EXPECT_TRUE(needs_more(parse_response(std::string_view(whole).substr(0, k)))) << k;
  }
  const ReceivedResponse a = expect_response(parse_response(whole));
  EXPECT_EQ(a.status, 422);
  EXPECT_EQ(a.size, first);
  const ReceivedResponse b =
      expect_response(parse_response(std::string_view(whole).substr(a.size)));
  EXPECT_EQ(b.status, 204);
  EXPECT_EQ(b.body, "");
}

TEST(HttpResponse, ChunkedBodyIsDecodedAndTrailersSkipped) {
  const std::string in =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n6;name=value\r\n world\r\n0\r\nX-Checksum: 1\r\n\r\n";
  const ReceivedResponse r = expect_response(parse_response(in));
  EXPECT_EQ(r.body, "hello world");
  EXPECT_EQ(r.size, in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    EXPECT_TRUE(needs_more(parse_response(std::string_view(in).substr(0, k)))) << k;
  }
}

TEST(HttpResponse, BareLineFeedsAreAccepted) {
  const ReceivedResponse r =
      expect_response(parse_response("HTTP/1.1 200 OK\nContent-Length: 2\n\nok"));
  EXPECT_EQ(r.body, "ok");
}

TEST(HttpResponse, StatusesWithoutBodyIgnoreLengthHeaders) {
  for (const char* status : {"100 Continue", "204 No Content", "304 Not Modified"}) {
    const std::string in = "HTTP/1.1 "s + status + "\r\nContent-Length: 10\r\n\r\n";
    const ReceivedResponse r = expect_response(parse_response(in));
    EXPECT_EQ(r.body, "") << status;
    EXPECT_EQ(r.size, in.size()) << status;
  }
}

TEST(HttpResponse, BodyWithoutLengthRunsToTheClose) {
  const std::string in = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it";
  EXPECT_TRUE(needs_more(parse_response(in)));
  const ReceivedResponse r = expect_response(parse_response(in, /*eof=*/true));
  EXPECT_EQ(r.body, "all of it");
  EXPECT_FALSE(r.keep_alive);
  // A transfer coding other than chunked has no length either.
  const std::string gz = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxyz";
  EXPECT_TRUE(needs_more(parse_response(gz)));
  EXPECT_EQ(expect_response(parse_response(gz, true)).body, "xyz");
}

TEST(HttpResponse, ConnectionHeaderAndVersionDecideKeepAlive) {
  EXPECT_FALSE(
      expect_response(
          parse_response("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
          .keep_alive);
  EXPECT_FALSE(
      expect_response(parse_response("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")).keep_alive);
  EXPECT_TRUE(
      expect_response(
          parse_response("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"))
          .keep_alive);
}

TEST(HttpResponse, ChunkedWinsOverContentLengthAndEndsTheConnection) {
  const ReceivedResponse r = expect_response(
      parse_response("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "2\r\nhi\r\n0\r\n\r\n"));
  EXPECT_EQ(r.body, "hi");
  EXPECT_FALSE(r.keep_alive);
}

TEST(HttpResponse, ContentLengthListsMustAgree) {
  EXPECT_EQ(
      expect_response(parse_response("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok")).body,
      "ok");
  EXPECT_NE(expect_error(parse_response(
                             "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"))
                .find("conflicting"),
            std::string::npos);
}

// Regressions of the reader this replaced, whose size arithmetic a huge
// Content-Length or chunk size wrapped: the first misframed the responses
// after it, the second looped appending to the body until memory ran out.
TEST(HttpResponse, MalformedLengthsAreRefusedNotTrusted) {
  EXPECT_FALSE(
      expect_error(parse_response("HTTP/1.1 200 OK\r\nContent-Length:   \r\n\r\n")).empty());
  EXPECT_TRUE(needs_more(parse_response("HTTP/1.1 200 OK\r\nContent-Length:   ")));
  EXPECT_FALSE(
      expect_error(parse_response("HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n")).empty());
  EXPECT_FALSE(
      expect_error(parse_response("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n")).empty());
  for (const char* huge :
       {"18446744073709551615", "18446744073709551616", "99999999999999999999999999999999"}) {
    const std::string in = "HTTP/1.1 200 OK\r\nContent-Length: "s + huge + "\r\n\r\nabc";
    EXPECT_NE(expect_error(parse_response(in)).find("exceeds"), std::string::npos) << huge;
  }
  const std::string chunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_FALSE(expect_error(parse_response(chunk + "fffffffffffffffffffff\r\nab")).empty());
  EXPECT_FALSE(expect_error(parse_response(chunk + "ffffffffffffffec\r\nabc\r\n")).empty());
  EXPECT_FALSE(expect_error(parse_response(chunk + "zz\r\n")).empty());
  EXPECT_FALSE(expect_error(parse_response(chunk + "2 x\r\nab\r\n")).empty());
  EXPECT_FALSE(expect_error(parse_response(chunk + "2\r\nabc\r\n")).empty());
}

TEST(HttpResponse, StatusLineMustBeHttp1) {
  for (const char* line : {"HTTP/2 200 OK", "HTTP/1.1 20 OK", "HTTP/1.1 099 Low", "HTTP/1.1 200OK",
                           "FTP/1.1 200 OK", "", "HTTP/1.1  200 OK"}) {
    EXPECT_FALSE(expect_error(parse_response(line + "\r\nContent-Length: 0\r\n\r\n"s)).empty())
        << line;
  }
  EXPECT_EQ(expect_response(parse_response("HTTP/1.1 503\r\nContent-Length: 0\r\n\r\n")).status,
            503);
  EXPECT_FALSE(expect_error(parse_response("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n")).empty());
  EXPECT_FALSE(expect_error(parse_response("HTTP/1.1 200 OK\r\nA: b\r\n  folded\r\n\r\n")).empty());
}

TEST(HttpResponse, LimitsAreEnforcedBeforeTheBytesArrive) {
  HttpResponseLimits l;
  l.max_head_bytes = 64;
  l.max_response_bytes = 256;
  // A head that cannot end within the limit fails once the limit is reached.
  const std::string long_head = "HTTP/1.1 200 OK\r\nX-Long: " + std::string(100, 'a');
  EXPECT_TRUE(needs_more(parse_response(long_head.substr(0, 63), false, l)));
  EXPECT_NE(expect_error(parse_response(long_head, false, l)).find("head exceeds 64"),
            std::string::npos);
  // A declared body past the response limit fails before any of it comes.
  EXPECT_NE(expect_error(parse_response("HTTP/1.1 200 OK\r\nContent-Length: 300\r\n\r\n", false, l))
                .find("exceeds the 256-byte"),
            std::string::npos);
  EXPECT_NE(
      expect_error(
          parse_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n", false, l))
          .find("exceeds the 256-byte"),
      std::string::npos);
  // A body that runs to the close may not outgrow the limit either.
  const std::string open_ended = "HTTP/1.1 200 OK\r\n\r\n" + std::string(300, 'x');
  EXPECT_FALSE(expect_error(parse_response(open_ended, false, l)).empty());
  // Many small chunks: the framing counts towards the limit too.
  std::string chunks = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  while (chunks.size() < 300) chunks += "1;pad=xxxxxxxx\r\na\r\n";
  EXPECT_FALSE(expect_error(parse_response(chunks, false, l)).empty());
}

// A server on 127.0.0.1 that answers each request it reads with the next of
// `answers`, verbatim, closing the connection after an answer marked by a
// leading '!' (which is not sent).
class RawServer {
 public:
  explicit RawServer(std::vector<std::string> answers) : answers_(std::move(answers)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~RawServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  uint16_t port() const { return port_; }
  int connections() const { return connections_; }

 private:
  void serve() {
    size_t next = 0;
    while (next < answers_.size()) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++connections_;
      std::string in;
      char buf[4096];
      while (next < answers_.size()) {
        // One request: the client's json_post always sends a Content-Length.
        const size_t head = in.find("\r\n\r\n");
        const size_t cl = in.find("Content-Length: ");
        if (head != std::string::npos && cl != std::string::npos &&
            in.size() >= head + 4 + std::stoul(in.substr(cl + 16))) {
          in.erase(0, head + 4 + std::stoul(in.substr(cl + 16)));
          std::string answer = answers_[next++];
          const bool close_after = !answer.empty() && answer[0] == '!';
          if (close_after) answer.erase(0, 1);
          ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
          if (close_after) break;
          continue;
        }
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
      }
      ::close(c);
    }
  }

  std::vector<std::string> answers_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

struct Answer {
  int status = -1;
  std::string body;
};

// Sends `n` requests one after another, each once the previous is answered.
std::vector<Answer> exchange(uint16_t port, int n) {
  HttpLoadClient client("127.0.0.1", port, 1);
  EXPECT_TRUE(client.start());
  std::vector<Answer> got;
  std::mutex mu;
  std::condition_variable cv;
  Url url;
  url.host = "127.0.0.1";
  url.port = port;
  url.path = "/infer";
  for (int i = 0; i < n; ++i) {
    client.send(json_post(url, "{}"), [&](int status, std::string_view body) {
      std::lock_guard g(mu);
      got.push_back({status, std::string(body)});
      cv.notify_all();
    });
    std::unique_lock lk(mu);
    EXPECT_TRUE(cv.wait_for(lk, std::chrono::seconds(10), [&] { return got.size() > size_t(i); }));
  }
  client.stop();
  return got;
}

TEST(HttpLoadClient, ReadsABodyThatEndsWithTheConnection) {
  RawServer server({"!HTTP/1.1 200 OK\r\n\r\nuntil the end"});
  const auto got = exchange(server.port(), 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, 200);
  EXPECT_EQ(got[0].body, "until the end");
}

TEST(HttpLoadClient, AMalformedResponseFailsItsRequestOnly) {
  RawServer server({"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\nx",
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"});
  const auto got = exchange(server.port(), 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, 0);
  EXPECT_NE(got[0].body.find("malformed response"), std::string::npos) << got[0].body;
  EXPECT_EQ(got[1].status, 200);
  EXPECT_EQ(got[1].body, "ok");
  EXPECT_EQ(server.connections(), 2);
}

TEST(HttpLoadClient, ConnectionCloseIsHonoured) {
  RawServer server(
      {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\none",
       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\ntwo"});
  const auto got = exchange(server.port(), 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, "one");
  EXPECT_EQ(got[1].status, 201);
  EXPECT_EQ(got[1].body, "two");
  EXPECT_EQ(server.connections(), 2);
}

// Servers send 408 on idle keep-alive connections. The reader this replaced
// gave such a response to the next request as its answer, or, when it came
// alone, called an empty callback (std::bad_function_call: terminate).
TEST(HttpLoadClient, AResponseToNoRequestClosesTheConnection) {
  RawServer server(
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"
       "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n",
       "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"});
  const auto got = exchange(server.port(), 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, "a");
  EXPECT_EQ(got[1].status, 200);
  EXPECT_EQ(got[1].body, "b");
  EXPECT_EQ(server.connections(), 2);
}

}  // namespace
}  // namespace batchscope

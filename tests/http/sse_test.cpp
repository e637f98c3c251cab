// SPDX-License-Identifier: GPL-3.0-or-later
// SseReader: events out of a chunked text/event-stream answer however its
// bytes are split, line ends of every kind, whole non-stream answers, and
// hostile input refused with a sentence (limits, malformed chunk sizes).

#include "http/sse.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace batchscope::test {
namespace {

constexpr const char* kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    "Cache-Control: no-cache\r\n\r\n";

// Each piece as one chunk, then the last chunk.
std::string chunked(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) {
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", p.size());
    out += size + p + "\r\n";
  }
  return out + "0\r\n\r\n";
}

struct Outcome {
  std::vector<std::string> events;
  bool done = false;
  int status = 0;
  std::string body;
  std::string error;
  size_t used = 0;
};

// Feeds `pieces` in turn, as reads from a socket would.
Outcome read_pieces(const std::vector<std::string>& pieces, SseLimits limits = {},
                    bool eof = false) {
  SseReader r(limits);
  Outcome o;
  auto take = [&](SseStep s) {
    for (std::string& e : s.events) o.events.push_back(std::move(e));
    o.done = s.done;
    o.status = s.status;
    o.used += s.used;
    if (!s.body.empty()) o.body = s.body;
    if (!s.error.empty()) o.error = s.error;
  };
  for (const std::string& p : pieces) take(r.feed(p));
  if (eof) take(r.finish());
  return o;
}

Outcome read_all(const std::string& bytes, SseLimits limits = {}, bool eof = false) {
  return read_pieces({bytes}, limits, eof);
}

// A stream with every line end, comments, fields other than data, multi-line
// data, a BOM, and chunk boundaries inside lines and inside a CRLF.
std::string sample_stream() {
  return kSseHead +
         chunked({"\xEF\xBB\xBF: a comment\r\n", "data: {\"t\":\"He\"}\r\n\r",
                  "\ndata: {\"t\":\"llo\"}\n\nevent: token\nid: 7\ndata: one\ndata",
                  ": two\r\rdata:no space\r\n\r\n", "retry: 10\ndata\n\n", "data: [DONE]\n\n"});
}

const std::vector<std::string> kSampleEvents = {
    "{\"t\":\"He\"}", "{\"t\":\"llo\"}", "one\ntwo", "no space", "", "[DONE]"};

TEST(SseReader, ReadsTheEventsOfAChunkedStream) {
  const Outcome o = read_all(sample_stream());
  EXPECT_EQ(o.error, "");
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.status, 200);
  EXPECT_EQ(o.events, kSampleEvents);
  EXPECT_EQ(o.body, "");
  EXPECT_EQ(o.used, sample_stream().size());
}

TEST(SseReader, EverySplitPointGivesTheSameEvents) {
  const std::string all = sample_stream();
  for (size_t k = 0; k <= all.size(); ++k) {
    const Outcome o = read_pieces({all.substr(0, k), all.substr(k)});
    ASSERT_EQ(o.error, "") << "split at " << k;
    ASSERT_TRUE(o.done) << "split at " << k;
    ASSERT_EQ(o.events, kSampleEvents) << "split at " << k;
    ASSERT_EQ(o.used, all.size());
  }
  std::vector<std::string> bytes;
  for (char c : all) bytes.emplace_back(1, c);
  const Outcome one_by_one = read_pieces(bytes);
  EXPECT_TRUE(one_by_one.done);
  EXPECT_EQ(one_by_one.events, kSampleEvents);
}

TEST(SseReader, EventsArriveAsTheirBlankLineDoes) {
  SseReader r;
  SseStep s = r.feed(std::string(kSseHead) + "8\r\ndata: ");
  EXPECT_EQ(s.status, 200);
  EXPECT_TRUE(r.event_stream());
  EXPECT_TRUE(s.events.empty());
  s = r.feed("a\n\r\n");
  EXPECT_TRUE(s.events.empty());  // the line is whole, the event not yet
  s = r.feed("1\r\n\n\r\n");
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(s.events[0], "a");
  EXPECT_FALSE(s.done);
  s = r.feed("0\r\n\r\n");
  EXPECT_TRUE(s.done);
}

TEST(SseReader, LinesMayEndWithCrLfLfOrCr) {
  for (const char* eol : {"\r\n", "\n", "\r"}) {
    const std::string e = eol;
    const Outcome o = read_all(kSseHead + chunked({"data: a" + e + e + "data: b" + e + "data: c" +
                                                   e + e + ": ping" + e + e}));
    EXPECT_EQ(o.events, (std::vector<std::string>{"a", "b\nc"})) << "line end " << e.size();
  }
}

TEST(SseReader, AnEventTheStreamEndsInsideIsDiscarded) {
  const Outcome o = read_all(kSseHead + chunked({"data: whole\n\ndata: half\n"}));
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.events, (std::vector<std::string>{"whole"}));
}

TEST(SseReader, AJsonErrorAnswerIsKeptWhole) {
  const std::string json = R"({"error":"the queue is full"})";
  const Outcome o = read_all(
      "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
      "Retry-After: 1\r\nContent-Length: " +
      std::to_string(json.size()) + "\r\n\r\n" + json);
  EXPECT_EQ(o.error, "");
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.status, 429);
  EXPECT_EQ(o.body, json);
  EXPECT_TRUE(o.events.empty());
  // Chunked, or running to the close: the same.
  const Outcome c =
      read_all("HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n" +
               chunked({json.substr(0, 5), json.substr(5)}));
  EXPECT_EQ(c.status, 503);
  EXPECT_EQ(c.body, json);
  const Outcome to_eof = read_all("HTTP/1.0 500 Oops\r\n\r\n" + json, {}, true);
  EXPECT_TRUE(to_eof.done);
  EXPECT_EQ(to_eof.body, json);
  const Outcome empty = read_all("HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_TRUE(empty.done);
  EXPECT_EQ(empty.status, 204);
}

TEST(SseReader, AnInterimAnswerIsSkipped) {
  const Outcome o =
      read_all("HTTP/1.1 100 Continue\r\n\r\n" + std::string(kSseHead) + chunked({"data: x\n\n"}));
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.status, 200);
  EXPECT_EQ(o.events, (std::vector<std::string>{"x"}));
}

TEST(SseReader, BytesAfterTheAnswerAreLeftForWhatFollows) {
  const std::string first = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";
  SseReader r;
  const SseStep s = r.feed(first + "HTTP/1.1 200 OK\r\n");
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.used, first.size());
  EXPECT_EQ(s.body, "ok");
  EXPECT_FALSE(r.keep_alive());
  const SseStep after = r.feed("more");
  EXPECT_EQ(after.used, 0u);
  EXPECT_TRUE(after.done);
  EXPECT_EQ(after.body, "");  // handed over once
}

TEST(SseReader, AConnectionClosedMidAnswerIsAnError) {
  const std::string all = sample_stream();
  const Outcome cut = read_all(all.substr(0, all.size() - 10), {}, true);
  EXPECT_FALSE(cut.done);
  EXPECT_NE(cut.error.find("before the response ended"), std::string::npos) << cut.error;
  EXPECT_FALSE(cut.events.empty());  // what arrived whole still counts
  const Outcome nothing = read_all("", {}, true);
  EXPECT_NE(nothing.error.find("without answering"), std::string::npos) << nothing.error;
}

TEST(SseReader, LimitsAreKeptAndSaySo) {
  SseLimits small;
  small.max_head_bytes = 64;
  small.max_event_bytes = 16;
  small.max_body_bytes = 8;
  small.max_total_bytes = 4096;
  const Outcome head = read_all(std::string(kSseHead), small);
  EXPECT_NE(head.error.find("head exceeds 64 bytes"), std::string::npos) << head.error;

  SseLimits events = small;
  events.max_head_bytes = 1024;
  const Outcome big =
      read_all(kSseHead + chunked({"data: short\n\ndata: 0123456789abcdef\n\n"}), events);
  EXPECT_EQ(big.events, (std::vector<std::string>{"short"}));
  EXPECT_NE(big.error.find("an event exceeds 16 bytes"), std::string::npos) << big.error;
  // Many data lines make one event: their sum is what counts.
  const Outcome lines =
      read_all(kSseHead + chunked({"data: 12345\ndata: 12345\ndata: 1\n\n"}), events);
  EXPECT_NE(lines.error.find("an event exceeds"), std::string::npos) << lines.error;

  const Outcome body = read_all("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", events);
  EXPECT_NE(body.error.find("exceeds the 8-byte limit"), std::string::npos) << body.error;
  const Outcome chunks =
      read_all("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n5\r\n", events);
  EXPECT_NE(chunks.error.find("8-byte body limit"), std::string::npos) << chunks.error;

  std::vector<std::string> many;
  for (int i = 0; i < 400; ++i) many.push_back("data: " + std::to_string(i) + "\n\n");
  const Outcome total = read_all(kSseHead + chunked(many), events);
  EXPECT_FALSE(total.events.empty());
  EXPECT_NE(total.error.find("4096"), std::string::npos) << total.error;
  EXPECT_LE(total.used, 4096u);
}

TEST(SseReader, MalformedChunkSizesAreRefusedBeforeAnythingIsAllocated) {
  struct Case {
    std::string size_line;
    const char* says;
  };
  const Case cases[] = {
      {"zz", "is not a hexadecimal number"},
      {"", "is not a hexadecimal number"},
      {" 5", "is not a hexadecimal number"},
      {"5 x", "is not a hexadecimal number"},
      {"-1", "is not a hexadecimal number"},
      {"ffffffffffffffffff", "exceeds the"},
      {"10000000000000000", "exceeds the"},
      {"fffffffffffffff0", "exceeds the"},
      {std::string(5000, '1'), "chunk-size line exceeds 4096 bytes"},
  };
  for (const Case& c : cases) {
    const Outcome o = read_all(kSseHead + c.size_line + "\r\ndata");
    EXPECT_NE(o.error.find(c.says), std::string::npos)
        << c.size_line.substr(0, 20) << ": " << o.error;
    EXPECT_FALSE(o.done);
  }
  const Outcome ext = read_all(kSseHead + std::string("9 ;x=y\r\ndata: a\n\n\r\n0\r\n\r\n"));
  EXPECT_EQ(ext.error, "");
  EXPECT_TRUE(ext.done);
  const Outcome wrong = read_all(kSseHead + std::string("3\r\ndata: a\n\n\r\n0\r\n\r\n"));
  EXPECT_NE(wrong.error.find("chunk size is wrong"), std::string::npos) << wrong.error;
}

TEST(SseReader, AFailedReaderStaysFailed) {
  SseReader r;
  const SseStep bad = r.feed("HTTP/2 200\r\n\r\n");
  EXPECT_NE(bad.error, "");
  EXPECT_TRUE(r.failed());
  const SseStep again = r.feed(std::string(kSseHead) + chunked({"data: x\n\n"}));
  EXPECT_EQ(again.error, bad.error);
  EXPECT_TRUE(again.events.empty());
  EXPECT_EQ(r.finish().error, bad.error);
}

}  // namespace
}  // namespace batchscope::test

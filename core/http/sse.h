// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// SseReader: reads one HTTP/1.1 response as its bytes arrive, for the
// streaming load client (`batchscope bench --target URL` against a
// generation route). A text/event-stream answer is split into Server-Sent
// Events as they complete, so each can be timestamped on arrival (time to
// first token, inter-token latency); any other answer (a 429 JSON error, a
// non-streamed completion) is kept whole and handed over at its end.
//
// Framing follows parse_response (http_response.h), whose head parser it
// shares: interim 1xx heads are skipped; 204 and 304 have no body; a
// Transfer-Encoding ending in chunked is decoded incrementally; otherwise
// Content-Length, or the body runs to the end of the connection (finish()).
// Events follow the WHATWG EventSource rules: lines end with CRLF, LF or
// CR (also split across reads); a blank line ends an event; ':' starts a
// comment; the data lines of one event are joined with '\n'; fields other
// than data are ignored; an event the stream ends inside is discarded.
//
// The result never depends on how the bytes were split into feed() calls:
// the same events, in order, the same end or the same error.
//
// Hostile input: everything is outside input. The head (each interim head
// too) and chunked trailers may not exceed max_head_bytes; one event (its
// data so far plus the line being read) max_event_bytes; a body that is
// not an event stream max_body_bytes; the whole response as received
// (framing included) max_total_bytes. A declared size past a limit, such
// as a chunk size near 2^64, is refused when declared, before its bytes
// arrive; nothing is allocated from a size the peer sent. Errors are
// values with a sentence, never exceptions; a failed reader stays failed.
//
// Thread-safety: none; one reader per response, used by one thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace batchscope {

struct HttpResponseHead;

struct SseLimits {
  size_t max_head_bytes = 64 * 1024;             // status line + headers + blank line
  size_t max_event_bytes = size_t{1} << 20;      // one event's data and its current line
  size_t max_body_bytes = size_t{16} << 20;      // a body kept whole (not an event stream)
  uint64_t max_total_bytes = uint64_t{1} << 30;  // the response as received
};

// What one feed() (or finish()) produced.
struct SseStep {
  std::vector<std::string> events;  // data of each event completed, in order
  size_t used = 0;                  // leading bytes of the input that belong to this response
  bool done = false;                // the response has ended
  int status = 0;                   // the final status, once its head has arrived; else 0
  std::string body;                 // not an event stream: the whole body, in the step that ends it
  std::string error;                // not empty: malformed or past a limit; close the connection
};

class SseReader {
 public:
  explicit SseReader(SseLimits limits = {});

  // The next bytes received. Bytes after the end of the response are not
  // used (SseStep::used says where it ended); after the end or an error
  // nothing more is read.
  SseStep feed(std::string_view bytes);
  // The server closed the connection: ends a body that runs to the close,
  // and is an error anywhere else.
  SseStep finish();

  int status() const { return status_; }               // 0 until the final head
  bool event_stream() const { return event_stream_; }  // Content-Type text/event-stream
  bool keep_alive() const { return keep_alive_; }      // false: the server closes after this
  bool done() const { return phase_ == Phase::kDone; }
  bool failed() const { return phase_ == Phase::kFailed; }

 private:
  enum class Phase {
    kHead,       // status line and headers, a line at a time
    kChunkSize,  // a chunk-size line
    kChunkData,  // remaining_ bytes of a chunk's data
    kChunkEnd,   // the CRLF after a chunk's data
    kTrailers,   // after the last chunk, until the blank line
    kLength,     // remaining_ bytes of a Content-Length body
    kToEof,      // the body runs until the server closes
    kDone,
    kFailed,
  };

  // Each returns bytes consumed from `in`; on an error it sets phase_.
  size_t read_head(std::string_view in, SseStep& out);
  size_t read_chunk_size(std::string_view in, SseStep& out);
  size_t read_chunk_data(std::string_view in, SseStep& out);
  size_t read_chunk_end(std::string_view in, SseStep& out);
  size_t read_trailers(std::string_view in, SseStep& out);
  size_t read_length(std::string_view in, SseStep& out);
  void start_body(const HttpResponseHead& h, SseStep& out);
  void end(SseStep& out);

  // Decoded body bytes: events, or the kept body.
  void body_bytes(std::string_view in, SseStep& out);
  void sse_line(SseStep& out);
  void fail(SseStep& out, std::string message);

  SseLimits limits_;
  Phase phase_ = Phase::kHead;
  std::string error_;
  uint64_t total_ = 0;      // bytes of this response used so far
  std::string line_;        // a head, chunk-size or trailer line being assembled
  size_t head_bytes_ = 0;   // of the head (or trailers) being read
  size_t line_start_ = 0;   // where the current head line starts in line_
  uint64_t remaining_ = 0;  // of a chunk or a Content-Length body
  bool chunk_cr_ = false;   // kChunkEnd: the CR has been seen

  int status_ = 0;
  bool event_stream_ = false;
  bool keep_alive_ = true;
  std::string body_;

  // The event being read.
  std::string event_line_;
  std::string data_;
  bool after_cr_ = false;   // the last line ended with CR: a following LF belongs to it
  bool first_line_ = true;  // a UTF-8 BOM may start the stream
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// HttpParser: an incremental HTTP/1.1 request parser for the listener.
//
// The listener appends whatever the socket delivered and then calls next()
// until it returns std::monostate. Bytes may arrive in any split (one byte at a
// time, or many pipelined requests at once); the result is the same. Framing
// follows RFC 9112: Content-Length or chunked Transfer-Encoding, bare LF
// accepted as a line end, leading empty lines ignored. Framing that two
// parsers could read differently (both body headers, disagreeing lengths, a
// bare CR, obsolete line folding) is rejected rather than guessed at, because
// a proxy in front of us may have guessed otherwise (request smuggling).
//
// Under load: each line is found with memchr and parsed once, when its LF
// arrives, on string_views into one internal buffer; so a bad request line is
// refused before its headers come. Consumed bytes are skipped with an offset;
// the buffer is cleared when drained and compacted only when the live tail is
// no larger than the consumed part, so each byte moves at most about once.
// Allocations per request are those of the returned HttpRequest (its strings
// and header vector). A drained buffer that grew past 64 KiB is released so
// idle keep-alive connections do not pin memory.
//
// Hostile input: limits are checked before memory is spent. The request line
// plus headers may not exceed max_header_bytes: 431 as soon as the head so far
// plus an unfinished line reach the limit, without waiting for the rest. A
// Content-Length over max_body_bytes is refused (413) right after the headers,
// before any body byte is buffered; a chunked body fails (413) on the
// chunk-size line that would take it past the limit. Body bytes move from the
// buffer into the request as they arrive, so while the caller calls next()
// after every append(), the buffer holds at most max_header_bytes (or a 4 KiB
// chunk-size line) plus one append(). Leading empty lines count towards the
// header limit, so a peer cannot hold a connection with CRLFs alone.
//
// Thread-safety: none. One parser per connection, used on the owner thread
// (the I/O thread) only.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace batchscope {

struct HttpLimits {
  // Request line + header lines + the blank line, CRLFs included. Chunked
  // trailers have a budget of the same size.
  size_t max_header_bytes = 16 * 1024;
  // Decoded body size, for Content-Length and chunked bodies alike.
  size_t max_body_bytes = 16u * 1024 * 1024;
  // Header lines per request (431 beyond). Tiny lines ("a:\n") would
  // otherwise turn 16 KiB of input into ~350 KiB of stored pairs.
  size_t max_header_fields = 256;
};

struct HttpRequest {
  std::string method;     // as sent, e.g. "POST" (case-sensitive per RFC 9110)
  std::string target;     // e.g. "/v2/models/mlp/infer?x=1" (raw, not decoded)
  int version_minor = 1;  // HTTP/1.x
  // In arrival order, duplicates kept. Names lowercased, values trimmed of
  // spaces and tabs.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;        // decoded (chunk framing removed)
  bool keep_alive = true;  // from the version and the Connection header

  // The first header with this (lowercase) name; "" when absent.
  std::string_view header(std::string_view lowercase_name) const;
  // The target up to the query string ('?') or fragment ('#').
  std::string_view path() const;
};

// Where the message being read stands, for the listener's read deadlines.
enum class HttpPhase {
  kIdle,  // between messages: nothing of the next one has arrived
  kHead,  // its request line and headers are arriving
  kBody,  // its body (or chunked trailers) is arriving
};

struct HttpParseError {
  // 400 bad syntax or framing, 413 body too large, 431 headers too large,
  // 501 unsupported Transfer-Encoding, 505 not HTTP/1.x.
  int status = 400;
  std::string message;  // a sentence for the client, e.g. "headers exceed 16384 bytes"
};

class HttpParser {
 public:
  explicit HttpParser(HttpLimits limits = {});

  // Appends bytes received from the socket. Ignored once failed().
  void append(const char* data, size_t n);

  // The next complete request, an error, or std::monostate when more bytes
  // are needed. Call repeatedly until std::monostate: pipelined requests come
  // out one per call, in order. After an error the parser stays failed and
  // returns the same error again; the connection is to be closed.
  std::variant<std::monostate, HttpRequest, HttpParseError> next();

  bool failed() const { return state_ == State::kFailed; }

  // True once for each request whose headers asked `Expect: 100-continue`
  // and whose body has not arrived: the listener then answers
  // "100 Continue" so that a client like curl sends the body at once
  // instead of waiting a second for permission.
  bool take_continue() {
    const bool c = continue_pending_;
    continue_pending_ = false;
    return c;
  }
  // Input bytes held and not yet parsed. Body bytes already moved into the
  // request being assembled are not counted; 0 after a failure.
  size_t buffered() const { return buf_.size() - pos_; }

  HttpPhase phase() const;
  // Decoded body bytes of the message being read, so far.
  uint64_t body_bytes() const { return cur_.body.size(); }
  // Requests completed so far: a change tells a new message apart from the
  // previous one when both are in the same phase.
  uint64_t messages() const { return messages_; }

 private:
  enum class State {
    kStart,      // before a request line; skipping empty lines
    kHead,       // reading the request line and headers, a line at a time
    kBody,       // Content-Length body; remaining_ bytes to go
    kChunkSize,  // expecting a chunk-size line
    kChunkData,  // inside a chunk; remaining_ bytes to go
    kChunkEnd,   // expecting the CRLF after a chunk's data
    kTrailers,   // after the last chunk, until the blank line
    kFailed,
  };
  // What a step of the state machine achieved.
  enum class Step { kNeedMore, kProgress, kDone, kError };

  Step skip_empty_lines();
  Step read_head_line();
  Step parse_request_line(std::string_view line);
  Step parse_header_line(std::string_view line);
  Step parse_content_length(std::string_view value);
  Step finish_head();
  Step read_body();
  Step read_chunk_size();
  Step read_chunk_data();
  Step read_chunk_end();
  Step read_trailers();

  // Length of the next line (LF included) starting at pos_, searching at most
  // max_len bytes and resuming where the last search stopped. 0: no LF yet;
  // std::nullopt: no LF within max_len bytes.
  std::optional<size_t> find_line(size_t max_len);

  Step fail(int status, std::string message);
  HttpRequest take_request();
  void reset_message_state();

  HttpLimits limits_;
  std::string buf_;
  size_t pos_ = 0;  // start of unconsumed bytes in buf_
  State state_ = State::kStart;

  // Relative to pos_, so compaction need not adjust it.
  size_t scan_ = 0;  // bytes after pos_ already searched for LF

  size_t head_bytes_ = 0;     // head consumed so far, leading empty lines included
  size_t trailer_bytes_ = 0;  // trailer bytes so far, charged to their own header budget
  uint64_t remaining_ = 0;    // body or chunk bytes still to come

  // Framing facts gathered while parsing the headers of cur_.
  bool has_content_length_ = false;
  uint64_t content_length_ = 0;
  std::string content_length_text_;  // as sent, for messages
  bool has_transfer_encoding_ = false;
  bool chunked_ = false;
  bool unsupported_coding_ = false;
  std::string coding_text_;  // the first unsupported coding, for the 501 message
  bool connection_close_ = false;
  bool connection_keep_alive_ = false;

  HttpRequest cur_;
  uint64_t messages_ = 0;
  HttpParseError error_;
  bool continue_pending_ = false;
};

}  // namespace batchscope

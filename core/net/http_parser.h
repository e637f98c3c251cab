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
// Under load: parsing is a few memchr calls plus one pass over each header
// line, on string_views into one internal buffer. Consumed bytes are skipped
// with an offset; the buffer is cleared when drained and compacted only when
// the live tail is no larger than the consumed head, so each byte is moved at
// most about once. Allocations per request are those of the returned
// HttpRequest (its strings and header vector). A drained buffer that grew past
// 64 KiB is released so idle connections do not pin memory.
//
// Hostile input: limits are checked before memory is spent. The request line
// plus headers may not exceed max_header_bytes (431 as soon as that many bytes
// are held without the blank line); a Content-Length over max_body_bytes is
// refused (413) right after the headers, before any body byte is buffered; a
// chunked body fails (413) on the chunk-size line that would take it past the
// limit. Body bytes move from the buffer into the request as they arrive, so
// the buffer holds at most max_header_bytes plus one append() while the caller
// calls next() after every append(). Leading empty lines count towards the
// header limit, so a peer cannot keep a connection busy with CRLFs alone.
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
  // Bytes received and not yet consumed into a request (0 after a failure).
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  enum class State {
    kStart,       // before a request line; skipping empty lines
    kHead,        // looking for the blank line that ends the headers
    kBody,        // Content-Length body; remaining_ bytes to go
    kChunkSize,   // expecting a chunk-size line
    kChunkData,   // inside a chunk; remaining_ bytes to go
    kChunkEnd,    // expecting the CRLF after a chunk's data
    kTrailers,    // after the last chunk, until the blank line
    kFailed,
  };
  // What a step of the state machine achieved.
  enum class Step { kNeedMore, kProgress, kDone, kError };

  Step skip_empty_lines();
  Step find_head_end(size_t& head_len);
  Step parse_head(std::string_view head);
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

  // Search state, relative to pos_, so compaction need not adjust them.
  size_t scan_ = 0;        // bytes after pos_ already searched for LF
  size_t line_start_ = 0;  // start of the current header line (kHead)

  size_t skipped_ = 0;        // leading empty-line bytes, charged to the header limit
  size_t trailer_bytes_ = 0;  // trailer bytes so far, charged to their own header budget
  uint64_t remaining_ = 0;    // body or chunk bytes still to come

  // Framing facts gathered while parsing the headers of cur_.
  bool has_content_length_ = false;
  uint64_t content_length_ = 0;
  std::string_view content_length_text_;  // into buf_, valid until the head is consumed
  bool has_transfer_encoding_ = false;
  bool chunked_ = false;
  bool unsupported_coding_ = false;
  std::string_view coding_text_;  // into buf_, like content_length_text_
  bool connection_close_ = false;
  bool connection_keep_alive_ = false;

  HttpRequest cur_;
  HttpParseError error_;
};

}  // namespace batchscope

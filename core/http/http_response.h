// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// parse_response: one HTTP/1.x response at the front of a buffer, for the
// load client. `batchscope bench --target URL` reads answers from any server,
// so everything here is outside input: malformed or hostile bytes are refused
// with a message, never thrown at or trusted for an allocation size.
//
// Stateless: the client appends what recv() gave and calls it again on the
// whole buffer; std::monostate means more bytes are needed. The answer for a
// buffer never depends on how its bytes arrived: a prefix of a complete
// response asks for more, and a prefix of a malformed one asks for more or is
// refused. Framing follows RFC 9112 section 6.3: 1xx, 204 and 304 have no
// body; Transfer-Encoding ending in chunked is decoded; any other
// Transfer-Encoding, or neither header, runs to the end of the connection
// (`eof`); otherwise Content-Length, where values that differ are refused.
// Bare LF is accepted as a line end.
//
// Under load: a Content-Length response costs a scan of its head per call,
// whatever the body's size; a chunked one a walk over its chunk-size lines,
// and its body is copied once, when complete.
//
// Hostile input: the head (and chunked trailers) may not exceed
// max_head_bytes, and the whole response as received (head, body, chunk
// framing, trailers) max_response_bytes. A declared size past the limit is
// refused at once, before its bytes arrive; so a caller that parses after
// each read holds at most max_response_bytes plus one read.
//
// Thread-safety: a free function without shared state.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace batchscope {

struct HttpResponseLimits {
  // Status line + header lines + the blank line; chunked trailers likewise.
  size_t max_head_bytes = 64 * 1024;
  // One response as received, framing included.
  size_t max_response_bytes = 64u * 1024 * 1024;
};

// A response as a client received it (the server side sends HttpResponse,
// net/http_server.h; one name for both broke the one-definition rule).
struct ReceivedResponse {
  int status = 0;          // 100..999
  std::string body;        // chunk framing removed
  bool keep_alive = true;  // false: the server closes the connection after this response
  size_t size = 0;         // bytes it took at the front of the buffer
};

struct HttpResponseError {
  std::string message;  // a sentence, e.g. "status line 'FOO' is not 'HTTP/1.1 200 OK'"
};

using HttpResponseParse = std::variant<std::monostate, ReceivedResponse, HttpResponseError>;

// What a response head says about framing and the connection; the head
// parser parse_response uses, shared with the incremental reader in sse.h.
struct HttpResponseHead {
  int status = 0;  // 100..999
  int version_minor = 1;
  size_t size = 0;  // status line, headers and the blank line
  bool has_length = false;
  uint64_t length = 0;  // saturated: a value past 2^64 - 1 reads as 2^64 - 1
  std::string length_text;
  bool has_transfer_encoding = false;
  bool chunked = false;      // the last transfer coding is chunked
  bool close = false;        // Connection: close
  bool keep_alive = false;   // Connection: keep-alive (matters for HTTP/1.0)
  std::string content_type;  // as sent, trimmed; the last one when repeated
};

// The head at the front of `in` (std::monostate while it is incomplete), or
// an error once it is malformed or longer than max_head_bytes.
std::variant<std::monostate, HttpResponseHead, HttpResponseError> parse_response_head(
    std::string_view in, size_t max_head_bytes);

// `eof`: the server closed the connection after these bytes, which ends a
// body framed by neither Content-Length nor chunked. An error means the
// connection can no longer be read and is to be closed.
HttpResponseParse parse_response(std::string_view in, bool eof = false,
                                 const HttpResponseLimits& limits = {});

}  // namespace batchscope

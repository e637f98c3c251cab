// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/http_parser.h"

#include "common/text_out.h"
#include "http/http_syntax.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <limits>

namespace batchscope {
namespace {

using namespace http;  // the character rules of http_syntax.h

// A chunk-size line is digits plus optional extensions; nobody legitimate
// sends kilobytes of extensions, and the line is buffered until its LF.
// A drained buffer larger than this is released rather than kept for reuse,
// so one large upload does not pin memory on an idle keep-alive connection.
constexpr size_t kKeepCapacityBytes = size_t{64} * 1024;

// Peer input echoed into a message: short, printable, quoted, so an error
// response never carries control bytes or kilobytes of junk back.
std::string excerpt(std::string_view s) { return quoted_excerpt(s, 40); }

}  // namespace

std::string_view HttpRequest::header(std::string_view lowercase_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lowercase_name) return value;
  }
  return {};
}

std::string_view HttpRequest::path() const {
  const std::string_view t = target;
  return t.substr(0, t.find_first_of("?#"));
}

HttpParser::HttpParser(HttpLimits limits) : limits_(limits) {}

void HttpParser::append(const char* data, size_t n) {
  if (state_ == State::kFailed || n == 0) return;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ >= buf_.size() - pos_) {
    // The live tail is no longer than what was consumed, so moving it costs
    // no more than the bytes already parsed: amortised O(1) per byte.
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(data, n);
}

std::variant<std::monostate, HttpRequest, HttpParseError> HttpParser::next() {
  for (;;) {
    Step step = Step::kNeedMore;
    switch (state_) {
      case State::kFailed: return error_;
      case State::kStart: step = skip_empty_lines(); break;
      case State::kHead: step = read_head_line(); break;
      case State::kBody: step = read_body(); break;
      case State::kChunkSize: step = read_chunk_size(); break;
      case State::kChunkData: step = read_chunk_data(); break;
      case State::kChunkEnd: step = read_chunk_end(); break;
      case State::kTrailers: step = read_trailers(); break;
    }
    switch (step) {
      case Step::kProgress: continue;
      case Step::kDone: return take_request();
      case Step::kError: return error_;
      case Step::kNeedMore:
        if (pos_ == buf_.size()) {
          // Drained: reuse the storage without a copy, or release it if one
          // large message inflated it.
          if (buf_.capacity() > kKeepCapacityBytes) {
            std::string().swap(buf_);
          } else {
            buf_.clear();
          }
          pos_ = 0;
        }
        return std::monostate{};
    }
  }
}

HttpParser::Step HttpParser::fail(int status, std::string message) {
  state_ = State::kFailed;
  error_ = HttpParseError{status, std::move(message)};
  // The connection is closing; nothing buffered will be parsed again.
  std::string().swap(buf_);
  pos_ = 0;
  cur_ = HttpRequest{};
  return Step::kError;
}

void HttpParser::reset_message_state() {
  state_ = State::kStart;
  scan_ = 0;
  head_bytes_ = 0;
  trailer_bytes_ = 0;
  remaining_ = 0;
  has_content_length_ = false;
  content_length_ = 0;
  content_length_text_.clear();
  has_transfer_encoding_ = false;
  chunked_ = false;
  unsupported_coding_ = false;
  coding_text_.clear();
  connection_close_ = false;
  connection_keep_alive_ = false;
}

HttpPhase HttpParser::phase() const {
  switch (state_) {
    case State::kStart: return pos_ < buf_.size() ? HttpPhase::kHead : HttpPhase::kIdle;
    case State::kHead: return HttpPhase::kHead;
    case State::kFailed: return HttpPhase::kIdle;
    default: return HttpPhase::kBody;
  }
}

HttpRequest HttpParser::take_request() {
  ++messages_;
  HttpRequest out = std::move(cur_);
  cur_ = HttpRequest{};
  reset_message_state();
  return out;
}

std::optional<size_t> HttpParser::find_line(size_t max_len) {
  const size_t avail = buf_.size() - pos_;
  const size_t end = std::min(avail, max_len);
  if (scan_ < end) {
    const char* base = buf_.data() + pos_;
    const void* lf = std::memchr(base + scan_, '\n', end - scan_);
    if (lf != nullptr) {
      scan_ = 0;
      return static_cast<size_t>(static_cast<const char*>(lf) - base) + 1;
    }
    scan_ = end;
  }
  if (avail >= max_len) return std::nullopt;
  return 0;
}

HttpParser::Step HttpParser::skip_empty_lines() {
  while (pos_ < buf_.size()) {
    size_t n = 0;
    if (buf_[pos_] == '\n') {
      n = 1;
    } else if (buf_[pos_] == '\r') {
      if (pos_ + 1 == buf_.size()) return Step::kNeedMore;
      if (buf_[pos_ + 1] != '\n') break;  // a bare CR; the request line check rejects it
      n = 2;
    } else {
      break;
    }
    pos_ += n;
    head_bytes_ += n;
    if (head_bytes_ >= limits_.max_header_bytes) {
      return fail(400, "empty lines before the request line reach the " +
                           std::to_string(limits_.max_header_bytes) + "-byte header limit");
    }
  }
  if (pos_ == buf_.size()) return Step::kNeedMore;
  state_ = State::kHead;
  return Step::kProgress;
}

HttpParser::Step HttpParser::read_head_line() {
  // Each line is parsed once, when its LF arrives, so a bad request line is
  // refused without waiting for the headers. head_bytes_ (leading empty lines
  // included) plus the line being searched may not pass the limit: holding
  // that many bytes without an LF means the head cannot fit, so fail now
  // rather than wait for bytes we would refuse.
  const std::optional<size_t> len = find_line(limits_.max_header_bytes - head_bytes_);
  if (!len) {
    return fail(431, "request line and headers exceed " + std::to_string(limits_.max_header_bytes) +
                         " bytes");
  }
  if (*len == 0) return Step::kNeedMore;
  const std::string_view line = strip_cr(std::string_view(buf_).substr(pos_, *len - 1));
  pos_ += *len;
  head_bytes_ += *len;
  // The request line is never empty here: skip_empty_lines consumed those.
  if (line.empty()) return finish_head();
  return cur_.method.empty() ? parse_request_line(line) : parse_header_line(line);
}

HttpParser::Step HttpParser::parse_request_line(std::string_view line) {
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) {
    return fail(400, "request line " + excerpt(line) + " is not 'METHOD target HTTP/1.1'");
  }
  const std::string_view method = line.substr(0, sp1);
  if (!is_token(method)) {
    return fail(400, "request method " + excerpt(method) + " is empty or has invalid characters");
  }
  const std::string_view rest = line.substr(sp1 + 1);
  const size_t sp2 = rest.find(' ');
  if (sp2 == std::string_view::npos) {
    return fail(400, "request line " + excerpt(line) + " has no HTTP version");
  }
  const std::string_view target = rest.substr(0, sp2);
  if (target.empty()) {
    return fail(400, "request line " + excerpt(line) + " has an empty target or extra spaces");
  }
  for (char c : target) {
    if (byte(c) <= 0x20 || byte(c) == 0x7f) {
      return fail(400, "request target " + excerpt(target) + " contains a control character");
    }
  }
  const std::string_view version = rest.substr(sp2 + 1);
  if (version.size() == 8 && version.substr(0, 7) == "HTTP/1." && version[7] >= '0' &&
      version[7] <= '9') {
    cur_.version_minor = version[7] - '0';
  } else if (looks_like_http_version(version) && version.substr(5, version.find('.') - 5) != "1") {
    return fail(505, "HTTP version " + excerpt(version) + " is not supported; use HTTP/1.1");
  } else {
    return fail(400, "HTTP version " + excerpt(version) + " is malformed; expected 'HTTP/1.1'");
  }
  cur_.method.assign(method);
  cur_.target.assign(target);
  cur_.headers.reserve(8);  // one allocation covers typical requests
  return Step::kProgress;
}

HttpParser::Step HttpParser::parse_header_line(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    return fail(400,
                "obsolete line folding (a header line starting with whitespace) is not "
                "supported; send each header on one line");
  }
  // One pass finds the colon and validates the name: the first non-token
  // byte must be the colon (RFC 9112 forbids space before it).
  size_t colon = 0;
  while (colon < line.size() && kTchar[byte(line[colon])]) ++colon;
  if (colon == 0 || colon == line.size() || line[colon] != ':') {
    const size_t real_colon = line.find(':');
    if (real_colon == std::string_view::npos) {
      return fail(400, "header line " + excerpt(line) + " has no colon");
    }
    return fail(400, "header name " + excerpt(line.substr(0, real_colon)) +
                         " is empty or has invalid characters (no space before the colon)");
  }
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = trim(line.substr(colon + 1));
  if (!is_valid_value(value)) {
    return fail(400, "header " + excerpt(name) + " contains a control character");
  }

  if (cur_.headers.size() >= limits_.max_header_fields) {
    return fail(431, "more than " + std::to_string(limits_.max_header_fields) + " header fields");
  }
  auto& [stored_name, stored_value] = cur_.headers.emplace_back();
  stored_name.resize(name.size());
  for (size_t i = 0; i < name.size(); ++i) stored_name[i] = kLower[byte(name[i])];
  stored_value.assign(value);
  const std::string_view lname = stored_name;

  if (lname == "content-length") return parse_content_length(value);
  if (lname == "transfer-encoding") {
    has_transfer_encoding_ = true;
    bool any = false;
    bool twice = false;
    for_each_list_item(value, [&](std::string_view coding) {
      any = true;
      if (unsupported_coding_) return;
      if (iequals(coding, "chunked")) {
        twice = twice || chunked_;
        chunked_ = true;
      } else {
        // Covers "chunked, gzip" too: chunked must come last, and no other
        // coding is decoded here anyway.
        unsupported_coding_ = true;
        coding_text_.assign(coding);
      }
    });
    if (!any) return fail(400, "Transfer-Encoding is empty; expected 'chunked'");
    if (twice) return fail(400, "Transfer-Encoding applies 'chunked' more than once");
  } else if (lname == "connection") {
    for_each_list_item(value, [&](std::string_view option) {
      if (iequals(option, "close")) connection_close_ = true;
      if (iequals(option, "keep-alive")) connection_keep_alive_ = true;
    });
  }
  return Step::kProgress;
}

HttpParser::Step HttpParser::parse_content_length(std::string_view value) {
  // A list of identical values ("5, 5") is what a proxy makes of duplicated
  // headers; RFC 9110 lets us accept it. Values that differ are ambiguous.
  bool any = false;
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view item = trim(value.substr(0, comma));
    value.remove_prefix(comma == std::string_view::npos ? value.size() : comma + 1);
    if (item.empty()) continue;
    if (!is_digits(item)) {
      return fail(400, "Content-Length " + excerpt(item) + " is not a non-negative decimal number");
    }
    // Saturate: any length that does not fit is over the limit all the same.
    uint64_t n = 0;
    for (char c : item) {
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (n > (std::numeric_limits<uint64_t>::max() - d) / 10) {
        n = std::numeric_limits<uint64_t>::max();
        break;
      }
      n = n * 10 + d;
    }
    if (has_content_length_ && n != content_length_) {
      return fail(400, "conflicting Content-Length values " + excerpt(content_length_text_) +
                           " and " + excerpt(item));
    }
    has_content_length_ = true;
    content_length_ = n;
    content_length_text_.assign(item);
    any = true;
  }
  if (!any) return fail(400, "Content-Length is empty; expected a non-negative decimal number");
  return Step::kProgress;
}

HttpParser::Step HttpParser::finish_head() {
  if (has_content_length_ && has_transfer_encoding_) {
    return fail(400, "both Content-Length and Transfer-Encoding are present; send only one");
  }
  if (unsupported_coding_) {
    return fail(
        501, "Transfer-Encoding " + excerpt(coding_text_) + " is not supported; only 'chunked' is");
  }
  if (has_content_length_ && content_length_ > limits_.max_body_bytes) {
    return fail(413, "Content-Length " + excerpt(content_length_text_) + " exceeds the " +
                         std::to_string(limits_.max_body_bytes) + "-byte body limit");
  }
  cur_.keep_alive =
      cur_.version_minor >= 1 ? !connection_close_ : connection_keep_alive_ && !connection_close_;
  // RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
  // framing as far as an intermediary knows; serve it, then close.
  if (has_transfer_encoding_ && cur_.version_minor == 0) cur_.keep_alive = false;

  const bool body_follows = chunked_ || (has_content_length_ && content_length_ > 0);
  if (body_follows && cur_.version_minor >= 1 && pos_ == buf_.size()) {
    const std::string_view expect = cur_.header("expect");
    continue_pending_ =
        expect.size() == 12 &&
        std::equal(expect.begin(), expect.end(), "100-continue",
                   [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  }
  if (chunked_) {
    state_ = State::kChunkSize;
    return Step::kProgress;
  }
  if (has_content_length_ && content_length_ > 0) {
    remaining_ = content_length_;
    state_ = State::kBody;
    return Step::kProgress;
  }
  return Step::kDone;
}

HttpParser::Step HttpParser::read_body() {
  const size_t avail = buf_.size() - pos_;
  if (avail == 0) return Step::kNeedMore;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, avail));
  if (cur_.body.empty()) {
    // Reserve what is here (all of a small body), not the declared length:
    // a peer that declares 16 MiB and sends nothing must not cost 16 MiB.
    cur_.body.reserve(n);
  }
  cur_.body.append(buf_, pos_, n);
  pos_ += n;
  remaining_ -= n;
  return remaining_ == 0 ? Step::kDone : Step::kNeedMore;
}

HttpParser::Step HttpParser::read_chunk_size() {
  const std::optional<size_t> len = find_line(kMaxChunkLineBytes);
  if (!len) {
    return fail(400, "chunk-size line exceeds " + std::to_string(kMaxChunkLineBytes) + " bytes");
  }
  if (*len == 0) return Step::kNeedMore;
  const std::string_view line = strip_cr(std::string_view(buf_).substr(pos_, *len - 1));

  size_t i = 0;
  uint64_t size = 0;
  bool too_big = false;
  for (; i < line.size(); ++i) {
    const char c = line[i];
    int d = 0;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      break;
    }
    // Saturate instead of overflowing; anything past the limit is refused.
    if (size > limits_.max_body_bytes || size > (std::numeric_limits<uint64_t>::max() >> 4)) {
      too_big = true;
    } else {
      size = size * 16 + static_cast<uint64_t>(d);
    }
  }
  // Whitespace is allowed only before an extension's ';' (RFC 9112 BWS).
  std::string_view tail = line.substr(i);
  while (!tail.empty() && (tail.front() == ' ' || tail.front() == '\t')) tail.remove_prefix(1);
  const bool tail_ok = i == line.size() || (!tail.empty() && tail.front() == ';');
  if (i == 0 || !tail_ok) {
    return fail(400, "chunk size " + excerpt(line) + " is not a hexadecimal number");
  }
  for (char c : tail) {
    if (is_bad_value_char(c)) return fail(400, "chunk extension contains a control character");
  }
  if (too_big || size > limits_.max_body_bytes - cur_.body.size()) {
    return fail(413, "chunked body exceeds the " + std::to_string(limits_.max_body_bytes) +
                         "-byte body limit");
  }
  pos_ += *len;
  if (size == 0) {
    state_ = State::kTrailers;
  } else {
    remaining_ = size;
    state_ = State::kChunkData;
  }
  return Step::kProgress;
}

HttpParser::Step HttpParser::read_chunk_data() {
  const size_t avail = buf_.size() - pos_;
  if (avail == 0) return Step::kNeedMore;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, avail));
  cur_.body.append(buf_, pos_, n);
  pos_ += n;
  remaining_ -= n;
  if (remaining_ != 0) return Step::kNeedMore;
  state_ = State::kChunkEnd;
  return Step::kProgress;
}

HttpParser::Step HttpParser::read_chunk_end() {
  const size_t avail = buf_.size() - pos_;
  if (avail == 0) return Step::kNeedMore;
  size_t n = 0;
  if (buf_[pos_] == '\n') {
    n = 1;
  } else if (buf_[pos_] == '\r') {
    if (avail < 2) return Step::kNeedMore;
    if (buf_[pos_ + 1] == '\n') n = 2;
  }
  if (n == 0) {
    return fail(400, "chunk data is not followed by CRLF; the chunk size does not match the data");
  }
  pos_ += n;
  state_ = State::kChunkSize;
  return Step::kProgress;
}

HttpParser::Step HttpParser::read_trailers() {
  // Trailers are read and dropped: nothing here needs them, and merging them
  // into the headers would let them override framing already acted on.
  const size_t budget = limits_.max_header_bytes - trailer_bytes_;
  const std::optional<size_t> len = find_line(budget);
  if (!len) {
    return fail(431,
                "chunked trailers exceed " + std::to_string(limits_.max_header_bytes) + " bytes");
  }
  if (*len == 0) return Step::kNeedMore;
  const std::string_view line = strip_cr(std::string_view(buf_).substr(pos_, *len - 1));
  pos_ += *len;
  if (line.empty()) return Step::kDone;
  trailer_bytes_ += *len;
  return Step::kProgress;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/sse.h"
#include "http/http_syntax.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <variant>

#include "http/http_response.h"

namespace batchscope {
namespace {

// A chunk-size line is hex digits plus optional extensions; nobody
// legitimate sends kilobytes of extensions.
constexpr size_t kNpos = std::string_view::npos;

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "text/event-stream; charset=utf-8" and the like, in any case.
bool is_event_stream(std::string_view content_type) {
  const std::string_view type = trim(content_type.substr(0, content_type.find(';')));
  constexpr std::string_view kType = "text/event-stream";
  if (type.size() != kType.size()) return false;
  for (size_t i = 0; i < type.size(); ++i) {
    if (lower(type[i]) != kType[i]) return false;
  }
  return true;
}

// A line assembled in `line` (its LF included) without its line end.
std::string_view without_line_end(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

SseReader::SseReader(SseLimits limits) : limits_(limits) {}

void SseReader::fail(SseStep&, std::string message) {
  phase_ = Phase::kFailed;
  error_ = std::move(message);
}

SseStep SseReader::feed(std::string_view bytes) {
  SseStep out;
  // Past the total limit nothing is read: the bytes up to it are read as
  // they would be in any other split, then the rest is refused.
  const uint64_t room = limits_.max_total_bytes - total_;
  const std::string_view in =
      bytes.substr(0, static_cast<size_t>(std::min<uint64_t>(room, bytes.size())));
  size_t used = 0;
  while (used < in.size() && phase_ != Phase::kDone && phase_ != Phase::kFailed) {
    const std::string_view rest = in.substr(used);
    switch (phase_) {
      case Phase::kHead: used += read_head(rest, out); break;
      case Phase::kChunkSize: used += read_chunk_size(rest, out); break;
      case Phase::kChunkData: used += read_chunk_data(rest, out); break;
      case Phase::kChunkEnd: used += read_chunk_end(rest, out); break;
      case Phase::kTrailers: used += read_trailers(rest, out); break;
      case Phase::kLength: used += read_length(rest, out); break;
      case Phase::kToEof:
        total_ += rest.size();
        used += rest.size();
        body_bytes(rest, out);
        break;
      case Phase::kDone:
      case Phase::kFailed: break;
    }
  }
  if (used == in.size() && in.size() < bytes.size() && phase_ != Phase::kDone &&
      phase_ != Phase::kFailed) {
    fail(out, "the response exceeds " + std::to_string(limits_.max_total_bytes) + " bytes");
  }
  out.used = used;
  out.done = phase_ == Phase::kDone;
  out.status = status_;
  if (phase_ == Phase::kFailed) out.error = error_;
  return out;
}

SseStep SseReader::finish() {
  SseStep out;
  if (phase_ == Phase::kToEof) {
    end(out);
  } else if (phase_ == Phase::kHead && total_ == 0) {
    fail(out, "the server closed the connection without answering");
  } else if (phase_ != Phase::kDone && phase_ != Phase::kFailed) {
    fail(out, "the server closed the connection before the response ended");
  }
  out.done = phase_ == Phase::kDone;
  out.status = status_;
  if (phase_ == Phase::kFailed) out.error = error_;
  return out;
}

size_t SseReader::read_head(std::string_view in, SseStep& out) {
  const size_t lf = in.find('\n');
  const size_t take = lf == kNpos ? in.size() : lf + 1;
  if (line_.size() + take > limits_.max_head_bytes) {
    fail(out, "the response head exceeds " + std::to_string(limits_.max_head_bytes) + " bytes");
    return take;
  }
  line_.append(in.substr(0, take));
  total_ += take;
  if (lf == kNpos) return take;
  const bool blank = without_line_end(std::string_view(line_).substr(line_start_)).empty();
  line_start_ = line_.size();
  if (!blank) return take;
  auto head = parse_response_head(line_, limits_.max_head_bytes);
  if (auto* e = std::get_if<HttpResponseError>(&head)) {
    fail(out, std::move(e->message));
  } else if (auto* h = std::get_if<HttpResponseHead>(&head)) {
    const bool interim = h->status < 200;  // 100 Continue and the like: the answer follows
    if (!interim) start_body(*h, out);
    line_.clear();
    line_start_ = 0;
  } else {
    fail(out, "the response head is incomplete");  // unreachable: a blank line ended it
  }
  return take;
}

void SseReader::start_body(const HttpResponseHead& h, SseStep& out) {
  status_ = h.status;
  keep_alive_ = h.version_minor >= 1 ? !h.close : h.keep_alive && !h.close;
  event_stream_ = is_event_stream(h.content_type);
  if (h.status == 204 || h.status == 304) return end(out);
  if (h.has_transfer_encoding && h.chunked) {
    // Both framings at once: chunked wins (RFC 9112), and the connection
    // is not trusted afterwards.
    if (h.has_length) keep_alive_ = false;
    phase_ = Phase::kChunkSize;
    return;
  }
  if (h.has_length && !h.has_transfer_encoding) {
    if (h.length > limits_.max_total_bytes - total_ ||
        (!event_stream_ && h.length > limits_.max_body_bytes)) {
      return fail(out, "Content-Length " + http::server_excerpt(h.length_text) + " exceeds the " +
                           std::to_string(event_stream_ ? limits_.max_total_bytes
                                                        : limits_.max_body_bytes) +
                           "-byte limit");
    }
    if (h.length == 0) return end(out);
    remaining_ = h.length;
    phase_ = Phase::kLength;
    return;
  }
  keep_alive_ = false;  // the body runs until the server closes
  phase_ = Phase::kToEof;
}

size_t SseReader::read_chunk_size(std::string_view in, SseStep& out) {
  const size_t lf = in.find('\n');
  const size_t take = lf == kNpos ? in.size() : lf + 1;
  if (line_.size() + take > http::kMaxChunkLineBytes) {
    fail(out, "a chunk-size line exceeds " + std::to_string(http::kMaxChunkLineBytes) + " bytes");
    return take;
  }
  line_.append(in.substr(0, take));
  total_ += take;
  if (lf == kNpos) return take;
  const std::string_view line = without_line_end(line_);
  size_t i = 0;
  uint64_t size = 0;
  bool too_big = false;
  for (; i < line.size(); ++i) {
    const char c = lower(line[i]);
    const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) break;
    if (size > (std::numeric_limits<uint64_t>::max() >> 4)) {
      too_big = true;  // keeps reading digits, so the message quotes them all
    } else {
      size = size * 16 + static_cast<uint64_t>(d);
    }
  }
  // Whitespace may come only before an extension's ';' (RFC 9112 BWS).
  const std::string_view tail = trim(line.substr(i));
  if (i == 0 || (i < line.size() && (tail.empty() || tail.front() != ';'))) {
    fail(out, "chunk size " + http::server_excerpt(line) + " is not a hexadecimal number");
    return take;
  }
  const std::string digits(line.substr(0, i));
  line_.clear();
  if (too_big || size > limits_.max_total_bytes - total_) {
    fail(out, "a chunk of " + http::server_excerpt(digits) + " (hex) bytes exceeds the " +
                  std::to_string(limits_.max_total_bytes) + "-byte response limit");
  } else if (!event_stream_ && size > limits_.max_body_bytes - body_.size()) {
    fail(out, "a chunk of " + http::server_excerpt(digits) + " (hex) bytes exceeds the " +
                  std::to_string(limits_.max_body_bytes) + "-byte body limit");
  } else if (size == 0) {
    phase_ = Phase::kTrailers;
    head_bytes_ = 0;
  } else {
    remaining_ = size;
    phase_ = Phase::kChunkData;
  }
  return take;
}

size_t SseReader::read_chunk_data(std::string_view in, SseStep& out) {
  const auto take = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size()));
  total_ += take;
  remaining_ -= take;
  body_bytes(in.substr(0, take), out);
  if (remaining_ == 0 && phase_ == Phase::kChunkData) {
    phase_ = Phase::kChunkEnd;
    chunk_cr_ = false;
  }
  return take;
}

size_t SseReader::read_chunk_end(std::string_view in, SseStep& out) {
  total_ += 1;
  if (in[0] == '\n') {
    phase_ = Phase::kChunkSize;
  } else if (in[0] == '\r' && !chunk_cr_) {
    chunk_cr_ = true;
  } else {
    fail(out, "chunk data is not followed by CRLF; the chunk size is wrong");
  }
  return 1;
}

size_t SseReader::read_trailers(std::string_view in, SseStep& out) {
  // Trailers are skipped: nothing here reads them.
  const size_t lf = in.find('\n');
  const size_t take = lf == kNpos ? in.size() : lf + 1;
  if (head_bytes_ + take > limits_.max_head_bytes) {
    fail(out, "the chunked trailers exceed " + std::to_string(limits_.max_head_bytes) + " bytes");
    return take;
  }
  head_bytes_ += take;
  total_ += take;
  line_.append(in.substr(0, take));
  if (lf == kNpos) return take;
  const bool blank = without_line_end(line_).empty();
  line_.clear();
  if (blank) end(out);
  return take;
}

size_t SseReader::read_length(std::string_view in, SseStep& out) {
  const auto take = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size()));
  total_ += take;
  remaining_ -= take;
  body_bytes(in.substr(0, take), out);
  if (remaining_ == 0 && phase_ == Phase::kLength) end(out);
  return take;
}

void SseReader::end(SseStep& out) {
  phase_ = Phase::kDone;
  // An event the stream ended inside is not dispatched (as in EventSource).
  if (!event_stream_) out.body = std::move(body_);
  body_.clear();
}

void SseReader::body_bytes(std::string_view in, SseStep& out) {
  if (!event_stream_) {
    if (in.size() > limits_.max_body_bytes - body_.size()) {
      return fail(out, "the body exceeds " + std::to_string(limits_.max_body_bytes) + " bytes");
    }
    body_.append(in);
    return;
  }
  size_t i = 0;
  while (i < in.size()) {
    if (after_cr_) {
      after_cr_ = false;
      if (in[i] == '\n') {  // the LF of a CRLF split after its CR
        ++i;
        continue;
      }
    }
    const size_t e = in.find_first_of("\r\n", i);
    const size_t stop = e == kNpos ? in.size() : e;
    if (event_line_.size() + data_.size() + (stop - i) > limits_.max_event_bytes) {
      return fail(out, "an event exceeds " + std::to_string(limits_.max_event_bytes) + " bytes");
    }
    event_line_.append(in.substr(i, stop - i));
    if (e == kNpos) return;
    after_cr_ = in[e] == '\r';
    i = e + 1;
    sse_line(out);
  }
}

void SseReader::sse_line(SseStep& out) {
  std::string_view line = event_line_;
  if (first_line_) {
    first_line_ = false;
    if (line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // a UTF-8 BOM
  }
  if (line.empty()) {
    // Each data line added its value and a '\n'; none: nothing to dispatch.
    if (!data_.empty()) {
      data_.pop_back();
      out.events.push_back(std::move(data_));
      data_.clear();
    }
  } else if (line.front() != ':') {  // ':' starts a comment (a keep-alive ping)
    const size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value = colon == kNpos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    // A data line's value and '\n' are no longer than the line itself, so
    // data_ stays within the event limit checked while the line arrived.
    if (field == "data") {
      data_.append(value);
      data_.push_back('\n');
    }
  }
  event_line_.clear();
}

}  // namespace batchscope

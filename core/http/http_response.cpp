// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/http_response.h"
#include "http/http_syntax.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace batchscope {
namespace {

// A chunk-size line is hex digits plus optional extensions; nobody
// legitimate sends kilobytes of extensions.
constexpr size_t kNpos = std::string_view::npos;

HttpResponseParse error(std::string message) { return HttpResponseError{std::move(message)}; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_tchar(char c) {
  const auto b = static_cast<unsigned char>(c);
  if (b >= 0x80 || b <= 0x20) return false;
  return std::string_view("\"(),/:;<=>?@[\\]{}").find(c) == kNpos && b != 0x7f;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Index of the LF ending the line that starts at `pos`, searching below the
// absolute index `limit`; npos when there is none there.
size_t find_lf(std::string_view in, size_t pos, size_t limit) {
  const size_t end = std::min(in.size(), limit);
  if (pos >= end) return kNpos;
  const size_t lf = in.substr(pos, end - pos).find('\n');
  return lf == kNpos ? kNpos : pos + lf;
}

std::string_view line_between(std::string_view in, size_t pos, size_t lf) {
  std::string_view line = in.substr(pos, lf - pos);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Bytes still allowed after the first `used` of the response.
size_t room_after(size_t used, const HttpResponseLimits& limits) {
  return limits.max_response_bytes > used ? limits.max_response_bytes - used : 0;
}

// An unfinished response that already fills the limit will only exceed it.
HttpResponseParse need_more(std::string_view in, const HttpResponseLimits& limits) {
  if (in.size() >= limits.max_response_bytes) {
    return error("the response exceeds " + std::to_string(limits.max_response_bytes) + " bytes");
  }
  return std::monostate{};
}

using Head = HttpResponseHead;

std::optional<std::string> parse_status_line(std::string_view line, Head& h) {
  // "HTTP/1.1 200 OK"; the reason phrase may be empty or absent.
  const bool ok = line.size() >= 12 && line.substr(0, 7) == "HTTP/1." && is_digit(line[7]) &&
                  line[8] == ' ' && is_digit(line[9]) && is_digit(line[10]) && is_digit(line[11]) &&
                  (line.size() == 12 || line[12] == ' ');
  if (!ok) return "status line " + http::server_excerpt(line) + " is not 'HTTP/1.1 200 OK'";
  h.version_minor = line[7] - '0';
  h.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (h.status < 100) return "status " + http::server_excerpt(line.substr(9, 3)) + " is below 100";
  return std::nullopt;
}

std::optional<std::string> parse_content_length(std::string_view value, Head& h) {
  // "5, 5" is what a proxy makes of a duplicated header; values that differ
  // leave the body's end unknown.
  bool any = false;
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view item = trim(value.substr(0, comma));
    value.remove_prefix(comma == kNpos ? value.size() : comma + 1);
    if (item.empty()) continue;
    uint64_t n = 0;
    for (char c : item) {
      if (!is_digit(c))
        return "Content-Length " + http::server_excerpt(item) + " is not a decimal number";
      const auto d = static_cast<uint64_t>(c - '0');
      // Saturate: a length that does not fit is over any limit all the same.
      n = n > (std::numeric_limits<uint64_t>::max() - d) / 10 ? std::numeric_limits<uint64_t>::max()
                                                              : n * 10 + d;
    }
    if (h.has_length && n != h.length) {
      return "conflicting Content-Length values " + http::server_excerpt(h.length_text) + " and " +
             http::server_excerpt(item);
    }
    h.has_length = true;
    h.length = n;
    h.length_text.assign(item);
    any = true;
  }
  if (!any) return std::string("Content-Length is empty");
  return std::nullopt;
}

std::optional<std::string> parse_header_line(std::string_view line, Head& h) {
  size_t colon = 0;
  while (colon < line.size() && is_tchar(line[colon])) ++colon;
  if (colon == 0 || colon == line.size() || line[colon] != ':') {
    return "header line " + http::server_excerpt(line) + " is not 'Name: value'";
  }
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = trim(line.substr(colon + 1));
  auto for_each_item = [&](auto f) {
    std::string_view list = value;
    while (!list.empty()) {
      const size_t comma = list.find(',');
      const std::string_view item = trim(list.substr(0, comma));
      if (!item.empty()) f(item);
      list.remove_prefix(comma == kNpos ? list.size() : comma + 1);
    }
  };
  if (iequals(name, "content-length")) return parse_content_length(value, h);
  if (iequals(name, "transfer-encoding")) {
    // Several header lines make one list; what matters is its last coding.
    h.has_transfer_encoding = true;
    for_each_item([&](std::string_view coding) { h.chunked = iequals(coding, "chunked"); });
  } else if (iequals(name, "content-type")) {
    h.content_type.assign(value);
  } else if (iequals(name, "connection")) {
    for_each_item([&](std::string_view option) {
      h.close = h.close || iequals(option, "close");
      h.keep_alive = h.keep_alive || iequals(option, "keep-alive");
    });
  }
  return std::nullopt;
}

// The head, std::monostate while it is incomplete, or an error.
std::variant<std::monostate, Head, HttpResponseError> parse_head(std::string_view in,
                                                                 size_t max_head_bytes) {
  Head h;
  size_t pos = 0;
  for (bool first = true;; first = false) {
    const size_t lf = find_lf(in, pos, max_head_bytes);
    if (lf == kNpos) {
      if (in.size() >= max_head_bytes) {
        return HttpResponseError{"the response head exceeds " + std::to_string(max_head_bytes) +
                                 " bytes"};
      }
      return std::monostate{};
    }
    const std::string_view line = line_between(in, pos, lf);
    pos = lf + 1;
    if (!first && line.empty()) break;
    if (!first && (line.front() == ' ' || line.front() == '\t')) {
      return HttpResponseError{"obsolete line folding in the response head"};
    }
    std::optional<std::string> bad =
        first ? parse_status_line(line, h) : parse_header_line(line, h);
    if (bad) return HttpResponseError{std::move(*bad)};
  }
  h.size = pos;
  return h;
}

HttpResponseParse parse_chunked(std::string_view in, const Head& h, ReceivedResponse r,
                                const HttpResponseLimits& limits) {
  // Chunks are located first and copied once the response is whole, so a
  // body that arrives in many reads is not copied again on each.
  std::vector<std::pair<size_t, size_t>> spans;  // offset and length of each chunk's data
  size_t body_size = 0;
  size_t p = h.size;
  for (;;) {
    const size_t lf = find_lf(in, p, p + http::kMaxChunkLineBytes);
    if (lf == kNpos) {
      if (in.size() - p >= http::kMaxChunkLineBytes) {
        return error("a chunk-size line exceeds " + std::to_string(http::kMaxChunkLineBytes) +
                     " bytes");
      }
      return need_more(in, limits);
    }
    const std::string_view line = line_between(in, p, lf);
    size_t i = 0;
    uint64_t size = 0;
    bool too_big = false;
    for (; i < line.size(); ++i) {
      const char c = lower(line[i]);
      const int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (d < 0) break;
      if (size > (std::numeric_limits<uint64_t>::max() >> 4)) {
        too_big = true;
      } else {
        size = size * 16 + static_cast<uint64_t>(d);
      }
    }
    // Whitespace may come only before an extension's ';' (RFC 9112 BWS).
    const std::string_view tail = trim(line.substr(i));
    if (i == 0 || (i < line.size() && (tail.empty() || tail.front() != ';'))) {
      return error("chunk size " + http::server_excerpt(line) + " is not a hexadecimal number");
    }
    const size_t data = lf + 1;
    if (too_big || size > room_after(data, limits)) {
      return error("a chunk of " + http::server_excerpt(line.substr(0, i)) +
                   " (hex) bytes exceeds the " + std::to_string(limits.max_response_bytes) +
                   "-byte response limit");
    }
    if (size == 0) {
      p = data;
      break;
    }
    if (in.size() - data < size) return need_more(in, limits);
    const size_t end = data + static_cast<size_t>(size);
    if (end == in.size()) return need_more(in, limits);
    size_t next = 0;
    if (in[end] == '\n') {
      next = end + 1;
    } else if (in[end] == '\r') {
      if (end + 1 == in.size()) return need_more(in, limits);
      if (in[end + 1] == '\n') next = end + 2;
    }
    if (next == 0) return error("chunk data is not followed by CRLF; the chunk size is wrong");
    spans.emplace_back(data, static_cast<size_t>(size));
    body_size += static_cast<size_t>(size);
    p = next;
  }
  // Trailers are skipped: nothing here reads them.
  const size_t trailers = p;
  for (;;) {
    const size_t lf = find_lf(in, p, trailers + limits.max_head_bytes);
    if (lf == kNpos) {
      if (in.size() - trailers >= limits.max_head_bytes) {
        return error("the chunked trailers exceed " + std::to_string(limits.max_head_bytes) +
                     " bytes");
      }
      return need_more(in, limits);
    }
    const std::string_view line = line_between(in, p, lf);
    p = lf + 1;
    if (line.empty()) break;
  }
  if (p > limits.max_response_bytes) {
    return error("the response exceeds " + std::to_string(limits.max_response_bytes) + " bytes");
  }
  r.body.reserve(body_size);
  for (const auto& [offset, length] : spans) r.body.append(in.substr(offset, length));
  r.size = p;
  return r;
}

}  // namespace

std::variant<std::monostate, HttpResponseHead, HttpResponseError> parse_response_head(
    std::string_view in, size_t max_head_bytes) {
  return parse_head(in, max_head_bytes);
}

HttpResponseParse parse_response(std::string_view in, bool eof, const HttpResponseLimits& limits) {
  auto head = parse_head(in, limits.max_head_bytes);
  if (auto* e = std::get_if<HttpResponseError>(&head)) return std::move(*e);
  if (std::holds_alternative<std::monostate>(head)) return need_more(in, limits);
  const Head& h = std::get<Head>(head);
  if (h.size > limits.max_response_bytes) {
    return error("the response exceeds " + std::to_string(limits.max_response_bytes) + " bytes");
  }

  ReceivedResponse r;
  r.status = h.status;
  r.keep_alive = h.version_minor >= 1 ? !h.close : h.keep_alive && !h.close;
  if (h.status < 200 || h.status == 204 || h.status == 304) {
    r.size = h.size;
    return r;
  }
  if (h.has_transfer_encoding && h.chunked) {
    // Both framings at once is how smuggling starts: use chunked, as RFC
    // 9112 says, and do not trust the connection afterwards.
    if (h.has_length) r.keep_alive = false;
    return parse_chunked(in, h, std::move(r), limits);
  }
  if (h.has_length && !h.has_transfer_encoding) {
    if (h.length > room_after(h.size, limits)) {
      return error("Content-Length " + http::server_excerpt(h.length_text) + " exceeds the " +
                   std::to_string(limits.max_response_bytes) + "-byte response limit");
    }
    const auto length = static_cast<size_t>(h.length);
    if (in.size() - h.size < length) return need_more(in, limits);
    r.body.assign(in.substr(h.size, length));
    r.size = h.size + length;
    return r;
  }
  // No length: the body runs until the server closes the connection.
  if (in.size() > limits.max_response_bytes) {
    return error("the response exceeds " + std::to_string(limits.max_response_bytes) + " bytes");
  }
  if (!eof) return std::monostate{};
  r.body.assign(in.substr(h.size));
  r.size = in.size();
  r.keep_alive = false;
  return r;
}

}  // namespace batchscope

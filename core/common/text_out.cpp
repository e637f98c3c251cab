// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/text_out.h"

#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace batchscope {

void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_int(std::string& out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_number(std::string& out, double v, std::string_view non_finite) {
  if (!std::isfinite(v)) {
    out.append(non_finite);
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

namespace {

// How many bytes from s[i] start a well-formed UTF-8 sequence (0 where s[i]
// starts none); `need` is that sequence's whole length (1 for ASCII).
size_t utf8_prefix(std::string_view s, size_t i, size_t& need) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  need = 1;
  if (b0 < 0x80) return 1;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  size_t k = 1;
  for (; k < need && i + k < s.size(); ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) break;
  }
  return k;
}

}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i) {
  size_t need = 0;
  return utf8_prefix(s, i, need) == need ? need : 0;
}

// A JSON string literal. Config strings come from the command line (URLs,
// pattern specs), so malformed UTF-8 is replaced by U+FFFD rather than
// producing a file that strict parsers refuse.
void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = 0;
      const size_t valid = utf8_prefix(s, i, n);
      if (valid < n || valid == 0) {
        // One U+FFFD for the malformed sequence: the longest start of a
        // well-formed one (Unicode's "maximal subpart", as Python's and the
        // browsers' decoders replace), or the one stray byte.
        out.append("\\ufffd");
        i += valid == 0 ? 1 : valid;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      default:
        if (c < 0x20) {
          out.append("\\u00");
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

std::string message_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

std::string quoted_excerpt(std::string_view s, size_t max) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    out += b < 0x20 || b == 0x7f ? '?' : s[i];
  }
  if (s.size() > max) out += "...";
  return out + "'";
}

void append_format(std::string& out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(n) + 1);
    std::vsnprintf(out.data() + at, static_cast<size_t>(n) + 1, format, again);
    out.resize(at + static_cast<size_t>(n));
  }
  va_end(again);
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The character rules of HTTP/1.1 fields (RFC 9110 section 5): tokens, field
// values, comma lists, and the request line's version, as the request parser
// (http_parser.cpp) checks them byte by byte, and how a client quotes what a
// server sent in an error. Header-only so the per-byte
// loops inline. Thread-safety: pure functions.

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace batchscope::http {

// The longest chunk-size line (size, extensions, CRLF) a reader accepts.
inline constexpr size_t kMaxChunkLineBytes = 4096;

// Server bytes echoed into a message: at most 40, each outside printable
// ASCII shown as '?', quoted.
inline std::string server_excerpt(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    out += (b >= 0x20 && b < 0x7f) ? s[i] : '?';
  }
  if (s.size() > kMax) out += "...";
  return out + "'";
}

// Character classes by table lookup: one load per byte instead of a chain of
// comparisons in the per-byte loops.
constexpr std::array<bool, 256> make_tchar_table() {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}
inline constexpr std::array<bool, 256> kTchar = make_tchar_table();

constexpr std::array<char, 256> make_lower_table() {
  std::array<char, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[c] = static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
  }
  return t;
}
inline constexpr std::array<char, 256> kLower = make_lower_table();

inline unsigned char byte(char c) { return static_cast<unsigned char>(c); }

// Controls other than HTAB (CR and NUL among them) are never valid inside a
// field value; a bare CR in particular is read as a line end by some parsers.
inline bool is_bad_value_char(char c) {
  const unsigned char b = byte(c);
  return (b < 0x20 && b != '\t') || b == 0x7f;
}

// Eight bytes at a time while no byte is below 0x20 or is 0x7f (the common
// case: plain text); a word that trips the test is checked byte by byte,
// since HTAB is allowed.
inline bool is_valid_value(std::string_view v) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighs = 0x8080808080808080ull;
  size_t i = 0;
  for (; i + 8 <= v.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, v.data() + i, 8);
    // High bit set in a byte lane of `below` when that byte < 0x20, and of
    // `del` when it equals 0x7f (bytes >= 0x80 are excluded by ~w).
    const uint64_t below = (w - kOnes * 0x20) & ~w & kHighs;
    const uint64_t x = w ^ (kOnes * 0x7f);
    const uint64_t del = (x - kOnes) & ~x & kHighs;
    if ((below | del) != 0) {
      for (size_t j = i; j < i + 8; ++j) {
        if (is_bad_value_char(v[j])) return false;
      }
    }
  }
  for (; i < v.size(); ++i) {
    if (is_bad_value_char(v[i])) return false;
  }
  return true;
}

inline bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!kTchar[byte(c)]) return false;
  }
  return true;
}

inline bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "HTTP/<digits>[.<digits>]": a version we may merely not speak (505), as
// opposed to garbage (400).
inline bool looks_like_http_version(std::string_view v) {
  if (v.substr(0, 5) != "HTTP/") return false;
  v.remove_prefix(5);
  const size_t dot = v.find('.');
  return is_digits(v.substr(0, dot)) &&
         (dot == std::string_view::npos || is_digits(v.substr(dot + 1)));
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

inline std::string_view strip_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (kLower[byte(a[i])] != kLower[byte(b[i])]) return false;
  }
  return true;
}

// Calls f(token) for each trimmed, non-empty element of a comma list.
template <class F>
void for_each_list_item(std::string_view list, F f) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = trim(list.substr(0, comma));
    if (!item.empty()) f(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace batchscope::http

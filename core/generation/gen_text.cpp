// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/gen_text.h"

#include <algorithm>

namespace batchscope {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// The length of the character `s` begins with (1..4), 0 if more bytes are
// needed, or -1 if its first byte cannot begin one (RFC 3629's table).
int char_length(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t c = b(0);
  int n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else
    return -1;
  for (size_t i = 1; i < static_cast<size_t>(n); ++i) {
    if (i >= s.size()) return 0;
    const uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b(i) < l || b(i) > h) return -1;
  }
  return n;
}

}  // namespace

TextStream::TextStream(std::vector<std::string> stop) {
  for (std::string& s : stop) {
    if (!s.empty()) stop_.push_back(std::move(s));
  }
}

std::string TextStream::release(size_t n) {
  std::string out = held_.substr(0, n);
  held_.erase(0, n);
  text_ += out;
  return out;
}

std::string TextStream::push(uint8_t byte) {
  if (stopped_) return {};
  raw_.push_back(static_cast<char>(byte));
  while (!raw_.empty()) {
    const int n = char_length(raw_);
    if (n == 0) break;
    if (n > 0) {
      held_.append(raw_, 0, static_cast<size_t>(n));
      raw_.erase(0, static_cast<size_t>(n));
    } else {
      held_.append(kReplacement);
      raw_.erase(0, 1);
    }
  }
  // A complete stop string ends the text where the earliest one begins.
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = release(cut);
    held_.clear();
    raw_.clear();
    return out;
  }
  // Hold back the longest tail that is the start of some stop string.
  size_t keep = 0;
  for (const std::string& s : stop_) {
    for (size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k) {
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
    }
  }
  return release(held_.size() - keep);
}

std::string TextStream::finish() {
  if (stopped_) return {};
  if (!raw_.empty()) held_.append(kReplacement);
  raw_.clear();
  return release(held_.size());
}

}  // namespace batchscope

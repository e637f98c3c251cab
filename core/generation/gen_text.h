// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Output bytes to streamed text. A byte-level model emits bytes one token at
// a time; a client must only ever see whole UTF-8 characters, and never the
// stop string that ends a completion, not even its first half while the
// rest is still being generated. TextStream holds back an incomplete
// character until its last byte comes (a byte that cannot be UTF-8 becomes
// U+FFFD), and text that could begin a stop string until it either
// completes one (the completion ends there) or cannot.
// Thread-safety: a plain value.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace batchscope {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop = {});

  // Takes one output byte; returns the text that may go out now.
  std::string push(uint8_t byte);
  // True once a stop string has been generated: the completion ends before it.
  bool stopped() const { return stopped_; }
  // The text held back, at the end (an incomplete character as U+FFFD).
  std::string finish();
  // Everything returned so far.
  const std::string& text() const { return text_; }

 private:
  std::string release(size_t n);

  std::vector<std::string> stop_;
  std::string raw_;   // bytes of an incomplete character
  std::string held_;  // whole characters that could still begin a stop string
  std::string text_;
  bool stopped_ = false;
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/say.h"

#include <cstdarg>
#include <cstdio>

namespace batchscope {
namespace {

std::string format_text(const char* format, va_list args) {
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  std::string text;
  if (n > 0) {
    text.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(text.data(), text.size(), format, again);
    text.resize(static_cast<size_t>(n));
  }
  va_end(again);
  return text;
}

}  // namespace

void Say::out(const char* format, ...) const {
  if (!out_) return;
  va_list args;
  va_start(args, format);
  const std::string text = format_text(format, args);
  va_end(args);
  out_(text);
}

void Say::err(const char* format, ...) const {
  if (!err_) return;
  va_list args;
  va_start(args, format);
  const std::string text = format_text(format, args);
  va_end(args);
  err_(text);
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// What this room's long work says as it goes (a profile point measured, a
// calibration begun, a kept cost refined), a line at a time: a command
// prints it, to stdout and, for notes and warnings, to stderr; the window
// and the tests keep it or drop it. A default Say drops everything. And how
// such work ends when it gives no result (WorkError).
// Thread-safety: called on the thread doing the work; the sinks must be
// safe to call from there.

#pragma once

#include <functional>
#include <string>

namespace batchscope {

class Say {
 public:
  using Sink = std::function<void(const std::string& text)>;
  Say() = default;
  Say(Sink out, Sink err) : out_(std::move(out)), err_(std::move(err)) {}

  // Formatted as printf would; the text carries its own newline.
  void out(const char* format, ...) const __attribute__((format(printf, 2, 3)));
  void err(const char* format, ...) const __attribute__((format(printf, 2, 3)));

 private:
  Sink out_, err_;
};

// Why a tune or a bench ended without its result: refused (what was asked
// cannot be done as asked, which a command reports as a usage error), or
// failed on the way (a model that would not load, a run that went wrong).
struct WorkError {
  std::string message;
  bool refused = false;
};

}  // namespace batchscope

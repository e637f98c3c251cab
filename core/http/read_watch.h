// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// ReadWatch: the read deadlines of one connection, as a pure function of the
// times it is shown, so that tests drive it with explicit times.
//
// Two rules, after Kestrel's and nginx's (the listener answers 408 and
// closes when one is broken):
//  - a request's line and headers must arrive within `header_timeout` of
//    its first byte, so a client trickling a byte a second cannot hold a
//    connection (and its buffers) open for ever;
//  - once `body_grace` has passed since its body began, the body must have
//    arrived at an average of at least `min_body_rate` bytes a second.
// Between requests (nothing of the next one has arrived) neither applies:
// that is the idle timeout's business. Nor while the listener itself has
// stopped reading (backpressure): the caller then calls restart().
//
// Thread-safety: none; one per connection, on the I/O thread.

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "http/http_parser.h"

namespace batchscope {

struct ReadTimeouts {
  Duration header_timeout = std::chrono::seconds(10);
  double min_body_rate = 1024;  // bytes per second; 0 turns the rule off
  Duration body_grace = std::chrono::seconds(5);
};

class ReadWatch {
 public:
  explicit ReadWatch(ReadTimeouts t = {}) : t_(t) {}

  // Shown the parser's state at `now` (after bytes arrived, or on a timer
  // tick): the reason to answer 408, once a rule is broken.
  std::optional<std::string> check(TimePoint now, HttpPhase phase, uint64_t body_bytes,
                                   uint64_t messages);
  // Starts the current phase's clock again at `now`.
  void restart(TimePoint now) { since_ = now; }

 private:
  ReadTimeouts t_;
  HttpPhase phase_ = HttpPhase::kIdle;
  uint64_t messages_ = 0;
  TimePoint since_{};
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// SIGINT and SIGTERM as a request to stop a run early: while a StopOnSignal
// lives, the first of them sets a flag that the load drivers look at (every
// 20 ms), and puts the default action back, so that a second one ends the
// process as usual. The previous handlers come back when it goes.
// Thread-safety: one at a time in a process; the flag may be read anywhere.

#pragma once

#include <atomic>
#include <csignal>
#include <string>

#include "common/clock.h"

namespace batchscope {

class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  const std::atomic<bool>* flag() const;
  bool stopped() const;
  // "SIGINT" or "SIGTERM" once one came; empty before.
  std::string signal_name() const;
  // After a run from `start` whose last answer came at `last`: when a
  // signal ended it, `duration_s` (what was asked) becomes how long it ran,
  // and the note it keeps ("by the user (SIGINT) after 3.2 s of 10") is
  // printed as "  stopped NOTE" and returned; empty when none came.
  std::string ended(TimePoint start, TimePoint last, double& duration_s) const;

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

}  // namespace batchscope

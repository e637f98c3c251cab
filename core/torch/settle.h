// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Measuring one batch size until its run time settles, as perf_analyzer does:
// runs are timed in windows, and the point is settled once the last
// `windows_to_agree` windows have medians within +-tolerance of their mean and
// the measuring thread had a core for at least `min_cpu_share` of each of
// those windows' wall time. A busy machine (a build beside the profile) shows
// as a low share: the thread waited for a core instead of running, and its
// times are scheduler slices, not the model's. Windows are measured until the
// point settles or `max_windows` have run; a point that never settles is
// returned all the same, marked unsettled with the reason.
// The clocks are injected so that preemption can be simulated in tests.
// Thread-safety: settle() runs on the calling thread and calls `run` there.

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace batchscope {

struct SettleOptions {
  double window_seconds = 0.1;  // wall time a window runs for, at least
  int min_runs = 3;             // runs a window holds, at least
  int max_runs = 700;           // runs a window holds, at most
  int windows_to_agree = 3;
  int max_windows = 10;
  double tolerance = 0.10;     // each agreeing window's median within +-10% of their mean
  double min_cpu_share = 0.5;  // 0: not checked (a GPU's run waits on the device)
};

// Wall time (steady) and the calling thread's CPU time, in seconds.
struct SettleClocks {
  std::function<double()> wall_s;
  std::function<double()> cpu_s;
  static SettleClocks real();
};

struct Settled {
  std::vector<double> us;  // run times of the last windows_to_agree windows, in microseconds
  bool settled = false;
  int windows = 0;        // windows measured in all
  double cpu_share = 1;   // the lowest share of those windows: CPU time over wall time
  double window_gap = 0;  // the largest |window median - their mean| / their mean
  std::string why;        // why it did not settle: "the thread had a core 31% of ..."
};

// Runs `run` (which returns the error that ends the measurement, if any)
// window after window. `cancelled`, when set, is asked before each run;
// once true settle() returns kCancelled.
Expected<Settled> settle(const std::function<Status()>& run, const SettleOptions& options,
                         const SettleClocks& clocks,
                         const std::function<bool()>& cancelled = nullptr);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "torch/settle.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace batchscope {

SettleClocks SettleClocks::real() {
  SettleClocks c;
  c.wall_s = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  c.cpu_s = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  return c;
}

namespace {

struct Window {
  std::vector<double> us;
  double median = 0;
  double cpu_share = 1;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * x);
  return buf;
}

}  // namespace

Expected<Settled> settle(const std::function<Status()>& run, const SettleOptions& o,
                         const SettleClocks& clocks, const std::function<bool()>& cancelled) {
  const int agree = std::max(1, o.windows_to_agree);
  const int most = std::max(agree, o.max_windows);
  std::vector<Window> windows;
  Settled out;
  for (int w = 0; w < most; ++w) {
    Window win;
    const double start = clocks.wall_s(), cpu_start = clocks.cpu_s();
    double now = start;
    while (static_cast<int>(win.us.size()) < std::max(1, o.max_runs) &&
           (static_cast<int>(win.us.size()) < o.min_runs || now - start < o.window_seconds)) {
      if (cancelled && cancelled()) return Error{ErrorCode::kCancelled, "measuring was cancelled"};
      const double t0 = clocks.wall_s();
      if (Status s = run(); !s) return s.error();
      now = clocks.wall_s();
      win.us.push_back((now - t0) * 1e6);
    }
    const double wall = now - start;
    win.cpu_share = wall > 0 ? (clocks.cpu_s() - cpu_start) / wall : 1.0;
    win.median = median_of(win.us);
    windows.push_back(std::move(win));
    if (static_cast<int>(windows.size()) < agree) continue;

    const auto first = windows.end() - agree;
    double mean = 0, share = 1, gap = 0;
    for (auto it = first; it != windows.end(); ++it) {
      mean += it->median / agree;
      share = std::min(share, it->cpu_share);
    }
    for (auto it = first; it != windows.end(); ++it) {
      gap = std::max(gap, mean > 0 ? std::abs(it->median - mean) / mean : 0.0);
    }
    out.windows = static_cast<int>(windows.size());
    out.cpu_share = share;
    out.window_gap = gap;
    out.us.clear();
    for (auto it = first; it != windows.end(); ++it)
      out.us.insert(out.us.end(), it->us.begin(), it->us.end());
    const bool busy = o.min_cpu_share > 0 && share < o.min_cpu_share;
    out.settled = !busy && gap <= o.tolerance;
    if (out.settled) {
      out.why.clear();
      break;
    }
    out.why = busy ? "the measuring thread had a core for only " + percent(share) +
                         " of its wall time (the machine is busy)"
                   : "window medians were up to " + percent(gap) + " from their mean, over +-" +
                         percent(o.tolerance);
  }
  if (!out.settled) out.why += " after " + std::to_string(out.windows) + " windows";
  return out;
}

}  // namespace batchscope

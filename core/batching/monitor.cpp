// SPDX-License-Identifier: GPL-3.0-or-later
#include "batching/monitor.h"

#include <algorithm>

namespace batchscope {

MetricsSnapshot EngineMonitor::snapshot(EngineStatus status, size_t recent) const {
  MetricsSnapshot s;
  s.engine = std::move(status);
  const auto& w = aggregator_.windows();
  const size_t n = std::min(recent, w.size());
  s.windows.assign(w.end() - static_cast<std::ptrdiff_t>(n), w.end());
  s.totals = aggregator_.totals();
  s.window_length = aggregator_.window_length();
  return s;
}

}  // namespace batchscope

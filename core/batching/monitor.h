// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Pulls an engine's records into a MetricsAggregator and hands out snapshots:
// the engine's status (options in force and their version, queue depth,
// counters) together with the recent windows and the all-time totals. The
// GUI polls it on its refresh timer; headless commands poll it from their
// own loop. Each poll costs one short engine lock (a buffer swap) plus
// folding what arrived since the last poll.
// Thread-safety: owner thread only; the engine it polls is thread-safe.

#include <vector>

#include "batching/engine_types.h"
#include "runs/metrics.h"

namespace batchscope {

struct MetricsSnapshot {
  EngineStatus engine;
  std::vector<MetricsWindow> windows;  // the most recent, oldest first
  MetricsWindow totals;
  Duration window_length{0};
};

class EngineMonitor {
 public:
  explicit EngineMonitor(Duration window_length = std::chrono::milliseconds(100),
                         size_t history = 3000)
      : aggregator_(window_length, history) {}

  // Drains `engine` (any BasicEngine) and returns a snapshot holding at most
  // `recent` windows.
  template <class EngineT>
  MetricsSnapshot poll(EngineT& engine, size_t recent = SIZE_MAX) {
    engine.drain_records(buffer_);
    aggregator_.fold(buffer_);
    return snapshot(engine.status(), recent);
  }

  MetricsSnapshot snapshot(EngineStatus status, size_t recent = SIZE_MAX) const;
  const MetricsAggregator& aggregator() const { return aggregator_; }
  // The records the last poll() drained (valid until the next poll), for
  // views that keep individual batches and requests.
  const RecordBatch& last_records() const { return buffer_; }

 private:
  MetricsAggregator aggregator_;
  RecordBatch buffer_;
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The body of `GET /metrics`: an engine snapshot rendered in the Prometheus
// text exposition format 0.0.4 (Content-Type "text/plain; version=0.0.4").
//
// What it exports: the snapshot's all-time figures and live gauges, never the
// recent windows (Prometheus computes rates itself from cumulative counters).
// Request and batch counts come from the engine's exact EngineCounters; the
// histograms come from the aggregator's totals, which are fed by records and
// so can miss the few that a full record buffer dropped (those are counted in
// batchscope_records_dropped_total).
//
// Histogram conversion: the aggregator keeps LogHistograms (log-linear
// buckets, see histogram.h), Prometheus wants fixed cumulative "le" buckets.
// Each log bucket [lo, hi] is counted in the first le bucket whose bound is
// >= min(hi, observed max), i.e. by its upper edge. A value can therefore be
// reported one le bucket too high when its log bucket straddles an le bound,
// never too low; the overstatement is at most the log bucket's width, below
// 0.4% of the value (batch sizes below 256 are exact). Clamping to the exact
// observed max keeps, for instance, a batch of exactly 4096 out of +Inf.
//
// Under load: scraped every few seconds. One pass over each histogram's
// non-empty buckets and a few hundred short appends into one reserved string
// (~10 KiB); no iostreams, no locale, no allocation per line.
//
// Thread-safety: a pure function of its arguments; call it from any thread
// with a snapshot that no other thread mutates meanwhile.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "batching/monitor.h"
#include "batching/runner.h"

namespace batchscope {

// What the HTTP layer knows beyond the engine.
struct ServerInfo {
  std::string model;           // model name, e.g. "linear_128x64"; any bytes
  std::string device;          // "cpu", "cuda:0"
  std::string version;         // batchscope version
  uint64_t http_requests = 0;  // HTTP requests answered, all routes
  uint64_t http_errors = 0;    // of which answered with status >= 400
  uint64_t http_parsed = 0;    // requests read (each answered, or dropped when the client left)
  uint64_t http_dropped = 0;   // answers never written: the client had gone
  std::vector<std::pair<int, uint64_t>> http_by_status;  // answers written per status
  // The connection limit (http_server.h, max_connections).
  uint64_t http_connections = 0;       // open now
  uint64_t http_max_connections = 0;   // the limit; 0: not known
  uint64_t http_closed_for_room = 0;   // idle keep-alive connections closed to make room
  uint64_t http_refused_at_limit = 0;  // answered 503 over the limit
  uint64_t http_accept_errors = 0;     // accepts that failed
  // A model run by worker processes (a Python model); empty for any other.
  std::optional<WorkerHealth> workers;
  // Its preprocess pool's processes, where it has one.
  std::optional<WorkerHealth> preprocess_workers;
};

// The Content-Type a server should send with prometheus_text()'s body.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Renders the snapshot's all-time totals and live gauges; ends with '\n'.
std::string prometheus_text(const MetricsSnapshot& s, const ServerInfo& info);

// Appends `value` escaped for use inside a label value's double quotes:
// backslash, double quote and newline become \\, \" and \n. Bytes that are
// not valid UTF-8 become U+FFFD, since the format requires UTF-8 and a model
// name comes from outside. Exposed for tests and for other exporters.
void append_prometheus_label_value(std::string& out, std::string_view value);

}  // namespace batchscope

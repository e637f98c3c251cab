// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// MetricsAggregator: folds the engine's RecordBatch drains into fixed time
// windows (for live plots and "the last 10 s") plus all-time totals (for run
// reports and /metrics). It is pure: no threads, no clock reads; every figure
// comes from the timestamps inside the records, so tests feed it hand-built
// records and a replay gives the same windows as the live run.
//
// Windows are aligned to multiples of the window length since the TimePoint
// epoch and kept contiguous from the oldest kept window to the newest, empty
// ones included, so an idle stretch plots as zeros instead of vanishing.
//
// Under load: fold() is linear in the records handed over, with a constant
// amount of work per record (a window lookup by index and a few histogram
// increments). Memory is bounded by `history` windows; each holds four
// LogHistograms sized by the range of values seen in that window. Records
// arriving late are placed in the window their timestamp falls in while it is
// still kept; older ones count in the totals only (late_records()).
//
// Thread-safety: not thread-safe. One thread (the GUI thread on its ~30 Hz
// timer, or a collector thread) owns the aggregator, drains the engine and
// calls fold(); others read snapshots it copies out.

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "common/clock.h"
#include "runs/histogram.h"
#include "runs/records.h"
#include "runs/run_stages.h"

namespace batchscope {

// Figures for one window, a merge of windows, or all time.
struct MetricsWindow {
  TimePoint start{};   // first instant covered
  Duration length{0};  // time covered; 0 for a window that covers nothing yet

  // Requests by Outcome, indexed by static_cast<int>(Outcome), filed under
  // the window they finished in.
  std::array<uint64_t, kOutcomeCount> outcomes{};
  // Requests that arrived in this window, whatever became of them: the
  // offered load. A request is counted once it has finished, so the newest
  // windows fill in as their requests complete.
  uint64_t arrivals = 0;
  // Latencies in nanoseconds, requests with Outcome::kOk only.
  LogHistogram queue_wait_ns;  // batched - arrival
  LogHistogram run_ns;         // run_end - run_start
  LogHistogram total_ns;       // completed - arrival
  // The same time in stages that follow one another (run_stages.h): a
  // preprocess pool's wait and run and the batch wait make up the queue
  // wait, the model and postprocess the run.
  RunStages stages;

  uint64_t batches = 0;
  std::array<uint64_t, kBatchReasonCount> batch_reasons{};  // by BatchReason
  uint64_t failed_batches = 0;
  // Batch sizes in requests. A LogHistogram rather than a per-size map: it is
  // exact for sizes below 256 and within 0.4% above, merges like the latency
  // histograms, and its buckets export the same way.
  LogHistogram batch_sizes;
  uint64_t batch_size_sum = 0;  // exact, for the mean
  // Requests of varying length: positions their batches held padded (size x
  // longest) and real (the lengths' sum); 0 where lengths do not vary.
  uint64_t padded_length = 0;
  uint64_t real_length = 0;

  // Queue depth: the largest DepthSample depth or peak, and the sum of the
  // sampled depths for their mean.
  uint32_t max_queue_depth = 0;
  uint64_t depth_samples = 0;
  uint64_t depth_sum = 0;
  uint64_t preparing_sum = 0;  // the samples' requests being prepared, for their mean

  uint64_t dropped = 0;  // records the engine lost before they were drained

  uint64_t count(Outcome o) const { return outcomes[static_cast<int>(o)]; }
  uint64_t count(BatchReason r) const { return batch_reasons[static_cast<int>(r)]; }
  uint64_t requests() const;
  double mean_batch_size() const;
  double mean_queue_depth() const;
  double mean_preparing() const;
  // The share of padded positions that were padding; 0 without any.
  double padding_waste() const;
  // Requests completed with kOk per second of `length`; 0 when length is 0.
  double throughput_per_s() const;

  // Adds other's figures; the covered span becomes the smallest interval
  // holding both spans (spans of length 0 are ignored).
  void merge(const MetricsWindow& other);
};

// A latency histogram in nanoseconds summarised in microseconds.
struct LatencySummary {
  uint64_t count = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p95_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
  double mean_us = 0;
};

LatencySummary summarize(const LogHistogram& ns);

class MetricsAggregator {
 public:
  // window_length below 1 ns is taken as 1 ns; history below 1 as 1.
  explicit MetricsAggregator(Duration window_length = std::chrono::seconds(1),
                             size_t history = 600);

  // Where each record goes:
  //   request -> the window of times.completed (when it is unset, the latest
  //              stage time the request reached); its arrival also counts in
  //              the window of times.arrival while that one is kept
  //   batch   -> the window of run_end (batched when run_end is unset)
  //   depth   -> the window of its time
  //   dropped -> the newest window after this fold, and the totals
  // The newest timestamp in `batch` opens its window before anything is
  // placed, so the outcome does not depend on the order of records within one
  // fold. Every record counts in totals() exactly once.
  void fold(const RecordBatch& batch);

  // Forgets all windows and totals.
  void reset();

  // Kept windows, oldest first, contiguous: windows()[i + 1].start ==
  // windows()[i].start + window_length(). At most `history` of them.
  const std::deque<MetricsWindow>& windows() const { return windows_; }
  // All records ever folded. Its span runs from the first window ever opened
  // to the end of the newest.
  const MetricsWindow& totals() const { return totals_; }
  Duration window_length() const { return length_; }
  size_t history() const { return history_; }
  // Records whose window had already been evicted: in totals only.
  uint64_t late_records() const { return late_; }

  // The merge of the kept windows whose start lies in [from, to). With no
  // such window, an empty MetricsWindow starting at `from` with length 0.
  MetricsWindow merged(TimePoint from, TimePoint to) const;

  // The window a timestamp falls in: floor((t - epoch) / window_length).
  int64_t window_key(TimePoint t) const;
  TimePoint window_start(int64_t key) const;

 private:
  // Opens windows up to `key`, evicting the oldest beyond history_.
  void advance_to(int64_t key);
  // The kept window for `key` (opening older empty windows in front when
  // that stays within history_), or nullptr when it was evicted.
  MetricsWindow* slot(int64_t key);
  MetricsWindow make_window(int64_t key) const;
  void extend_totals_span(const MetricsWindow& w);

  void add_request(const RequestRecord& r);
  void add_batch(const BatchRecord& b);
  void add_depth(const DepthSample& d);

  Duration length_;
  size_t history_;
  std::deque<MetricsWindow> windows_;
  int64_t newest_key_ = 0;  // key of windows_.back(); meaningful when not empty
  MetricsWindow totals_;
  uint64_t late_ = 0;
};

}  // namespace batchscope

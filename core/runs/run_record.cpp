// SPDX-License-Identifier: GPL-3.0-or-later
// summarize_run(): folds a recorded run into totals and fixed windows. The
// exports live in run_export.cpp.
//
// Every figure comes from the timestamps in RunData, so a replay of the same
// run gives the same summary. Latency and send-lag quantiles come from
// LogHistogram (nearest rank, within 0.4%); counts, means, maxima and the
// batch-size histogram are exact.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runs/histogram.h"
#include "runs/run_record.h"

#include "runs/metrics.h"

namespace batchscope {

namespace {

double ns_to_ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

RunLatency latency_of(const LogHistogram& ns) {
  const LatencySummary u = summarize(ns);
  return {u.p50_us / 1e3,  u.p90_us / 1e3, u.p95_us / 1e3, u.p99_us / 1e3,
          u.p999_us / 1e3, u.max_us / 1e3, u.mean_us / 1e3};
}

// Per-window accumulators that are not already RunWindow fields.
struct WindowAcc {
  LogHistogram latency_ns;
  uint64_t batches = 0;
  uint64_t batch_size_sum = 0;
  uint64_t depth_samples = 0;
  uint64_t depth_sum = 0;
};

// Maps a time to its window. Windows are half-open [k*w, (k+1)*w) from
// run.start, except that the last one also takes everything at or after its
// start: the span end itself, and stragglers such as a depth sample taken
// after the last answer, land there rather than opening a window of their own
// (a trailing near-empty window would plot as a bogus throughput drop).
// Times before run.start land in window 0 for the same reason.
class WindowIndex {
 public:
  WindowIndex(TimePoint start, Duration window, size_t count)
      : start_(start), window_(window), count_(count) {}

  size_t operator()(TimePoint t) const {
    if (t <= start_) return 0;
    const auto k = static_cast<uint64_t>((t - start_) / window_);
    return static_cast<size_t>(std::min<uint64_t>(k, count_ - 1));
  }

 private:
  TimePoint start_;
  Duration window_;
  size_t count_;
};

void count_outcome(Outcome o, uint64_t& ok, uint64_t& rejected, uint64_t& timed_out,
                   uint64_t& errors) {
  switch (o) {
    case Outcome::kOk: ++ok; return;
    case Outcome::kRejected: ++rejected; return;
    case Outcome::kTimedOut: ++timed_out; return;
    default: ++errors; return;  // model error, cancelled, shutdown, invalid
  }
}

// The end of the span the windows cover: the last answer when there are
// requests (intended times too, in case a request was never stamped done),
// otherwise the last batch or depth sample so an engine-only run still plots.
TimePoint span_end(const RunData& run) {
  TimePoint end = run.start;
  if (!run.requests.empty()) {
    for (const RunRequest& r : run.requests) end = std::max({end, r.done, r.intended});
    return end;
  }
  for (const BatchRecord& b : run.batches) end = std::max(end, finished_at(b));
  for (const DepthSample& d : run.depth) end = std::max(end, d.time);
  return end;
}

void fold_totals(const RunData& run, RunSummary& s) {
  LogHistogram latency_ns;
  LogHistogram lag_ns;
  TimePoint first = run.start;
  TimePoint last_done = run.start;
  bool any_done = false;
  for (const RunRequest& r : run.requests) {
    count_outcome(r.outcome, s.ok, s.rejected, s.timed_out, s.errors);
    // Latency counts from the intended send so that a stalled client or
    // server shows up as latency rather than as fewer requests sent.
    if (r.outcome == Outcome::kOk) latency_ns.record(r.done - r.intended);
    lag_ns.record(r.sent - r.intended);
    first = std::min(first, r.intended);
    last_done = any_done ? std::max(last_done, r.done) : r.done;
    any_done = true;
  }
  s.sent = run.requests.size();
  s.latency = latency_of(latency_ns);
  if (!lag_ns.empty()) {
    s.lag_p50_ms = ns_to_ms(lag_ns.quantile(0.50));
    s.lag_p99_ms = ns_to_ms(lag_ns.quantile(0.99));
    s.lag_max_ms = ns_to_ms(lag_ns.max());
  }
  if (any_done && last_done > first) {
    s.duration_s = std::chrono::duration<double>(last_done - first).count();
    s.throughput_rps = static_cast<double>(s.ok) / s.duration_s;
  }

  uint64_t size_sum = 0;
  for (const BatchRecord& b : run.batches) {
    ++s.batch_histogram[b.size];
    size_sum += b.size;
    s.real_length += b.length_sum;
    s.padded_length += static_cast<uint64_t>(b.size) * b.longest;
  }
  if (s.padded_length > 0) {
    s.padding_waste =
        1.0 - static_cast<double>(s.real_length) / static_cast<double>(s.padded_length);
  }
  if (!run.batches.empty()) {
    s.batch_mean = static_cast<double>(size_sum) / static_cast<double>(run.batches.size());
  }
  s.stages = stage_figures(run.stages);

  uint64_t depth_sum = 0;
  for (const DepthSample& d : run.depth) {
    depth_sum += d.depth;
    s.depth_max = std::max({s.depth_max, d.depth, d.peak});
  }
  if (!run.depth.empty()) {
    s.depth_mean = static_cast<double>(depth_sum) / static_cast<double>(run.depth.size());
  }
}

void fold_windows(const RunData& run, Duration window, RunSummary& s) {
  if (run.requests.empty() && run.batches.empty() && run.depth.empty()) return;
  // A non-positive window length would divide by zero; one second is the
  // documented default and a harmless fallback.
  if (window <= Duration::zero()) window = std::chrono::seconds(1);

  const TimePoint end = span_end(run);
  const Duration span = end - run.start;
  // ceil(span / window), at least one window so a run that happened in a
  // single instant still has somewhere to put its figures.
  const auto whole = static_cast<uint64_t>(span / window);
  const uint64_t count = std::max<uint64_t>(1, whole + (span % window != Duration::zero()));
  const WindowIndex index(run.start, window, static_cast<size_t>(count));

  s.windows.assign(static_cast<size_t>(count), RunWindow{});
  std::vector<WindowAcc> acc(static_cast<size_t>(count));
  const double window_s = std::chrono::duration<double>(window).count();
  for (size_t k = 0; k < s.windows.size(); ++k) {
    RunWindow& w = s.windows[k];
    w.start_s = window_s * static_cast<double>(k);
    w.length_s = window_s;
  }
  // The last window stops at the span end so its throughput is a rate over
  // the time it really covers.
  if (span > Duration::zero()) {
    const Duration last_start = window * static_cast<int64_t>(count - 1);
    s.windows.back().length_s = std::chrono::duration<double>(span - last_start).count();
  } else {
    s.windows.back().length_s = 0;
  }

  for (const RunRequest& r : run.requests) {
    ++s.windows[index(r.intended)].sent;
    const size_t k = index(r.done);
    RunWindow& w = s.windows[k];
    count_outcome(r.outcome, w.ok, w.rejected, w.timed_out, w.errors);
    if (r.outcome == Outcome::kOk) acc[k].latency_ns.record(r.done - r.intended);
  }
  for (const BatchRecord& b : run.batches) {
    const size_t k = index(finished_at(b));
    ++acc[k].batches;
    acc[k].batch_size_sum += b.size;
    s.windows[k].batch_max = std::max(s.windows[k].batch_max, b.size);
  }
  for (const DepthSample& d : run.depth) {
    const size_t k = index(d.time);
    ++acc[k].depth_samples;
    acc[k].depth_sum += d.depth;
    s.windows[k].depth_max = std::max({s.windows[k].depth_max, d.depth, d.peak});
  }

  for (size_t k = 0; k < s.windows.size(); ++k) {
    RunWindow& w = s.windows[k];
    const WindowAcc& a = acc[k];
    w.latency = latency_of(a.latency_ns);
    if (w.length_s > 0) w.throughput_rps = static_cast<double>(w.ok) / w.length_s;
    if (a.batches > 0) {
      w.batch_mean = static_cast<double>(a.batch_size_sum) / static_cast<double>(a.batches);
    }
    if (a.depth_samples > 0) {
      w.depth_mean = static_cast<double>(a.depth_sum) / static_cast<double>(a.depth_samples);
    }
  }
}

}  // namespace

void keep_prepared(const RequestRecord& r, std::vector<PrepareSpan>& out) {
  const StageTimes& t = r.times;
  if (t.prepare_start == TimePoint{} || t.admitted < t.prepare_start) return;
  out.push_back({t.prepare_start, t.admitted, r.outcome == Outcome::kOk});
}

std::span<const RunWindow> rate_windows(const RunSummary& s) {
  std::span<const RunWindow> all(s.windows);
  if (all.size() < 2) return all;
  const bool short_tail = all.back().length_s < 0.5 * all.front().length_s;
  return short_tail ? all.first(all.size() - 1) : all;
}

RunSummary summarize_run(const RunData& run, Duration window) {
  RunSummary s;
  fold_totals(run, s);
  fold_windows(run, window, s);
  return s;
}

}  // namespace batchscope

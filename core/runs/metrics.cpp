// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/metrics.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

namespace batchscope {

namespace {

TimePoint request_time(const RequestRecord& r) {
  const StageTimes& t = r.times;
  if (t.completed != TimePoint{}) return t.completed;
  // A request that never got its callback stamped still happened; file it
  // under the last stage it reached rather than at the epoch.
  return std::max({t.arrival, t.admitted, t.batched, t.run_start, t.run_end});
}

void add_request_to(MetricsWindow& w, const RequestRecord& r) {
  const int outcome = static_cast<int>(r.outcome);
  if (outcome < 0 || outcome >= kOutcomeCount) return;
  ++w.outcomes[outcome];
  if (r.outcome != Outcome::kOk) return;
  const StageTimes& t = r.times;
  w.queue_wait_ns.record(t.batched - t.arrival);
  w.run_ns.record(t.run_end - t.run_start);
  w.total_ns.record(t.completed - t.arrival);
  w.stages.add(r);
}

void add_batch_to(MetricsWindow& w, const BatchRecord& b) {
  ++w.batches;
  const int reason = static_cast<int>(b.reason);
  if (reason >= 0 && reason < kBatchReasonCount) ++w.batch_reasons[reason];
  if (b.failed) ++w.failed_batches;
  w.batch_sizes.record(b.size);
  w.batch_size_sum += b.size;
  w.padded_length += static_cast<uint64_t>(b.size) * b.longest;
  w.real_length += b.length_sum;
}

void add_depth_to(MetricsWindow& w, const DepthSample& d) {
  w.max_queue_depth = std::max({w.max_queue_depth, d.depth, d.peak});
  ++w.depth_samples;
  w.depth_sum += d.depth;
  w.preparing_sum += d.preparing;
}

double ns_to_us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace

// ---- MetricsWindow ----

uint64_t MetricsWindow::requests() const {
  uint64_t n = 0;
  for (uint64_t c : outcomes) n += c;
  return n;
}

double MetricsWindow::mean_batch_size() const {
  return batches == 0 ? 0.0 : static_cast<double>(batch_size_sum) / static_cast<double>(batches);
}

double MetricsWindow::padding_waste() const {
  return padded_length == 0
             ? 0.0
             : 1.0 - static_cast<double>(real_length) / static_cast<double>(padded_length);
}

double MetricsWindow::mean_queue_depth() const {
  return depth_samples == 0 ? 0.0
                            : static_cast<double>(depth_sum) / static_cast<double>(depth_samples);
}

double MetricsWindow::mean_preparing() const {
  return depth_samples == 0
             ? 0.0
             : static_cast<double>(preparing_sum) / static_cast<double>(depth_samples);
}

double MetricsWindow::throughput_per_s() const {
  const double seconds = std::chrono::duration<double>(length).count();
  return seconds <= 0.0 ? 0.0 : static_cast<double>(count(Outcome::kOk)) / seconds;
}

void MetricsWindow::merge(const MetricsWindow& other) {
  if (other.length > Duration::zero()) {
    if (length <= Duration::zero()) {
      start = other.start;
      length = other.length;
    } else {
      const TimePoint end = std::max(start + length, other.start + other.length);
      start = std::min(start, other.start);
      length = end - start;
    }
  }
  for (int i = 0; i < kOutcomeCount; ++i) outcomes[i] += other.outcomes[i];
  arrivals += other.arrivals;
  queue_wait_ns.merge(other.queue_wait_ns);
  for (int i = 0; i < kRunStageCount; ++i) stages.ns[i].merge(other.stages.ns[i]);
  run_ns.merge(other.run_ns);
  total_ns.merge(other.total_ns);
  batches += other.batches;
  for (int i = 0; i < kBatchReasonCount; ++i) batch_reasons[i] += other.batch_reasons[i];
  failed_batches += other.failed_batches;
  batch_sizes.merge(other.batch_sizes);
  batch_size_sum += other.batch_size_sum;
  padded_length += other.padded_length;
  real_length += other.real_length;
  max_queue_depth = std::max(max_queue_depth, other.max_queue_depth);
  depth_samples += other.depth_samples;
  depth_sum += other.depth_sum;
  preparing_sum += other.preparing_sum;
  dropped += other.dropped;
}

LatencySummary summarize(const LogHistogram& ns) {
  LatencySummary s;
  s.count = ns.count();
  if (s.count == 0) return s;
  s.p50_us = ns_to_us(ns.quantile(0.50));
  s.p90_us = ns_to_us(ns.quantile(0.90));
  s.p95_us = ns_to_us(ns.quantile(0.95));
  s.p99_us = ns_to_us(ns.quantile(0.99));
  s.p999_us = ns_to_us(ns.quantile(0.999));
  s.max_us = ns_to_us(ns.max());
  s.mean_us = ns.mean() / 1000.0;
  return s;
}

// ---- MetricsAggregator ----

MetricsAggregator::MetricsAggregator(Duration window_length, size_t history)
    : length_(std::max(window_length, Duration(1))), history_(std::max<size_t>(history, 1)) {}

int64_t MetricsAggregator::window_key(TimePoint t) const {
  const int64_t n = t.time_since_epoch().count();
  const int64_t len = length_.count();
  int64_t key = n / len;
  if (n % len != 0 && n < 0) --key;  // floor, not truncation, before the epoch
  return key;
}

TimePoint MetricsAggregator::window_start(int64_t key) const {
  return TimePoint(Duration(key * length_.count()));
}

MetricsWindow MetricsAggregator::make_window(int64_t key) const {
  MetricsWindow w;
  w.start = window_start(key);
  w.length = length_;
  return w;
}

void MetricsAggregator::extend_totals_span(const MetricsWindow& w) {
  MetricsWindow span;
  span.start = w.start;
  span.length = w.length;
  totals_.merge(span);  // only the span: span's figures are all zero
}

void MetricsAggregator::advance_to(int64_t key) {
  if (windows_.empty()) {
    windows_.push_back(make_window(key));
    newest_key_ = key;
    extend_totals_span(windows_.back());
    return;
  }
  if (key <= newest_key_) return;
  // Unsigned difference: exact for any pair of int64 keys with key > newest.
  const uint64_t gap = static_cast<uint64_t>(key) - static_cast<uint64_t>(newest_key_);
  if (gap >= history_) {
    // Every kept window would be evicted; skip creating the empty ones in
    // between only to drop them.
    windows_.clear();
    windows_.push_back(make_window(key));
  } else {
    for (int64_t k = newest_key_ + 1; k <= key; ++k) windows_.push_back(make_window(k));
    while (windows_.size() > history_) windows_.pop_front();
  }
  newest_key_ = key;
  extend_totals_span(windows_.back());
}

MetricsWindow* MetricsAggregator::slot(int64_t key) {
  if (windows_.empty() || key > newest_key_) return nullptr;  // fold() advances first
  const uint64_t age = static_cast<uint64_t>(newest_key_) - static_cast<uint64_t>(key);
  if (age >= history_) return nullptr;
  const uint64_t kept = windows_.size();
  if (age < kept) return &windows_[kept - 1 - age];
  // Older than the oldest kept window but within history: those windows were
  // never opened (the deque only grows back to history after a jump), so an
  // empty one is the truth, not a resurrection of evicted figures.
  const int64_t oldest = newest_key_ - static_cast<int64_t>(kept) + 1;
  for (int64_t k = oldest - 1; k >= key; --k) windows_.push_front(make_window(k));
  extend_totals_span(windows_.front());
  return &windows_.front();
}

void MetricsAggregator::add_request(const RequestRecord& r) {
  add_request_to(totals_, r);
  if (MetricsWindow* w = slot(window_key(request_time(r)))) {
    add_request_to(*w, r);
  } else {
    ++late_;
  }
}

void MetricsAggregator::add_batch(const BatchRecord& b) {
  add_batch_to(totals_, b);
  if (MetricsWindow* w = slot(window_key(finished_at(b)))) {
    add_batch_to(*w, b);
  } else {
    ++late_;
  }
}

void MetricsAggregator::add_depth(const DepthSample& d) {
  add_depth_to(totals_, d);
  if (MetricsWindow* w = slot(window_key(d.time))) {
    add_depth_to(*w, d);
  } else {
    ++late_;
  }
}

void MetricsAggregator::fold(const RecordBatch& batch) {
  std::optional<int64_t> newest;
  auto see = [&](TimePoint t) {
    const int64_t key = window_key(t);
    if (!newest || key > *newest) newest = key;
  };
  for (const RequestRecord& r : batch.requests) see(request_time(r));
  for (const BatchRecord& b : batch.batches) see(finished_at(b));
  for (const DepthSample& d : batch.depth) see(d.time);
  if (newest) advance_to(*newest);

  for (const RequestRecord& r : batch.requests) add_request(r);
  for (const BatchRecord& b : batch.batches) add_batch(b);
  for (const DepthSample& d : batch.depth) add_depth(d);
  // Arrivals last, once every record has been placed, and only into windows
  // already kept: they never open one, so the kept span stays what the other
  // records made it, whatever their order.
  if (!windows_.empty()) {
    const int64_t oldest = newest_key_ - static_cast<int64_t>(windows_.size()) + 1;
    for (const RequestRecord& r : batch.requests) {
      ++totals_.arrivals;
      if (r.times.arrival == TimePoint{}) continue;
      const int64_t key = window_key(r.times.arrival);
      if (key >= oldest && key <= newest_key_)
        ++windows_[static_cast<size_t>(key - oldest)].arrivals;
    }
  }

  totals_.dropped += batch.dropped;
  if (!windows_.empty()) windows_.back().dropped += batch.dropped;
}

void MetricsAggregator::reset() {
  windows_.clear();
  newest_key_ = 0;
  totals_ = MetricsWindow{};
  late_ = 0;
}

MetricsWindow MetricsAggregator::merged(TimePoint from, TimePoint to) const {
  MetricsWindow out;
  out.start = from;
  for (const MetricsWindow& w : windows_) {
    if (w.start >= from && w.start < to) out.merge(w);
  }
  return out;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/gen_metrics.h"

#include <algorithm>

namespace batchscope {

void GenWindow::merge(const GenWindow& o) {
  for (size_t i = 0; i < reasons.size(); ++i) reasons[i] += o.reasons[i];
  finished += o.finished;
  queue_wait_ns.merge(o.queue_wait_ns);
  ttft_ns.merge(o.ttft_ns);
  itl_ns.merge(o.itl_ns);
  e2e_ns.merge(o.e2e_ns);
  steps += o.steps;
  decodes += o.decodes;
  prefill_tokens += o.prefill_tokens;
  output_tokens += o.output_tokens;
  preemptions += o.preemptions;
  step_ns.merge(o.step_ns);
  running_sum += o.running_sum;
  waiting_sum += o.waiting_sum;
  running_max = std::max(running_max, o.running_max);
  waiting_max = std::max(waiting_max, o.waiting_max);
  blocks_used_max = std::max(blocks_used_max, o.blocks_used_max);
  blocks_total = std::max(blocks_total, o.blocks_total);
}

GenMetrics::GenMetrics(Duration window, size_t history)
    : window_(window > Duration::zero() ? window : std::chrono::seconds(1)),
      history_(std::max<size_t>(history, 1)) {}

void GenMetrics::clear() {
  windows_.clear();
  totals_ = GenWindow{};
}

namespace {

GenWindow empty_window(TimePoint start, Duration length) {
  GenWindow w;
  w.start = start;
  w.length = length;
  return w;
}

}  // namespace

GenWindow* GenMetrics::window_at(TimePoint t) {
  const auto index = [&](TimePoint x) { return x.time_since_epoch() / window_; };
  const TimePoint start = TimePoint(index(t) * window_);
  if (windows_.empty()) {
    windows_.push_back(empty_window(start, window_));
    return &windows_.back();
  }
  if (t < windows_.front().start) return nullptr;  // older than what is kept
  while (windows_.back().start < start) {
    windows_.push_back(empty_window(windows_.back().start + window_, window_));
    if (windows_.size() > history_) windows_.pop_front();
  }
  const auto i = static_cast<size_t>(index(t) - index(windows_.front().start));
  return i < windows_.size() ? &windows_[i] : nullptr;
}

namespace {

void add_request(GenWindow& w, const GenRecord& r) {
  ++w.finished;
  ++w.reasons[static_cast<size_t>(r.reason)];
  if (r.reason != FinishReason::kStop && r.reason != FinishReason::kLength) return;
  if (r.admitted != kNever) w.queue_wait_ns.record(r.admitted - r.arrival);
  if (r.first_token != kNever) w.ttft_ns.record(r.first_token - r.arrival);
  for (Duration g : r.gaps) w.itl_ns.record(g);
  w.e2e_ns.record(r.finished - r.arrival);
}

void add_step(GenWindow& w, const StepRecord& s) {
  ++w.steps;
  w.decodes += s.decodes;
  w.prefill_tokens += s.prefill_tokens;
  w.output_tokens += s.output_tokens;
  w.preemptions += s.preempted;
  w.step_ns.record(s.end - s.start);
  w.running_sum += s.running;
  w.waiting_sum += s.waiting;
  w.running_max = std::max(w.running_max, s.running);
  w.waiting_max = std::max(w.waiting_max, s.waiting);
  w.blocks_used_max = std::max(w.blocks_used_max, s.blocks_used);
  w.blocks_total = std::max(w.blocks_total, s.blocks_total);
}

}  // namespace

void GenMetrics::fold(std::span<const GenRecord> requests, std::span<const StepRecord> steps) {
  for (const StepRecord& step : steps) {
    if (lanes_.size() <= step.lane) lanes_.resize(step.lane + 1);
    lanes_[step.lane] = {step.running, step.waiting, step.blocks_used, step.blocks_total};
    StepRecord s = step;  // with the engine's counts: every lane's last
    s.running = s.waiting = s.blocks_used = s.blocks_total = 0;
    for (const LaneState& l : lanes_) {
      s.running += l.running;
      s.waiting += l.waiting;
      s.blocks_used += l.blocks_used;
      s.blocks_total += l.blocks_total;
    }
    add_step(totals_, s);
    if (GenWindow* w = window_at(s.end)) add_step(*w, s);
  }
  for (const GenRecord& r : requests) {
    add_request(totals_, r);
    if (GenWindow* w = window_at(r.finished)) add_request(*w, r);
  }
  if (!windows_.empty()) {
    totals_.start = windows_.front().start;
    totals_.length = windows_.back().start + window_ - totals_.start;
  }
}

}  // namespace batchscope

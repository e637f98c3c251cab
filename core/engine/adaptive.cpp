#include "adaptive.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace batchscope {

namespace {

// The least-squares slope needs sizes that differ: with the weighted variance
// of the sizes below this fraction of their mean square (sizes within roughly
// 10% of each other), timing noise would dominate the fitted intercept.
constexpr double kMinRelativeSizeVariance = 0.01;

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

size_t user_cap(const Options& o) { return std::max<size_t>(o.max_batch_size, 1); }

// A throttle that reaches the user's maximum through evidence is dropped, so
// that a later raise of max_batch_size applies at once.
void set_cap(AdaptiveState& s, size_t next, const Options& o) {
  s.cap = next >= user_cap(o) ? 0 : static_cast<uint32_t>(next);
}

void add_cost_sample(AdaptiveCostSums& c, double size, double run_us) {
  const double l = kAdaptiveForgetting;
  c.w = l * c.w + 1;
  c.b = l * c.b + size;
  c.bb = l * c.bb + size * size;
  c.t = l * c.t + run_us;
  c.bt = l * c.bt + size * run_us;
}

void push_latency(AdaptiveState& s, double us) {
  s.latencies_us[s.latency_next] = us;
  s.latency_next = static_cast<uint32_t>((s.latency_next + 1) % kAdaptiveLatencyWindow);
  if (s.latency_count < kAdaptiveLatencyWindow) ++s.latency_count;
}

void clear_latencies(AdaptiveState& s) {
  s.latency_count = 0;
  s.latency_next = 0;
}

// Nearest-rank p99 of the window: the ceil(0.99 n)-th smallest value.
double window_p99_us(const AdaptiveState& s) {
  std::array<double, kAdaptiveLatencyWindow> v;
  const size_t n = s.latency_count;
  std::copy_n(s.latencies_us.begin(), n, v.begin());
  const size_t rank = (99 * n + 99) / 100;  // ceil(0.99 n), >= 1 for n >= 1
  std::nth_element(v.begin(), v.begin() + (rank - 1), v.begin() + n);
  return v[rank - 1];
}

// This period's arrival rate, if its arrivals allow one, and moves the anchor.
std::optional<double> take_period_rate(AdaptiveState& s) {
  std::optional<double> rate;
  if (s.period_arrivals > 0) {
    if (!s.rate_anchored) {
      // No earlier arrival to measure from: n arrivals span n - 1 gaps.
      const double span = seconds(s.period_last_arrival - s.period_first_arrival);
      if (s.period_arrivals >= 2 && span > 0) rate = (s.period_arrivals - 1) / span;
    } else {
      // Arrivals before the anchor (batches that finished out of order on
      // other lanes) still count: over several periods every request is
      // counted once and the spans tile the timeline.
      const double span = seconds(s.period_last_arrival - s.rate_anchor);
      if (span > 0) rate = s.period_arrivals / span;
    }
    if (!s.rate_anchored || s.period_last_arrival > s.rate_anchor) {
      s.rate_anchor = s.period_last_arrival;
      s.rate_anchored = true;
    }
  }
  s.period_arrivals = 0;
  s.period_first_arrival = TimePoint{};
  s.period_last_arrival = TimePoint{};
  return rate;
}

void update_load_mode(AdaptiveState& s, double rate, const Options& o) {
  const double expected = rate * static_cast<double>(o.max_wait_us) * 1e-6;
  if (expected < kAdaptiveLowLoadEnter) {
    s.high_streak = 0;
    if (!s.low_load && ++s.low_streak >= kAdaptiveLowLoadAfter) {
      s.low_load = true;
      s.low_streak = 0;
    }
  } else if (expected >= kAdaptiveLowLoadLeave) {
    s.low_streak = 0;
    if (s.low_load && ++s.high_streak >= kAdaptiveLowLoadAfter) {
      s.low_load = false;
      s.high_streak = 0;
    }
  } else {
    s.low_streak = 0;
    s.high_streak = 0;
  }
}

void change_cap(AdaptiveState& s, size_t next, const Options& o) {
  s.over_streak = 0;
  s.under_streak = 0;
  if (next == adaptive_effective_cap(s, o)) return;
  set_cap(s, next, o);
  ++s.cap_changes;
  // Latencies seen under the old cap say little about the new one.
  clear_latencies(s);
}

void update_cap(AdaptiveState& s, const Options& o) {
  if (s.latency_count == 0) return;  // no evidence this period: counts stand
  const double p99 = window_p99_us(s);
  s.last_p99_us = p99;
  const double target_us = o.target_p99_ms * 1000.0;
  if (p99 > target_us) {
    s.under_streak = 0;
    ++s.over_streak;
  } else if (p99 < kAdaptiveIncreaseBelow * target_us) {
    s.over_streak = 0;
    ++s.under_streak;
  } else {
    s.over_streak = 0;
    s.under_streak = 0;
  }

  const size_t cap = adaptive_effective_cap(s, o);
  if (s.over_streak >= kAdaptiveDecreaseAfter) {
    const size_t floor = adaptive_throughput_floor(s, o);
    // Throughput-bound: latency is queueing, and only larger batches drain it.
    const size_t next = s.backlogged ? std::max(cap * 2, floor) : std::max(cap / 2, floor);
    change_cap(s, std::clamp<size_t>(next, 1, user_cap(o)), o);
  } else if (s.under_streak >= kAdaptiveIncreaseAfter) {
    const size_t step = std::max<size_t>(1, o.max_batch_size / 16);
    change_cap(s, std::min(user_cap(o), cap + step), o);
  }
}

void evaluate(AdaptiveState& s, const Options& o) {
  ++s.evaluations;
  s.backlogged = s.batches_since_eval > 0 && 2 * s.backlogged_since_eval >= s.batches_since_eval;
  s.batches_since_eval = 0;
  s.requests_since_eval = 0;
  s.backlogged_since_eval = 0;
  if (auto rate = take_period_rate(s)) {
    s.arrival_rate_per_s = *rate;
    update_load_mode(s, *rate, o);
  }
  update_cap(s, o);
}

}  // namespace

size_t adaptive_effective_cap(const AdaptiveState& s, const Options& o) {
  const size_t user = user_cap(o);
  return s.cap == 0 ? user : std::clamp<size_t>(s.cap, 1, user);
}

std::optional<AdaptiveCostModel> adaptive_cost_model(const AdaptiveState& s) {
  const AdaptiveCostSums& c = s.cost;
  if (!(c.w > 0) || !(c.bb > 0)) return std::nullopt;
  const double mean_b = c.b / c.w;
  const double mean_bb = c.bb / c.w;
  const double mean_t = c.t / c.w;
  const double mean_bt = c.bt / c.w;
  const double var_b = mean_bb - mean_b * mean_b;

  AdaptiveCostModel m;
  if (var_b > kMinRelativeSizeVariance * mean_bb) {
    m.per_item_us = (mean_bt - mean_b * mean_t) / var_b;
    m.intercept_us = mean_t - m.per_item_us * mean_b;
    // Noise can tilt the line; a run time that falls with size or starts
    // below zero is not physical, so fall back to the nearest sane shape.
    if (m.per_item_us < 0) {
      m.per_item_us = 0;
      m.intercept_us = mean_t;
    } else if (m.intercept_us < 0) {
      m.intercept_us = 0;
      m.per_item_us = mean_bt / mean_bb;
      m.proportional = true;
    }
  } else {
    m.per_item_us = mean_bt / mean_bb;  // least squares through the origin
    m.proportional = true;
  }
  return m;
}

std::optional<double> adaptive_predict_run_us(const AdaptiveState& s, double size) {
  const auto m = adaptive_cost_model(s);
  if (!m) return std::nullopt;
  return m->intercept_us + m->per_item_us * size;
}

size_t adaptive_throughput_floor(const AdaptiveState& s, const Options& o) {
  const size_t user = user_cap(o);
  if (!(s.arrival_rate_per_s > 0)) return 1;
  const auto m = adaptive_cost_model(s);
  if (!m) return 1;
  const double lanes = std::max<uint32_t>(o.num_lanes, 1);
  // Requests per microsecond each lane must serve.
  const double need = s.arrival_rate_per_s * kAdaptiveHeadroom / lanes * 1e-6;
  // b / (a + c b) >= need  <=>  b (1 - need c) >= need a.
  const double slack = 1.0 - need * m->per_item_us;
  // No batch size keeps up, says the model: believed only when the queue
  // shows it (see the header), and then the largest batch is the best there is.
  if (!(slack > 0)) return s.backlogged ? user : 1;
  const double b = need * m->intercept_us / slack;
  if (!(b < static_cast<double>(user))) return user;
  return std::clamp<size_t>(static_cast<size_t>(std::ceil(b)), 1, user);
}

AdaptiveState adaptive_observe(AdaptiveState s, const BatchRecord& batch,
                               std::span<const RequestRecord> requests, const Options& o) {
  // A lowered max_batch_size also bounds the throttle itself, so the state
  // never shows a cap the user has ruled out.
  if (s.cap > o.max_batch_size) s.cap = static_cast<uint32_t>(user_cap(o));

  if (!batch.failed && batch.size > 0 && batch.run_end > batch.run_start) {
    add_cost_sample(s.cost, batch.size, to_us(batch.run_end - batch.run_start));
  }

  for (const RequestRecord& r : requests) {
    const TimePoint arrival = r.times.arrival;
    if (arrival == TimePoint{}) continue;
    if (s.period_arrivals == 0) {
      s.period_first_arrival = arrival;
      s.period_last_arrival = arrival;
    } else {
      s.period_first_arrival = std::min(s.period_first_arrival, arrival);
      s.period_last_arrival = std::max(s.period_last_arrival, arrival);
    }
    ++s.period_arrivals;
    if (r.outcome == Outcome::kOk && r.times.completed >= arrival) {
      push_latency(s, to_us(r.times.completed - arrival));
    }
  }

  ++s.batches_since_eval;
  if (batch.reason == BatchReason::kFull && batch.queue_depth_after > 0) ++s.backlogged_since_eval;
  s.requests_since_eval += static_cast<uint32_t>(requests.size());
  if (s.batches_since_eval >= kAdaptiveEvalBatches ||
      s.requests_since_eval >= kAdaptiveEvalRequests) {
    evaluate(s, o);
  }
  return s;
}

Limits adaptive_limits(const AdaptiveState& s, const QueueView& q, const Options& o) {
  Limits l;
  l.max_batch = adaptive_effective_cap(s, o);
  const int64_t max_wait_us = std::max<int64_t>(o.max_wait_us, 0);
  l.max_wait = Duration(0);
  if (max_wait_us == 0 || s.low_load) return l;

  double wait_us = static_cast<double>(max_wait_us);
  const double rate = q.arrival_rate_per_s > 0 ? q.arrival_rate_per_s : s.arrival_rate_per_s;
  if (rate > 0 && std::isfinite(rate)) {
    wait_us = std::min(wait_us, static_cast<double>(l.max_batch - 1) / rate * 1e6);
  }
  if (const auto run_us = adaptive_predict_run_us(s, static_cast<double>(l.max_batch))) {
    // The unlucky request finds a batch just started, waits for it, then
    // waits for its own batch to form and run: two run times besides the wait.
    wait_us = std::min(wait_us, o.target_p99_ms * 1000.0 - 2.0 * *run_us);
  }
  wait_us = std::max(wait_us, 0.0);
  const Duration max_wait = microseconds(max_wait_us);
  l.max_wait = std::min(max_wait, Duration(std::llround(wait_us * 1000.0)));
  return l;
}

Limits AdaptiveStrategy::limits(const QueueView& q, const Options& o) const {
  return adaptive_limits(state_, q, o);
}

Decision AdaptiveStrategy::decide(const QueueView& q, TimePoint now, const Options& o) const {
  return decide_fifo(q, now, limits(q, o));
}

void AdaptiveStrategy::observe(const BatchRecord& batch, std::span<const RequestRecord> requests,
                               const Options& o) {
  state_ = adaptive_observe(std::move(state_), batch, requests, o);
}

}  // namespace batchscope

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

// Step 4: the guard on the evidence.
void update_guard(AdaptiveState& s, const Options& o) {
  if (s.latency_count == 0) return;  // no evidence this period: the count stands
  const double p99 = window_p99_us(s);
  s.last_p99_us = p99;
  const double target_us = o.target_p99_ms * 1000.0;
  bool switched = false;
  if (s.efficient) {
    if (p99 > kAdaptiveStopAbove * target_us) {
      s.efficient = false;
      switched = true;
    }
  } else if (p99 < kAdaptiveResumeBelow * target_us) {
    if (++s.calm_streak >= kAdaptiveResumeAfter) {
      s.efficient = true;
      switched = true;
    }
  } else {
    s.calm_streak = 0;
  }
  if (switched) {
    s.calm_streak = 0;
    ++s.guard_switches;
    // Latencies seen under the old choice say little about the new one.
    clear_latencies(s);
  }
}

AdaptivePlanKey key_of(const AdaptiveCostModel& m, const Options& o) {
  AdaptivePlanKey k;
  k.intercept_us = m.intercept_us;
  k.per_item_us = m.per_item_us;
  k.max_batch_size = o.max_batch_size;
  k.max_wait_us = o.max_wait_us;
  k.num_lanes = o.num_lanes;
  k.queue_capacity = o.queue_capacity;
  k.request_timeout_ms = o.request_timeout_ms;
  k.target_p99_ms = o.target_p99_ms;
  return k;
}

bool same_options(const AdaptivePlanKey& a, const AdaptivePlanKey& b) {
  return a.max_batch_size == b.max_batch_size && a.max_wait_us == b.max_wait_us &&
         a.num_lanes == b.num_lanes && a.queue_capacity == b.queue_capacity &&
         a.request_timeout_ms == b.request_timeout_ms && a.target_p99_ms == b.target_p99_ms;
}

bool drifted(double was, double now) {
  return !(std::abs(now - was) <= kAdaptiveReplanDrift * std::max(was, 1e-3));
}

// t(1) or t(max_batch_size) moved by more than kAdaptiveReplanDrift.
bool fit_drifted(const AdaptivePlanKey& was, const AdaptivePlanKey& now, const Options& o) {
  const double b = static_cast<double>(user_cap(o));
  return drifted(was.intercept_us + was.per_item_us, now.intercept_us + now.per_item_us) ||
         drifted(was.intercept_us + was.per_item_us * b, now.intercept_us + now.per_item_us * b);
}

// Step 2: drops plans the fit or the options have outgrown, then plans the
// first of the rate's bucket and its neighbours that has none.
void update_plans(AdaptiveState& s, const Options& o) {
  const auto m = adaptive_cost_model(s);
  if (!m || m->proportional || !(s.arrival_rate_per_s > 0)) return;
  const AdaptivePlanKey now = key_of(*m, o);
  if (s.plans_made > 0 && (!same_options(now, s.plan_key) || fit_drifted(s.plan_key, now, o))) {
    s.plans.fill(AdaptivePlan{});
    s.plans_made = 0;
  }
  if (s.plans_made == 0) s.plan_key = now;
  const size_t bucket = adaptive_rate_bucket(s.arrival_rate_per_s);
  int made = 0;
  for (size_t b : {bucket, bucket + 1, bucket - 1}) {
    if (b >= kAdaptiveRateBuckets || s.plans[b].valid) continue;
    if (made++ >= kAdaptivePlansPerPeriod) break;
    // Planned on the fit the key records, so that every plan agrees with it.
    AdaptiveCostModel planned;
    planned.intercept_us = s.plan_key.intercept_us;
    planned.per_item_us = s.plan_key.per_item_us;
    s.plans[b] = make_adaptive_plan(adaptive_bucket_rate(b), planned, o);
    ++s.plans_made;
  }
}

void evaluate(AdaptiveState& s, const Options& o) {
  ++s.evaluations;
  s.batches_since_eval = 0;
  s.requests_since_eval = 0;
  if (auto rate = take_period_rate(s)) s.arrival_rate_per_s = *rate;
  update_guard(s, o);
  update_plans(s, o);
}

}  // namespace

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

double adaptive_rate(const AdaptiveState& s, const QueueView& q) {
  const double live = q.arrival_rate_per_s;
  const double rate = live > 0 && std::isfinite(live) ? live : s.arrival_rate_per_s;
  const double fast = q.fast_rate_per_s;
  return std::isfinite(fast) && fast > kAdaptiveBurstRatio * rate ? fast : rate;
}

size_t adaptive_saturation_size(const AdaptiveState& s, const Options& o) {
  const auto m = adaptive_cost_model(s);
  const double user = static_cast<double>(user_cap(o));
  if (!m || !(m->per_item_us > 0)) return user_cap(o);
  const double f = kAdaptiveSaturation;
  // Less a hair, so that an exact whole number is not pushed past by rounding.
  const double b = std::ceil(f / (1.0 - f) * m->intercept_us / m->per_item_us - 1e-9);
  return static_cast<size_t>(std::clamp(b, 1.0, user));
}

size_t adaptive_keep_up_size(const AdaptiveState& s, double rate_per_s, const Options& o) {
  const size_t user = user_cap(o);
  if (!(rate_per_s > 0) || !std::isfinite(rate_per_s)) return 1;
  const auto m = adaptive_cost_model(s);
  if (!m) return 1;
  const double lanes = std::max<uint32_t>(o.num_lanes, 1);
  // Requests per microsecond each lane must serve.
  const double need = rate_per_s * kAdaptiveHeadroom / lanes * 1e-6;
  // b / (a + c b) >= need  <=>  b (1 - need c) >= need a.
  const double slack = 1.0 - need * m->per_item_us;
  if (!(slack > 0)) return user;  // no size keeps up: the largest serves most
  const double b = need * m->intercept_us / slack;
  if (!(b < static_cast<double>(user))) return user;
  return std::clamp<size_t>(static_cast<size_t>(std::ceil(b)), 1, user);
}

void adaptive_observe(AdaptiveState& s, const BatchRecord& batch,
                      std::span<const RequestRecord> requests, const Options& o) {
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
  s.requests_since_eval += static_cast<uint32_t>(requests.size());
  if (s.batches_since_eval >= kAdaptiveEvalBatches ||
      s.requests_since_eval >= kAdaptiveEvalRequests) {
    evaluate(s, o);
  }
}

const AdaptivePlan* adaptive_plan_for(const AdaptiveState& s, double rate_per_s, const Options& o) {
  if (s.plans_made == 0 || !(rate_per_s > 0)) return nullptr;
  AdaptivePlanKey k = s.plan_key;
  k.max_batch_size = o.max_batch_size;
  k.max_wait_us = o.max_wait_us;
  k.num_lanes = o.num_lanes;
  k.queue_capacity = o.queue_capacity;
  k.request_timeout_ms = o.request_timeout_ms;
  k.target_p99_ms = o.target_p99_ms;
  if (!same_options(k, s.plan_key)) return nullptr;
  const size_t bucket = adaptive_rate_bucket(rate_per_s);
  for (size_t d = 0; d <= kAdaptivePlanReach; ++d) {
    if (bucket + d < kAdaptiveRateBuckets && s.plans[bucket + d].valid) return &s.plans[bucket + d];
    if (d <= bucket && s.plans[bucket - d].valid) return &s.plans[bucket - d];
  }
  return nullptr;
}

Limits adaptive_limits(const AdaptiveState& s, const QueueView& q, const Options& o) {
  const size_t user = user_cap(o);
  const double rate = adaptive_rate(s, q);
  size_t cap = 1;
  int64_t wait_ns = 0;
  // A backlog goes at once, shared over the free lanes...
  const size_t idle = std::max<uint32_t>(q.idle_lanes, 1);
  size_t share = (q.size + idle - 1) / idle;
  if (const AdaptivePlan* p = adaptive_plan_for(s, rate, o)) {
    const AdaptiveLimits& chosen = s.efficient ? p->efficient : p->fast;
    cap = chosen.cap;
    wait_ns = chosen.wait_ns;
    // ...in batches no larger than buys throughput, once a plan knows the rate.
    share = std::min(share, std::max(cap, adaptive_saturation_size(s, o)));
  } else {
    cap = adaptive_keep_up_size(s, rate, o);
  }
  Limits l;
  l.max_batch = std::clamp<size_t>(std::max(cap, share), 1, user);
  const int64_t max_wait_ns = std::max<int64_t>(o.max_wait_us, 0) * 1000;
  l.max_wait = Duration(std::clamp<int64_t>(wait_ns, 0, max_wait_ns));
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
  adaptive_observe(state_, batch, requests, o);
}

}  // namespace batchscope

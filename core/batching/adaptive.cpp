// SPDX-License-Identifier: GPL-3.0-or-later
#include "batching/adaptive.h"

#include <algorithm>
#include <cmath>

namespace batchscope {

namespace {

// The least-squares slope needs sizes that differ: with the weighted variance
// of the sizes below this fraction of their mean square (sizes within roughly
// 10% of each other), timing noise would dominate the fitted intercept.
constexpr double kMinRelativeSizeVariance = 0.01;

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

size_t user_cap(const Options& o) { return std::max<size_t>(o.max_batch_size, 1); }

// `padded`: the length the batch was padded to (1 where lengths do not vary).
void add_cost_sample(AdaptiveCostSums& c, double size, double padded, double run_us) {
  const double l = kAdaptiveForgetting;
  const double x = size * padded;
  c.w = l * c.w + 1;
  c.b = l * c.b + x;
  c.bb = l * c.bb + x * x;
  c.t = l * c.t + run_us;
  c.bt = l * c.bt + x * run_us;
  c.l = l * c.l + padded;
}

void push_length(AdaptiveState& s, uint32_t length) {
  s.lengths[s.length_next] = length;
  s.length_next = static_cast<uint32_t>((s.length_next + 1) % kAdaptiveLengthWindow);
  if (s.length_count < kAdaptiveLengthWindow) ++s.length_count;
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

double window_p99_us(const AdaptiveState& s) {
  std::array<double, kAdaptiveLatencyWindow> v;
  const size_t n = s.latency_count;
  std::copy_n(s.latencies_us.begin(), n, v.begin());
  return nearest_rank_p99(std::span<double>(v.data(), n));
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
  k.padded_length = m.padded_length;
  k.padding = o.padding;
  k.length_buckets = o.length_buckets;
  return k;
}

bool same_options(const AdaptivePlanKey& a, const AdaptivePlanKey& b) {
  return a.max_batch_size == b.max_batch_size && a.max_wait_us == b.max_wait_us &&
         a.num_lanes == b.num_lanes && a.queue_capacity == b.queue_capacity &&
         a.request_timeout_ms == b.request_timeout_ms && a.target_p99_ms == b.target_p99_ms &&
         a.padding == b.padding && a.length_buckets == b.length_buckets;
}

bool same_key(const AdaptivePlanKey& a, const AdaptivePlanKey& b) {
  return same_options(a, b) && a.intercept_us == b.intercept_us && a.per_item_us == b.per_item_us &&
         a.padded_length == b.padded_length;
}

bool drifted(double was, double now) {
  return !(std::abs(now - was) <= kAdaptiveReplanDrift * std::max(was, 1e-3));
}

// t(b) at the mean batch size the fit rests on moved by more than
// kAdaptiveReplanDrift. Only there: a fit over sizes that hardly vary (steady
// load, or batches all cut full) says little about t(1) or a large b, and
// turns proportional and back as they vary, yet it is exact where it was fed.
// Where lengths vary, at the mean padded elements: t = a + (per_item_us /
// padded_length) * x for each key.
bool fit_drifted(const AdaptiveState& s, const AdaptivePlanKey& now) {
  const AdaptivePlanKey& was = s.plan_key;
  const double x = s.cost.w > 0 ? s.cost.b / s.cost.w : 1.0;
  const auto at = [x](const AdaptivePlanKey& k) {
    return k.intercept_us + k.per_item_us * x / std::max(k.padded_length, 1.0);
  };
  return drifted(at(was), at(now));
}

void drop_plans(AdaptiveState& s) {
  s.plans.fill(AdaptivePlan{});
  s.answered.fill(false);
  s.plans_made = 0;
  s.plan_wanted = false;
}

// Step 2: drops plans the fit or the options have outgrown, then asks for a
// plan for the first of the rate's bucket and its neighbours that has none.
void update_plans(AdaptiveState& s, const Options& o) {
  const auto m = adaptive_cost_model(s);
  if (!m) return;
  const AdaptivePlanKey now = key_of(*m, o);
  if (s.plans_made > 0 && (!same_options(now, s.plan_key) || fit_drifted(s, now))) {
    drop_plans(s);
  }
  // A proportional fit cannot say what batching buys: plans wait for an
  // intercept (but the ones made stand until the fit moves away from them).
  if (m->proportional || !(s.arrival_rate_per_s > 0) || s.plan_wanted) return;
  if (s.plans_made == 0) s.plan_key = now;
  const size_t bucket = adaptive_rate_bucket(s.arrival_rate_per_s);
  for (const size_t b : {bucket, bucket + 1, bucket > 0 ? bucket - 1 : bucket}) {
    if (b < kAdaptiveRateBuckets && !s.answered[b]) {
      s.plan_wanted = true;
      s.wanted_bucket = static_cast<uint32_t>(b);
      return;
    }
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
  const double padded = c.l / c.w;  // 1 where lengths do not vary
  if (padded > 1.0) m.padded_length = padded;
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
  // Per padded element to per request at the mean padded length.
  m.per_item_us *= std::max(padded, 1.0);
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
                      std::span<const RequestRecord> requests, const Options& o,
                      std::span<const uint32_t> lengths) {
  const bool vary = batch.longest > 0;
  // A batch that failed, or whose every request failed (a lane preparing
  // them found no length), says nothing of the lengths.
  const bool answered = std::any_of(requests.begin(), requests.end(), [](const RequestRecord& r) {
    return r.outcome == Outcome::kOk;
  });
  if (!batch.failed && answered && vary != s.lengths_vary) {
    // Requests of another kind: what was learned of the old ones says
    // nothing of these, and a plan in flight for them is dropped on arrival.
    s.cost = AdaptiveCostSums{};
    s.length_count = 0;
    s.length_next = 0;
    drop_plans(s);
    s.plan_key = AdaptivePlanKey{};
    s.lengths_vary = vary;
  }
  if (!batch.failed && batch.size > 0 && batch.run_end > batch.run_start) {
    add_cost_sample(s.cost, batch.size, std::max<uint32_t>(batch.longest, 1),
                    to_us(batch.run_end - batch.run_start));
  }
  for (uint32_t length : lengths) {
    if (length > 0) push_length(s, length);
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

std::optional<AdaptivePlanRequest> adaptive_take_plan_request(AdaptiveState& s) {
  if (!s.plan_wanted || s.plan_in_flight) return std::nullopt;
  s.plan_in_flight = true;
  AdaptivePlanRequest r;
  r.key = s.plan_key;
  r.bucket = s.wanted_bucket;
  if (s.plan_key.padded_length > 0) {
    // Oldest first, as they were served.
    const size_t n = s.length_count;
    const size_t first = n < kAdaptiveLengthWindow ? 0 : s.length_next;
    r.lengths.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      r.lengths.push_back(s.lengths[(first + i) % kAdaptiveLengthWindow]);
    }
  }
  return r;
}

AdaptivePlan adaptive_run_plan_request(const AdaptivePlanRequest& r,
                                       const AdaptivePlanner& planner) {
  AdaptiveCostModel m;
  m.intercept_us = r.key.intercept_us;
  m.per_item_us = r.key.per_item_us;
  m.padded_length = r.key.padded_length;
  m.lengths = r.lengths;
  Options o;
  o.strategy = StrategyKind::kFifo;
  o.max_batch_size = r.key.max_batch_size;
  o.max_wait_us = r.key.max_wait_us;
  o.num_lanes = r.key.num_lanes;
  o.queue_capacity = r.key.queue_capacity;
  o.request_timeout_ms = r.key.request_timeout_ms;
  o.target_p99_ms = r.key.target_p99_ms;
  o.padding = r.key.padding;
  o.length_buckets = r.key.length_buckets;
  return planner ? planner(adaptive_bucket_rate(r.bucket), m, o) : AdaptivePlan{};
}

void adaptive_install_plan(AdaptiveState& s, const AdaptivePlanRequest& r, const AdaptivePlan& p) {
  s.plan_in_flight = false;
  s.plan_wanted = false;
  // Plans dropped or re-keyed meanwhile: this one answers a question no
  // longer asked.
  if (!same_key(r.key, s.plan_key) || r.bucket >= kAdaptiveRateBuckets) return;
  s.plans[r.bucket] = p;
  s.answered[r.bucket] = true;  // an empty plan is not asked for again
  ++s.plans_made;
}

const AdaptivePlan* adaptive_plan_for(const AdaptiveState& s, double rate_per_s, const Options& o) {
  if (s.plans_made == 0 || !(rate_per_s > 0)) return nullptr;
  if (!same_options(key_of(AdaptiveCostModel{}, o), s.plan_key)) return nullptr;
  const size_t bucket = adaptive_rate_bucket(rate_per_s);
  for (size_t d = 0; d <= kAdaptivePlanReach; ++d) {
    const size_t up = bucket + d;
    if (up < kAdaptiveRateBuckets && s.plans[up].valid) return &s.plans[up];
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

void AdaptiveStrategy::install(const AdaptivePlanRequest& r, const AdaptivePlan& p) {
  adaptive_install_plan(state_, r, p);
}

void AdaptiveStrategy::observe(const BatchRecord& batch, std::span<const RequestRecord> requests,
                               std::span<const uint32_t> lengths, const Options& o) {
  adaptive_observe(state_, batch, requests, o, lengths);
}

StrategyTask AdaptiveStrategy::take_task() {
  if (!planner_) return {};
  auto request = adaptive_take_plan_request(state_);
  if (!request) return {};
  return [r = *request, planner = planner_]() -> StrategyApply {
    AdaptivePlan plan = adaptive_run_plan_request(r, planner);
    return [r, plan](Strategy& self) {
      if (auto* a = dynamic_cast<AdaptiveStrategy*>(&self)) a->install(r, plan);
    };
  };
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/adaptive_planner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <compare>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "common/mutex.h"
#include "tuning/cost_model.h"
#include "tuning/predictor.h"
#include "tuning/tuner.h"

namespace batchscope {

namespace {

struct Outcome3 {
  AdaptiveLimits limits;
  double p99_ms = 0;
  double loss = 0;       // share of the requests not answered ok
  double batches = 0;    // batches run per request answered
  double busy_us = 0;    // model time per request answered
  uint32_t largest = 0;  // the largest batch cut
  bool answered = false;
};

Outcome3 replay(PredictSpec& spec, AdaptiveLimits l, std::vector<double>& scratch) {
  spec.options.max_batch_size = l.cap;
  spec.options.max_wait_us = (l.wait_ns + 999) / 1000;
  const RunData run = predict_run(spec);
  Outcome3 out;
  out.limits = {l.cap, spec.options.max_wait_us * 1000};
  scratch.clear();
  for (const RunRequest& r : run.requests) {
    if (r.outcome == Outcome::kOk) scratch.push_back(to_us(r.done - r.intended) / 1000.0);
  }
  double busy_us = 0;
  for (const BatchRecord& b : run.batches) {
    out.largest = std::max(out.largest, b.size);
    busy_us += to_us(b.run_end - b.run_start);
  }
  const double sent = static_cast<double>(std::max<size_t>(run.requests.size(), 1));
  const double ok = static_cast<double>(scratch.size());
  out.answered = !scratch.empty();
  out.loss = 1.0 - ok / sent;
  out.batches = ok > 0 ? static_cast<double>(run.batches.size()) / ok : 1e9;
  out.busy_us = ok > 0 ? busy_us / ok : 1e18;
  out.p99_ms = nearest_rank_p99(scratch);
  return out;
}

bool faster(const Outcome3& a, const Outcome3& b) {
  const bool a_ok = a.loss <= kLossTolerance, b_ok = b.loss <= kLossTolerance;
  if (a_ok != b_ok) return a_ok;
  if (!a_ok && a.loss != b.loss) return a.loss < b.loss;
  if (a.p99_ms != b.p99_ms) return a.p99_ms < b.p99_ms;
  return a.batches < b.batches;
}

// Fewer batches is less work where every batch costs a + c * b; where
// lengths vary a larger batch also pads more, so the work itself (model time
// per request) is compared.
bool more_efficient(const Outcome3& a, const Outcome3& b, bool padded) {
  if (padded && a.busy_us != b.busy_us) return a.busy_us < b.busy_us;
  if (a.batches != b.batches) return a.batches < b.batches;
  return a.p99_ms < b.p99_ms;
}

// The plan for Poisson arrivals at `rate_per_s` on `cost`, request i of the
// replay getting lengths[i % n] where lengths vary (priced by the cost's
// length grid).
AdaptivePlan plan_on(double rate_per_s, const CostModel& cost, const Options& o,
                     const std::vector<uint32_t>& lengths) {
  AdaptivePlan plan;
  if (!(rate_per_s > 0) || !std::isfinite(rate_per_s)) return plan;

  PredictSpec spec;
  spec.cost = cost;
  spec.options = o;
  spec.options.strategy = StrategyKind::kFifo;
  spec.arrivals.pattern = Pattern::kPoisson;
  spec.arrivals.rate = std::min(rate_per_s, 1e9);
  spec.arrivals.max_requests = kAdaptivePlanRequests;
  spec.arrivals.duration_s =
      std::clamp(2.0 * kAdaptivePlanRequests / spec.arrivals.rate, 1e-3, 1e7);
  spec.arrivals.seed = 1;
  const bool padded = !lengths.empty() && !cost.length_grid().empty();
  if (padded) spec.lengths = lengths;

  const uint32_t user = std::max<uint32_t>(o.max_batch_size, 1);
  const size_t lanes = std::max<uint32_t>(o.num_lanes, 1);
  const double t1_ns = cost.cost_us(1) * 1000.0;
  const double max_wait_ns = static_cast<double>(std::max<int64_t>(o.max_wait_us, 0)) * 1000.0;
  std::vector<int64_t> waits = {0};
  for (double w : {t1_ns / 4, t1_ns / 2, t1_ns, 2 * t1_ns, o.target_p99_ms * 1e6 / 4}) {
    const int64_t ns = std::llround(std::min(w, max_wait_ns));
    if (ns > 0 && std::find(waits.begin(), waits.end(), ns) == waits.end()) waits.push_back(ns);
  }

  std::vector<double> scratch;
  scratch.reserve(kAdaptivePlanRequests);
  std::vector<Outcome3> outcomes;
  for (int64_t w : waits) {
    // The largest cap first: a smaller cap than any batch it cut changes
    // nothing, so only caps below its largest batch are tried.
    const Outcome3 widest = replay(spec, {user, w}, scratch);
    outcomes.push_back(widest);
    for (uint32_t cap = w > 0 ? 2 : 1; cap < std::min(user, widest.largest); cap *= 2) {
      // A cap whose lanes cannot serve the rate only lets the queue grow.
      const double t_us = std::max(cost.cost_us(cap, lanes), 1e-3);
      if (static_cast<double>(lanes) * cap / t_us * 1e6 < rate_per_s) continue;
      outcomes.push_back(replay(spec, {cap, w}, scratch));
    }
  }
  const bool any =
      std::any_of(outcomes.begin(), outcomes.end(), [](const Outcome3& x) { return x.answered; });
  if (!any) return plan;  // nothing ran: no evidence to plan on
  const Outcome3* fast = &outcomes.front();
  const Outcome3* efficient = nullptr;
  const double budget_ms = kAdaptiveBudgetShare * o.target_p99_ms;
  for (const Outcome3& x : outcomes) {
    if (faster(x, *fast)) fast = &x;
    if (x.loss <= kLossTolerance && x.p99_ms <= budget_ms &&
        (!efficient || more_efficient(x, *efficient, padded))) {
      efficient = &x;
    }
  }
  if (!efficient) efficient = fast;
  plan.valid = true;
  plan.fast = fast->limits;
  plan.fast_p99_ms = fast->p99_ms;
  plan.efficient = efficient->limits;
  plan.efficient_p99_ms = efficient->p99_ms;
  return plan;
}

}  // namespace

namespace {

// The fit's t = a + k * b * L as a length grid about the reference length
// `reference` (the fit's mean padded length): rows at the sizes 1..32 and the
// powers of two up to `largest`, columns at the shortest and longest of
// `lengths` and the reference, so that reading it between its points (in
// log2(b) and L) stays near the line.
LengthGrid linear_grid(double a, double k, uint32_t reference, const std::vector<uint32_t>& lengths,
                       uint32_t largest) {
  LengthGrid g;
  g.reference = reference;
  const auto [lo, hi] = std::minmax_element(lengths.begin(), lengths.end());
  g.lengths = {std::min(*lo, reference), reference, std::max(*hi, reference)};
  g.lengths.erase(std::unique(g.lengths.begin(), g.lengths.end()), g.lengths.end());
  for (uint32_t b = 1; b <= std::min<uint32_t>(largest, 32); ++b) g.batches.push_back(b);
  for (uint64_t b = 64; b <= largest && g.batches.size() < kMaxGridAxis; b *= 2) {
    g.batches.push_back(static_cast<uint32_t>(b));
  }
  if (g.batches.back() < largest && g.batches.size() < kMaxGridAxis) g.batches.push_back(largest);
  for (uint32_t b : g.batches) {
    for (uint32_t l : g.lengths) g.median_us.push_back(std::min(a + k * b * l, kMaxCostUs));
  }
  return g;
}

}  // namespace

AdaptivePlan make_adaptive_plan(double rate_per_s, const AdaptiveCostModel& model,
                                const Options& o) {
  const double a = std::clamp(model.intercept_us, 0.0, kMaxCostUs);
  const double c = std::clamp(model.per_item_us, 0.0, kMaxCostUs);
  if (model.lengths.empty() || !(model.padded_length >= 1)) {
    auto cost = CostModel::from_points(
        {{1, std::min(a + c, kMaxCostUs), 0}, {2, std::min(a + 2 * c, kMaxCostUs), 0}});
    if (!cost) return {};
    return plan_on(rate_per_s, *cost, o, {});
  }
  // Where lengths vary: the fit per padded element, t(b) at the reference
  // length and the rest of each replayed batch's padded length from the grid.
  const uint32_t ref = static_cast<uint32_t>(std::clamp(std::round(model.padded_length), 1.0, 1e9));
  const double k = c / model.padded_length;
  auto at_ref = CostModel::from_points(
      {{1, std::min(a + k * ref, kMaxCostUs), 0}, {2, std::min(a + 2 * k * ref, kMaxCostUs), 0}});
  if (!at_ref) return {};
  auto priced = at_ref->with_length_grid(
      linear_grid(a, k, ref, model.lengths, std::max<uint32_t>(o.max_batch_size, 1)));
  if (!priced) return {};
  return plan_on(rate_per_s, *priced, o, model.lengths);
}

namespace {

// plan_on() is a pure function of the rate, the cost and the options it
// reads, and the strategy asks again and again for the same few rate
// buckets (each time its fit drifts): each answer is kept, so a prediction
// of an adaptive configuration replays each bucket's grid once (where
// lengths vary, once per mix of lengths).
// Where lengths vary, what a plan depends on beyond the options: the
// padding policy and buckets, and the lengths' mean and p90 on a scale of
// quarter octaves (samples of one mix of lengths agree there; a mix that
// moves by a fifth or more gets plans of its own).
struct LengthsKey {
  Padding padding = Padding::kLongest;
  std::array<uint32_t, kMaxLengthBuckets> buckets{};
  long mean_q = 0, p90_q = 0;
  auto operator<=>(const LengthsKey&) const = default;
};

LengthsKey lengths_key(const Options& o, const std::vector<uint32_t>& lengths) {
  LengthsKey k;
  if (lengths.empty()) return k;
  k.padding = o.padding;
  k.buckets = o.length_buckets;
  double sum = 0;
  for (uint32_t l : lengths) sum += l;
  std::vector<uint32_t> sorted = lengths;
  const size_t at = sorted.size() * 9 / 10;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(at), sorted.end());
  const auto quarter_octaves = [](double x) {
    return std::lround(4 * std::log2(std::max(x, 1.0)));
  };
  k.mean_q = quarter_octaves(sum / static_cast<double>(lengths.size()));
  k.p90_q = quarter_octaves(sorted[at]);
  return k;
}

struct PlansOnCost {
  explicit PlansOnCost(CostModel c) : cost(std::move(c)) {}
  const CostModel cost;
  Mutex mu;
  std::map<std::tuple<double, uint32_t, int64_t, uint32_t, uint32_t, int64_t, double, LengthsKey>,
           AdaptivePlan>
      kept GUARDED_BY(mu);  // at most kKeptPlans
};
constexpr size_t kKeptPlans = 512;

}  // namespace

AdaptivePlanner plan_on_cost(CostModel cost) {
  auto shared = std::make_shared<PlansOnCost>(std::move(cost));
  // The fit is not read: the cost holds more than a line through it.
  return [shared](double rate_per_s, const AdaptiveCostModel& model, const Options& o) {
    // Lengths are replayed only where the cost prices them.
    const bool padded = !model.lengths.empty() && !shared->cost.length_grid().empty();
    const std::vector<uint32_t> none;
    const std::vector<uint32_t>& lengths = padded ? model.lengths : none;
    const auto key =
        std::make_tuple(rate_per_s, o.max_batch_size, o.max_wait_us, o.num_lanes, o.queue_capacity,
                        o.request_timeout_ms, o.target_p99_ms, lengths_key(o, lengths));
    {
      MutexLock g(shared->mu);
      if (auto it = shared->kept.find(key); it != shared->kept.end()) return it->second;
    }
    const AdaptivePlan plan = plan_on(rate_per_s, shared->cost, o, lengths);
    MutexLock g(shared->mu);
    if (shared->kept.size() >= kKeptPlans) shared->kept.clear();
    shared->kept.emplace(key, plan);
    return plan;
  };
}

}  // namespace batchscope

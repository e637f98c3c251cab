// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The adaptive batching strategy: fifo batch formation whose batch cap and
// wait follow the traffic and the model, so that the end-to-end p99 latency
// stays under Options::target_p99_ms at whatever rate arrives, without ever
// going past the user's max_batch_size and max_wait_us.
//
// Shape. What the strategy has learned (AdaptiveState, a plain value) is kept
// apart from two pure functions: adaptive_observe() folds one completed batch
// into a new state, adaptive_limits() derives the limits for a queue from a
// state. The decision itself is decide_fifo() with those limits, so every fifo
// boundary rule holds unchanged: a batch of `cap` dispatches at once, the
// head's deadline is `oldest_arrival + wait`, and `now == deadline`
// dispatches. AdaptiveStrategy only holds a state and calls the two
// functions, which keeps everything table-testable with explicit timestamps.
//
// Why this shape. Under open-loop traffic every configuration that keeps up
// serves the offered rate, so what separates them is latency and how many
// batches they run. A static configuration is tuned for one rate; a plan is
// the tuner's answer for the rate now, so the strategy follows step, burst
// and daily patterns, and a backlog is shared out over the lanes at once.
//
// Algorithm (λ the arrival rate, L the lanes, q the queued requests).
//  1. Cost model: t(b) = a + c * b, fitted to (size, run_end - run_start) of
//     every batch that did not fail by exponentially weighted least squares
//     (forgetting factor kAdaptiveForgetting per batch, so it follows a model
//     that warms up or a machine that slows down). Until the sizes seen vary
//     enough to separate a from c it is proportional, t(b) = c * b. Where
//     requests vary in length, the fit is per padded element instead, t =
//     a + k * b * L for a batch of b padded to L, read out at the mean padded
//     length (c = k * that length), so single requests of different lengths
//     separate a from k, and the latest kAdaptiveLengthWindow lengths are
//     kept for the plans.
//  2. Plans (adaptive_plan.h, made by the planner the strategy was given:
//     core/tuning's make_adaptive_plan): for the rate bucket λ falls in, the
//     fifo cap and wait that the predictor finds best for Poisson arrivals at that
//     rate on the fitted t(b): the efficient choice (the fewest batches with
//     a predicted p99 within half the target) and the fast one (the lowest
//     p99). Where lengths vary, the replay sends the latest lengths under the
//     padding policy in force, each batch priced at its padded length, and
//     the efficient choice is the least model time per request (a larger
//     batch pads more, so fewer batches is no longer less work); a change of
//     padding policy or buckets drops the plans, as other options do. Once per evaluation period
//     the state asks for a plan for the bucket of its own rate estimate or a neighbour that has
//     none (once the fit has an intercept); take_task() hands the request to the engine, which
//     makes the plan without its lock on a planner thread of its own (no lane waits for it), and
//     installs it. Plans are dropped when t(b) at the mean batch size of the fit moves by more than
//     kAdaptiveReplanDrift from the fit they were made on, or when the
//     options they were made for change.
//  3. Limits: the plan of the bucket the rate falls in (or the nearest
//     planned bucket within kAdaptivePlanReach), its efficient choice or,
//     while the guard says so, its fast one. The rate is the engine's smooth
//     estimate, or its fast one while that is above kAdaptiveBurstRatio times
//     it, so the plan for a burst's rate is in force within a few of its
//     arrivals. Without a plan: the keep-up size (the smallest b with
//     L * b / t(b) >= kAdaptiveHeadroom * λ; 1 without a rate or a model,
//     max_batch_size when none keeps up) and no wait, which at light load is
//     fifo with no wait. In both cases the cap is raised to ceil(q / idle
//     lanes) when more is queued, so a backlog goes at once, shared over the
//     lanes that are free; with a plan, no higher than the saturation size
//     (the smallest b whose b / t(b) reaches kAdaptiveSaturation of 1 / c),
//     since a larger batch runs longer for almost no more throughput.
//  4. Guard on the evidence: p99 (nearest rank) over the latest
//     kAdaptiveLatencyWindow end-to-end latencies of ok requests, judged once
//     per evaluation period (kAdaptiveEvalBatches batches or
//     kAdaptiveEvalRequests requests, whichever comes first). A p99 above
//     kAdaptiveStopAbove * target switches to the fast choice at once; the
//     efficient one comes back after kAdaptiveResumeAfter consecutive periods
//     with p99 below kAdaptiveResumeBelow * target. Each switch clears the
//     window, so the next one rests only on evidence gathered since. This is
//     what catches a machine slower than its fit, or traffic burstier than
//     Poisson.
//
// Where the rate comes from: the engine's live estimate
// (QueueView::arrival_rate_per_s); when it has none, the state's own, taken
// per period from the arrival timestamps of the requests observed (the count
// over the time the latest observed arrival moved on).
//
// Prior art, by name: DBIE's adaptive scheduler moves the batch size against
// an exponential moving average of queue depth and inter-arrival time with
// N-signal hysteresis; Clipper steers the batch size by additive increase and
// multiplicative decrease on a latency objective. Both move the size a step
// at a time after the fact; here both knobs come from a replay of the rate
// now against the cost curve, and feedback only chooses between two plans.
//
// Under load. observe() is O(batch size) plus, once per period, an
// O(kAdaptiveLatencyWindow) selection for the p99; limits() and decide() are
// O(1) and allocate nothing. A plan costs a few milliseconds of CPU at most
// (bench_engine's BM_AdaptivePlan), spent outside the engine's lock, once
// per rate bucket the traffic visits (a steady rate needs three) and again
// when the model drifts. A state is a fixed-size value of a few kilobytes.
//
// Start and option changes. A fresh state has no rate, no cost model and no
// plan: it cuts a batch as soon as a lane is free, like fifo with no wait.
// Options are read at every call; plans made for other options are not used.
//
// Thread-safety: AdaptiveState and the free functions are plain values and
// pure functions. AdaptiveStrategy is called by the engine under its lock like
// every Strategy; state() returns a reference into the strategy, to be read
// (or copied for a snapshot) under that same lock.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "batching/adaptive_plan.h"
#include "batching/strategy.h"
#include "common/clock.h"
#include "common/options.h"
#include "runs/records.h"

namespace batchscope {

// Tuning constants of the algorithm above; tests compute their expectations
// from these.
inline constexpr uint32_t kAdaptiveEvalBatches = 8;
inline constexpr uint32_t kAdaptiveEvalRequests = 64;
inline constexpr size_t kAdaptiveLatencyWindow = 256;
inline constexpr double kAdaptiveHeadroom = 1.25;     // keep-up throughput over the rate
inline constexpr double kAdaptiveStopAbove = 0.8;     // p99 over this fraction: the fast plan
inline constexpr double kAdaptiveResumeBelow = 0.5;   // p99 under it resumes the efficient one...
inline constexpr int kAdaptiveResumeAfter = 3;        // ...after this many periods in a row
inline constexpr double kAdaptiveForgetting = 0.95;   // per batch
inline constexpr double kAdaptiveReplanDrift = 0.2;   // relative move of the fit that drops plans
inline constexpr size_t kAdaptivePlanReach = 2;       // buckets a plan may stand in for
inline constexpr double kAdaptiveBurstRatio = 2.0;    // fast rate over smooth: a burst began
inline constexpr double kAdaptiveSaturation = 0.95;   // of 1/c: the largest batch a backlog gets
inline constexpr size_t kAdaptiveLengthWindow = 256;  // request lengths kept for the planner

// Exponentially weighted sums for the least-squares fit of t = a + k * x,
// x a batch's padded elements: its size times the length it was padded to
// (times 1 where lengths do not vary, so x is the size). Times are in
// microseconds.
struct AdaptiveCostSums {
  double w = 0;   // sum of weights
  double b = 0;   // sum of w * x
  double bb = 0;  // sum of w * x^2
  double t = 0;   // sum of w * run time
  double bt = 0;  // sum of w * x * run time
  double l = 0;   // sum of w * padded length (1 where lengths do not vary)
};

// A fitted run-time model, t(b) = intercept_us + per_item_us * b, for
// batches padded to `padded_length`. Where lengths vary, the fit is per
// padded element (t = a + k * b * L, so the sizes need not vary for it to
// separate a from k) and read at the mean padded length of the batches it
// rests on: per_item_us = k * padded_length, and a batch of b padded to L
// takes intercept_us + per_item_us * b * L / padded_length.
struct AdaptiveCostModel {
  double intercept_us = 0;
  double per_item_us = 0;
  bool proportional = false;  // sizes did not vary enough to fit an intercept
  double padded_length = 0;   // 0 where lengths do not vary
  // The lengths of the latest requests served (at most
  // kAdaptiveLengthWindow), handed to a planner so that it replays them
  // under the padding policy in force; empty where lengths do not vary and
  // in the fits limits() reads.
  std::vector<uint32_t> lengths;
};

// What plans were made for: the fit and the options they depend on.
struct AdaptivePlanKey {
  double intercept_us = 0;  // the fit, t(b) = intercept_us + per_item_us * b
  double per_item_us = 0;
  uint32_t max_batch_size = 0;
  int64_t max_wait_us = 0;
  uint32_t num_lanes = 0;
  uint32_t queue_capacity = 0;
  int64_t request_timeout_ms = 0;
  double target_p99_ms = 0;
  double padded_length = 0;  // of the fit; 0 where lengths do not vary
  Padding padding = Padding::kLongest;
  std::array<uint32_t, kMaxLengthBuckets> length_buckets{};
};

// Everything the strategy has learned. A plain value: copy it freely.
struct AdaptiveState {
  // The efficient choice of each plan is in force; the guard (step 4) turns
  // it off (the fast choice) and on.
  bool efficient = true;

  // Evaluation bookkeeping.
  uint32_t batches_since_eval = 0;
  uint32_t requests_since_eval = 0;
  uint64_t evaluations = 0;
  uint64_t guard_switches = 0;  // times the guard changed the choice
  int calm_streak = 0;          // consecutive periods with p99 under the resume threshold

  // Arrival rate, estimated from observed arrival timestamps.
  double arrival_rate_per_s = 0;  // latest period's estimate; 0 before the first
  bool rate_anchored = false;     // rate_anchor is valid
  TimePoint rate_anchor{};        // latest arrival observed before this period
  TimePoint period_first_arrival{};
  TimePoint period_last_arrival{};
  uint32_t period_arrivals = 0;

  AdaptiveCostSums cost;

  // Plans by rate bucket, valid for plan_key.
  std::array<AdaptivePlan, kAdaptiveRateBuckets> plans{};
  std::array<bool, kAdaptiveRateBuckets> answered{};  // planned, even if nothing came of it
  AdaptivePlanKey plan_key;
  uint64_t plans_made = 0;
  bool plan_wanted = false;     // wanted_bucket needs a plan
  bool plan_in_flight = false;  // a request was taken and is not installed yet
  uint32_t wanted_bucket = 0;

  // Ring of recent end-to-end latencies of ok requests, in microseconds.
  std::array<double, kAdaptiveLatencyWindow> latencies_us{};
  uint32_t latency_count = 0;  // valid entries
  uint32_t latency_next = 0;   // next slot to write
  // Ring of the latest requests' lengths, where they vary.
  std::array<uint32_t, kAdaptiveLengthWindow> lengths{};
  uint32_t length_count = 0;
  uint32_t length_next = 0;
  // The latest batch's requests varied in length. When that changes (another
  // model), the fit, the lengths and the plans start again.
  bool lengths_vary = false;
};

// A plan to make: for a bucket, under the fit and options of a key, with
// the lengths of the latest requests (empty where they do not vary).
struct AdaptivePlanRequest {
  AdaptivePlanKey key;
  uint32_t bucket = 0;
  std::vector<uint32_t> lengths;
};

// Folds one completed batch and its request records into the state.
// `lengths`: each request's length, in the order of `requests`, where they
// vary.
void adaptive_observe(AdaptiveState& s, const BatchRecord& batch,
                      std::span<const RequestRecord> requests, const Options& o,
                      std::span<const uint32_t> lengths = {});

// The limits the strategy applies for this queue: cap <= max_batch_size,
// wait <= max_wait_us, always.
Limits adaptive_limits(const AdaptiveState& s, const QueueView& q, const Options& o);

// The rate the strategy reads: the queue's smooth estimate (else the
// state's own), or its fast one while that is above kAdaptiveBurstRatio
// times it.
double adaptive_rate(const AdaptiveState& s, const QueueView& q);

// The smallest batch whose throughput b / t(b) reaches kAdaptiveSaturation of
// the fit's asymptote 1 / c: larger batches run longer for little more
// (max_batch_size without a fit that has a cost per item).
size_t adaptive_saturation_size(const AdaptiveState& s, const Options& o);

// The fitted run-time model; nullopt before any usable batch.
std::optional<AdaptiveCostModel> adaptive_cost_model(const AdaptiveState& s);

// Predicted run time of a batch of `size`, in microseconds; nullopt without a model.
std::optional<double> adaptive_predict_run_us(const AdaptiveState& s, double size);

// Planning, in three steps so that the slow middle one runs without the
// engine's lock: take the wanted request (none while one is in flight), make
// its plan (a pure function, about kAdaptivePlanRequests simulated requests
// per candidate), install it (dropped when the plans were re-keyed meanwhile).
std::optional<AdaptivePlanRequest> adaptive_take_plan_request(AdaptiveState& s);
AdaptivePlan adaptive_run_plan_request(const AdaptivePlanRequest& r,
                                       const AdaptivePlanner& planner);
void adaptive_install_plan(AdaptiveState& s, const AdaptivePlanRequest& r, const AdaptivePlan& p);

// The plan limits() would use at this rate, or null when there is none for
// these options.
const AdaptivePlan* adaptive_plan_for(const AdaptiveState& s, double rate_per_s, const Options& o);

// Step 3's fallback: the smallest batch whose throughput over the lanes covers
// kAdaptiveHeadroom * rate_per_s (max_batch_size when none does; 1 without a
// rate or a model).
size_t adaptive_keep_up_size(const AdaptiveState& s, double rate_per_s, const Options& o);

class AdaptiveStrategy final : public Strategy {
 public:
  // Plans are made by `planner`; without one (null) the strategy never plans
  // and stays on step 3's fallback. Engines refuse that case.
  explicit AdaptiveStrategy(AdaptivePlanner planner) : planner_(std::move(planner)) {}
  StrategyKind kind() const override { return StrategyKind::kAdaptive; }
  Decision decide(const QueueView& q, TimePoint now, const Options& o) const override;
  Limits limits(const QueueView& q, const Options& o) const override;
  void observe(const BatchRecord& batch, std::span<const RequestRecord> requests,
               std::span<const uint32_t> lengths, const Options& o) override;
  // The wanted plan, made by the task and installed by what it returns.
  StrategyTask take_task() override;
  void install(const AdaptivePlanRequest& r, const AdaptivePlan& p);

  // What the strategy has learned, for tests and the GUI (under the engine lock).
  const AdaptiveState& state() const { return state_; }

 private:
  AdaptivePlanner planner_;
  AdaptiveState state_;
};

}  // namespace batchscope

#pragma once
// The adaptive batching strategy: fifo batch formation whose batch cap and
// wait are tuned live so that the end-to-end p99 latency stays near
// Options::target_p99_ms, without ever going past the user's max_batch_size
// and max_wait_us.
//
// Shape. The tuning state (AdaptiveState, a plain value) is kept apart from two
// pure functions: adaptive_observe() folds one completed batch into a new
// state, adaptive_limits() derives the limits for a queue from a state. The
// decision itself is decide_fifo() with those limits, so every fifo boundary
// rule holds unchanged: a batch of `cap` dispatches at once, the head's
// deadline is `oldest_arrival + wait`, and `now == deadline` dispatches.
// AdaptiveStrategy only holds a state and calls the two functions, which keeps
// everything table-testable with explicit timestamps.
//
// Algorithm.
//  1. Evaluation periods. Evidence is judged once per period: every
//     kAdaptiveEvalBatches batches or kAdaptiveEvalRequests requests,
//     whichever comes first. Single batches are too noisy to act on.
//  2. Batch cap: additive increase / multiplicative decrease against the
//     latency objective. p99 (nearest rank) is taken over a window of the
//     latest kAdaptiveLatencyWindow end-to-end latencies (completed - arrival)
//     of ok requests, collected since the cap last changed. p99 > target in
//     kAdaptiveDecreaseAfter consecutive periods halves the cap; p99 < 0.8 *
//     target in kAdaptiveIncreaseAfter consecutive periods adds
//     max(1, max_batch_size / 16); a p99 inside [0.8, 1] * target resets both
//     counts. The two thresholds and the counts are the hysteresis that keeps
//     the cap from oscillating. A change clears the counts and the window, so
//     the next change rests only on evidence gathered under the new cap.
//  3. Throughput floor (beyond plain AIMD). When p99 is high because the
//     queue is growing, a smaller batch lowers throughput and makes things
//     worse. Two guards:
//     - Backlog, observed directly: a period in which at least half the
//       batches were cut full and still left requests queued is
//       throughput-bound. There a "decrease" doubles the cap instead
//       (more items per fixed cost), up to the maximum.
//     - The model floor: a decrease never goes below the smallest batch
//       size b whose throughput num_lanes * b / t(b) covers 1.25x the
//       arrival rate. A model that claims no size can keep up is believed
//       only in a backlogged period (the cap then goes to the maximum);
//       otherwise the engine is visibly keeping up and the claim comes from
//       a fit over too narrow a range of sizes, so no floor applies.
//     A "decrease" is thus max(cap / 2, floor), which may raise a cap that
//     was cut while load was lighter.
//  4. Cost model: run time t(b) = a + c * b, fitted to (size, run_end -
//     run_start) of every batch that did not fail by exponentially weighted
//     least squares (forgetting factor kAdaptiveForgetting per batch, so it
//     follows a model that warms up or a machine that slows down). Until the
//     sizes seen vary enough to separate a from c, it is proportional,
//     t(b) = c * b, which overestimates large batches: the safe side.
//  5. Wait = min(max_wait, (cap - 1) / rate, target - 2 t(cap)), never
//     below 0. (cap - 1) / rate is how long the batch takes to fill from its
//     head: waiting longer only delays a batch that the full rule would have
//     cut. target - 2 t(cap) is the latency budget of the unlucky request
//     that arrives just as a batch starts: it waits for that batch, then for
//     its own to form, then for its own to run.
//     Here `rate` is the live QueueView::arrival_rate_per_s, or the state's
//     own estimate when the engine has none yet; no rate means no bound.
//  6. Low-load mode: wait = 0. When fewer than one more request is expected
//     within max_wait (rate * max_wait < 1), the batch cannot fill and waiting
//     only adds latency. The mode switches with N-signal hysteresis over the
//     per-period arrival rate: it is entered after kAdaptiveLowLoadAfter
//     consecutive periods with rate * max_wait < 1 and left after as many with
//     rate * max_wait >= 2; a period in between resets both counts.
//
// Where the arrival rate comes from. limits() must be const and pure, and
// observe() sees no QueueView, so the mode switch cannot use the engine's live
// rate. The state therefore estimates the rate itself from the arrival
// timestamps of the requests it observes: each period's rate is the number of
// requests observed in it over the time the latest observed arrival moved on
// (in the first period: over the spread of its arrivals). That is a moving
// average over one period, computed from arrivals rather than batch sizes, so
// it does not depend on how the strategy itself cut batches. Requests that
// time out in the queue are never observed, so under overload it reads the
// served rate; that is still high enough to mean "high load". The live rate is
// used only for the fill time, where the value now matters more than
// stability.
//
// Prior art, by name: additive-increase/multiplicative-decrease on the batch
// size against a latency objective (as in Clipper's adaptive batching);
// moving averages of the arrival rate with N-signal hysteresis for switching
// batching on and off under light load.
//
// Under load. Work per call is O(batch size) in observe() plus, once per
// period, an O(kAdaptiveLatencyWindow) selection for the p99; limits() and
// decide() are O(1) and allocate nothing. A state is a fixed-size value.
//
// Start and option changes. A fresh state has no throttle, no rate and no
// cost model: it behaves exactly like fifo with the user's limits until
// evidence arrives. A lowered max_batch_size or max_wait_us takes effect in
// the very next limits(), before any observe(). A throttle is never relaxed by
// an options change, only by evidence: after raising max_batch_size, a cap
// that was cut grows back by additive increase.
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

#include "clock.h"
#include "options.h"
#include "policy.h"
#include "records.h"

namespace batchscope {

// Tuning constants of the algorithm above; tests compute their expectations
// from these.
inline constexpr uint32_t kAdaptiveEvalBatches = 8;
inline constexpr uint32_t kAdaptiveEvalRequests = 64;
inline constexpr size_t kAdaptiveLatencyWindow = 256;
inline constexpr int kAdaptiveDecreaseAfter = 2;
inline constexpr int kAdaptiveIncreaseAfter = 3;
inline constexpr double kAdaptiveIncreaseBelow = 0.8;  // fraction of the target
inline constexpr int kAdaptiveLowLoadAfter = 3;        // periods, both ways
inline constexpr double kAdaptiveLowLoadEnter = 1.0;   // rate * max_wait below this
inline constexpr double kAdaptiveLowLoadLeave = 2.0;   // rate * max_wait at least this
inline constexpr double kAdaptiveForgetting = 0.95;    // per batch
inline constexpr double kAdaptiveHeadroom = 1.25;      // throughput floor vs rate

// Exponentially weighted sums for the least-squares fit of t(b) = a + c * b.
// Times are in microseconds.
struct AdaptiveCostSums {
  double w = 0;   // sum of weights
  double b = 0;   // sum of w * size
  double bb = 0;  // sum of w * size^2
  double t = 0;   // sum of w * run time
  double bt = 0;  // sum of w * size * run time
};

// A fitted run-time model, t(b) = intercept_us + per_item_us * b.
struct AdaptiveCostModel {
  double intercept_us = 0;
  double per_item_us = 0;
  bool proportional = false;  // sizes did not vary enough to fit an intercept
};

// Everything the strategy has learned. A plain value: copy it freely.
struct AdaptiveState {
  // The batch-size throttle; 0 when none, so the user's max_batch_size applies
  // (and follows it when it is raised). Never above max_batch_size as of the
  // latest observe(); limits() clamps again for changes since.
  uint32_t cap = 0;
  // Low-load mode: wait 0.
  bool low_load = false;

  // Evaluation bookkeeping.
  uint32_t batches_since_eval = 0;
  uint32_t requests_since_eval = 0;
  uint32_t backlogged_since_eval = 0;  // batches cut full that left requests queued
  bool backlogged = false;             // the latest period was throughput-bound
  uint64_t evaluations = 0;
  uint64_t cap_changes = 0;
  int over_streak = 0;     // consecutive periods with p99 above target
  int under_streak = 0;    // consecutive periods with p99 below 0.8 * target
  int low_streak = 0;      // consecutive low-load signals while not in low-load mode
  int high_streak = 0;     // consecutive high-load signals while in low-load mode
  double last_p99_us = 0;  // p99 of the window at the latest evaluation; 0 before

  // Arrival rate, estimated from observed arrival timestamps.
  double arrival_rate_per_s = 0;  // latest period's estimate; 0 before the first
  bool rate_anchored = false;     // rate_anchor is valid
  TimePoint rate_anchor{};        // latest arrival observed before this period
  TimePoint period_first_arrival{};
  TimePoint period_last_arrival{};
  uint32_t period_arrivals = 0;

  AdaptiveCostSums cost;

  // Ring of recent end-to-end latencies of ok requests, in microseconds.
  std::array<double, kAdaptiveLatencyWindow> latencies_us{};
  uint32_t latency_count = 0;  // valid entries
  uint32_t latency_next = 0;   // next slot to write
};

// Folds one completed batch and its request records into the state.
AdaptiveState adaptive_observe(AdaptiveState s, const BatchRecord& batch,
                               std::span<const RequestRecord> requests, const Options& o);

// The limits the strategy applies for this queue: cap <= max_batch_size,
// wait <= max_wait_us, always.
Limits adaptive_limits(const AdaptiveState& s, const QueueView& q, const Options& o);

// The batch cap in force: the throttle clamped to max_batch_size (at least 1).
size_t adaptive_effective_cap(const AdaptiveState& s, const Options& o);

// The fitted run-time model; nullopt before any usable batch.
std::optional<AdaptiveCostModel> adaptive_cost_model(const AdaptiveState& s);

// Predicted run time of a batch of `size`, in microseconds; nullopt without a model.
std::optional<double> adaptive_predict_run_us(const AdaptiveState& s, double size);

// The smallest cap that keeps up with 1.25x the estimated arrival rate
// (max_batch_size when none does; 1 without a rate or a model).
size_t adaptive_throughput_floor(const AdaptiveState& s, const Options& o);

class AdaptiveStrategy final : public Strategy {
 public:
  StrategyKind kind() const override { return StrategyKind::kAdaptive; }
  Decision decide(const QueueView& q, TimePoint now, const Options& o) const override;
  Limits limits(const QueueView& q, const Options& o) const override;
  void observe(const BatchRecord& batch, std::span<const RequestRecord> requests,
               const Options& o) override;

  // What the strategy has learned, for tests and the GUI (under the engine lock).
  const AdaptiveState& state() const { return state_; }

 private:
  AdaptiveState state_;
};

}  // namespace batchscope

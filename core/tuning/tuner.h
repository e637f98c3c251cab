// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The tuner's search: which configuration of a TuneSpace serves best under a
// p99 SLO, whatever evaluates a configuration (a replayed run in-process, a
// run against a server, or a closed-form model in tests).
//
// A configuration meets the SLO when its p99 is at most the SLO and its
// losses, rejected + timed_out, are at most kLossTolerance (0.1%) of what was
// sent. Among those, choose_best() picks by objective:
//   throughput: the highest throughput, throughputs within kThroughputBand
//               (1%) of the best counting as equal (open-loop traffic makes
//               every configuration that keeps up serve the offered rate),
//               then the lowest p99;
//   latency:    the lowest p99, then the highest throughput.
// Exact ties go to the cheaper configuration: fewer lanes, then the smaller
// max_wait, then the smaller max_batch_size, then fifo before adaptive (then
// the remaining fields, so the choice never depends on evaluation order).
//
// search() evaluates every combination when the space holds at most
// TuneSettings::exhaustive_limit of them (and the evaluation budget allows).
// Otherwise it evaluates a coarse grid, each dimension thinned to every
// 2^k-th value (ends kept, the widest dimension thinned first) until the grid
// fits in half of min(exhaustive_limit, max_evaluations), then refines around
// the best few points (refine_seeds) by compass search: from a point, try one
// step up and down each dimension, move to the first better point, and halve
// the steps when none is better, down to neighbouring values. Every
// evaluation is memoised. The budget
// (combinations considered, and optionally seconds) and the cancel callback
// are checked before each evaluation, so a stop takes effect within one.
//
// The stability rule is perf_analyzer's: measure in windows until the last
// `windows` are each within ±tolerance of their mean, for throughput and for
// p99 alike, or until max_trials windows.
// Thread-safety: free functions without shared state. search() and
// measure_until_stable() block their caller and call the evaluator, the
// measurement, `cancel` and `progress` on the caller's thread, so a GUI runs
// them on a worker thread and marshals progress itself.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/options.h"
#include "common/status.h"
#include "runs/run_record.h"
#include "tuning/tune_space.h"

namespace batchscope {

enum class TuneObjective : uint8_t { kThroughput, kLatency };
const char* objective_name(TuneObjective objective);
std::optional<TuneObjective> parse_objective(std::string_view name);

inline constexpr double kLossTolerance = 0.001;  // of sent
inline constexpr double kThroughputBand = 0.01;  // throughput objective, of the best throughput

// A figure's range over a prediction's band (tune_headroom.h).
struct FigureRange {
  double low = 0, high = 0;
};
// A prediction made again with t(b) scaled by the band's factors (`fast`
// at most 1, `slow` at least 1): each figure's range, the nominal within it.
struct PredictionBand {
  double fast = 1, slow = 1;
  FigureRange throughput_rps, p50_ms, p99_ms, loss_rate;
};
// How much worse the machine or the traffic may get before a configuration
// misses its objective, each found by bisection on the predictor.
struct Headroom {
  double slowdown = 0;  // the largest factor on t(b) at which it still meets it; 0: not even at 1
  double rate = 0;      // the largest factor on the arrival rate; 0: not even at 1
  bool rate_applies = true;  // false for a closed loop, whose rate is its own
  bool slowdown_beyond = false, rate_beyond = false;  // still met at the bisection's top
};

// One configuration and what it did.
struct Evaluated {
  Options options;
  double throughput_rps = 0;
  double p50_ms = 0, p99_ms = 0;
  uint64_t sent = 0, ok = 0, rejected = 0, timed_out = 0, errors = 0;
  // Where worked out (tune_headroom.h): its band and its headroom.
  std::optional<PredictionBand> band;
  std::optional<Headroom> headroom;

  // (rejected + timed_out) / sent; 0 when nothing was sent.
  double loss_rate() const;
};

Evaluated evaluated_from(const Options& options, const RunSummary& summary);

using Evaluator = std::function<Evaluated(const Options&)>;
// An Evaluator from something that runs a configuration and summarises it.
Evaluator evaluator_from_runs(std::function<RunSummary(const Options&)> run);

bool meets_slo(const Evaluated& e, double slo_p99_ms, double loss_tolerance = kLossTolerance);

// The configurations no other one beats on all of throughput (higher), p99
// (lower) and loss rate (lower) while being strictly better on one; equal
// points are all kept. Sorted by p99, then throughput (highest first).
// O(n log n): a sweep by throughput with a Fenwick tree of the least loss
// rate per p99 rank.
std::vector<Evaluated> pareto_front(std::vector<Evaluated> evaluated);

// The best configuration by the rules above, or kInvalidArgument when none
// meets the SLO, naming the closest one: the lowest p99 among those within
// the loss tolerance (or, when every one loses more, the least lossy), with
// its options (describe()), its p99 and the SLO.
Expected<Evaluated> choose_best(std::span<const Evaluated> evaluated, double slo_p99_ms,
                                TuneObjective objective, double loss_tolerance = kLossTolerance);

struct TuneSettings {
  double slo_p99_ms = 50;  // also the target_p99_ms of adaptive combinations
  TuneObjective objective = TuneObjective::kThroughput;
  double loss_tolerance = kLossTolerance;
  // Spaces up to this size (and within max_evaluations) are searched exhaustively.
  uint64_t exhaustive_limit = 20'000;
  // Combinations considered at most, evaluated or refused by validate().
  uint64_t max_evaluations = 20'000;
  double max_seconds = 0;  // wall time on `clock`; 0: no limit
  // null: the steady clock. Not owned: it must outlive every search() given
  // these settings.
  const Clock* clock = nullptr;
  int refine_seeds = 3;          // points of the coarse grid refined around
  std::function<bool()> cancel;  // true stops the search (polled before each evaluation)
  // (done, total) after each combination considered; `total` is the space's
  // size when exhaustive, else max_evaluations, and a search that ends early
  // reports (done, done) last.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct TuneResult {
  enum class Method : uint8_t { kExhaustive, kCoarseThenRefine };
  Method method = Method::kExhaustive;
  std::string space;  // TuneSpace::text()
  uint64_t space_size = 0;
  std::vector<Evaluated> evaluated;  // in evaluation order; .size() is the count
  uint64_t invalid = 0;              // combinations validate() refused
  bool cancelled = false;            // `cancel` said stop
  bool out_of_time = false;          // max_seconds ran out
  bool out_of_budget = false;        // max_evaluations ran out
  double slo_p99_ms = 0;
  TuneObjective objective = TuneObjective::kThroughput;
  std::vector<Evaluated> pareto;
  Expected<Evaluated> best = Error{ErrorCode::kInvalidArgument, "nothing was evaluated"};
};

TuneResult search(const TuneSpace& space, const Options& base, const TuneSettings& settings,
                  const Evaluator& evaluate);

struct StabilityRule {
  double tolerance = 0.10;  // each window within ±10% of the windows' mean
  int windows = 3;          // how many of the latest windows must agree
  int max_trials = 10;      // windows measured at most (at least `windows`)
};

struct WindowFigures {
  double throughput_rps = 0;
  double p99_ms = 0;
};

// Whether the last rule.windows windows agree; false when there are fewer.
bool is_stable(const StabilityRule& rule, std::span<const WindowFigures> windows);
bool is_stable(const StabilityRule& rule, std::span<const RunWindow> windows);

struct StableMeasurement {
  std::vector<RunWindow> windows;  // every window measured, in order
  bool stable = false;
  // The last rule.windows windows (or all, when fewer) as one: counts and
  // lengths summed, throughput = ok / length, latency quantiles the ok-weighted
  // mean of the windows' (max: the largest), batch and depth means averaged.
  RunWindow combined;
};

// Calls `measure_one_window` until the windows are stable or max_trials.
StableMeasurement measure_until_stable(const StabilityRule& rule,
                                       const std::function<RunWindow()>& measure_one_window);
RunWindow combine_windows(std::span<const RunWindow> windows);

struct TuneJsonExtra {
  std::optional<Evaluated> measured;  // the best, re-measured to confirm it
  // More members of the top-level object, as (key, JSON value written out).
  std::vector<std::pair<std::string, std::string>> members;
};

// {"objective": "throughput", "slo_p99_ms": X, "space": "...", "space_size": N,
//  "method": "exhaustive" | "coarse_then_refine", "evaluated": N, "invalid": N,
//  "stopped": null | "cancelled" | "time" | "budget",
//  "best": {"options": {...}, "predicted": {...}, "measured": {...}} or null,
//  "error": "..." (only when there is no best),
//  "pareto": [{"options": {...}, "throughput_rps": ..., ...}], ...extra members}
// Options are written as options_to_json() writes them, so
// options_from_json() reads "best.options" back; figures are
// {throughput_rps, p50_ms, p99_ms, sent, ok, rejected, timed_out}.
std::string tune_json(const TuneResult& result, const TuneJsonExtra& extra = {});

}  // namespace batchscope

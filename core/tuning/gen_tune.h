// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The tuner for a generative model: which scheduling, max_num_seqs, token
// budget per step (max_num_batched_tokens) and static wait serve a traffic
// best under a time-to-first-token (TTFT) and inter-token latency (ITL)
// objective, whatever evaluates a configuration (the step predictor, a live
// run, or a closed form in tests).
//
// A configuration meets the objective when its TTFT and ITL at the chosen
// quantile (p50, p90 or p99) are within their bounds (a bound of 0 is none)
// and it lost (failed) at most kLossTolerance of what it sent. Among those:
//   goodput:    the most requests per second within both objectives (a
//               request meets them when its own TTFT and mean gap do, as
//               vLLM's goodput counts), then the most output tokens/s;
//   throughput: the most output tokens per second, then goodput;
//   latency:    the lowest TTFT at the quantile, then the lowest ITL.
// Rates within kThroughputBand (1%) of the best count as equal and the
// lower TTFT then decides. Exact ties go to the cheaper configuration: fewer
// sequences, then the smaller token budget, then continuous before static,
// then the shorter wait.
//
// gen_search() evaluates every distinct combination of the space: a wait
// changes nothing under continuous scheduling, so continuous combinations
// that differ only in max_wait are evaluated once (counted as alike).
// max_rate() finds by bisection the largest factor on the traffic's rates at
// which some configuration still meets the objective.
// Thread-safety: free functions without shared state; they call the
// evaluator, `cancel` and `progress` on the caller's thread.

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
#include "traffic/arrivals.h"
#include "traffic/gen_load.h"
#include "tuning/tune_space.h"
#include "tuning/tuner.h"

namespace batchscope {

enum class GenObjective : uint8_t { kGoodput, kThroughput, kLatency };
const char* gen_objective_name(GenObjective objective);
std::optional<GenObjective> parse_gen_objective(std::string_view name);

struct GenSlo {
  double ttft_ms = 0;  // 0: no bound
  double itl_ms = 0;   // 0: no bound
  int quantile = 99;   // 50, 90, 95 or 99
  double loss_tolerance = kLossTolerance;

  // "TTFT p99 <= 200 ms, ITL p99 <= 30 ms"
  std::string describe() const;
};

// A generative prediction's band (gen_headroom.h): made again with the
// step cost scaled by `fast` and `slow`, each figure's range.
struct GenBand {
  double fast = 1, slow = 1;
  FigureRange ttft_ms, itl_ms, tokens_per_s, goodput_rps;
};

// One configuration and what it did (figures in milliseconds; the quantile
// ones at GenSlo::quantile).
struct GenEvaluated {
  Options options;
  double tokens_per_s = 0, requests_per_s = 0, goodput_rps = 0;
  double ttft_p50_ms = 0, ttft_ms = 0;
  double itl_p50_ms = 0, itl_ms = 0;
  double e2e_p50_ms = 0, e2e_ms = 0;
  uint64_t sent = 0, ok = 0, failed = 0, preemptions = 0, steps = 0;
  double decodes_per_step = 0;
  // Where worked out (gen_headroom.h): its band and its headroom.
  std::optional<GenBand> band;
  std::optional<Headroom> headroom;

  double loss_rate() const;  // failed / sent; 0 when nothing was sent
};

// `summary` made with the SLO's bounds (summarize_gen), so goodput counts them.
GenEvaluated gen_evaluated_from(const Options& options, const GenSummary& summary, int quantile);
// The median of each figure over several runs of one configuration.
GenEvaluated median_of_runs(std::span<const GenEvaluated> runs);

using GenEvaluator = std::function<GenEvaluated(const Options&)>;

bool meets_gen_slo(const GenEvaluated& e, const GenSlo& slo);

// The configurations no other one beats on all of goodput (higher), TTFT and
// ITL at the quantile (lower) and loss rate (lower) while being strictly
// better on one; equal points are all kept. Sorted by TTFT, then goodput
// (highest first).
std::vector<GenEvaluated> gen_pareto_front(std::vector<GenEvaluated> evaluated);

// The best configuration by the rules above, or kInvalidArgument when none
// meets the objective, naming the closest one (the least over its bounds,
// among those within the loss tolerance, else the least lossy) with its
// options and figures.
Expected<GenEvaluated> choose_gen_best(std::span<const GenEvaluated> evaluated, const GenSlo& slo,
                                       GenObjective objective);
// The `k` best that meet the objective, best first.
std::vector<GenEvaluated> gen_candidates(std::span<const GenEvaluated> evaluated, const GenSlo& slo,
                                         GenObjective objective, size_t k);

struct GenTuneSettings {
  GenSlo slo;
  GenObjective objective = GenObjective::kGoodput;
  uint64_t max_evaluations = 5'000;  // distinct combinations evaluated at most
  double max_seconds = 0;            // wall time on `clock`; 0: no limit
  // null: the steady clock. Not owned: it must outlive every gen_search()
  // given these settings.
  const Clock* clock = nullptr;
  bool first_meeting = false;  // stop at the first configuration that meets the objective
  // The model's context: a combination with chunked prefill off and a token
  // budget below it is invalid (a prompt must fit one step; vLLM refuses
  // it). 0: not checked.
  uint32_t context = 0;
  std::function<bool()> cancel;  // true stops the search
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct GenTuneResult {
  std::string space;
  uint64_t space_size = 0;  // combinations, before skipping
  uint64_t invalid = 0;     // refused by Options::validate() or the context (GenTuneSettings)
  uint64_t alike = 0;       // continuous combinations differing only in max_wait
  std::vector<GenEvaluated> evaluated;
  bool cancelled = false, out_of_time = false, out_of_budget = false;
  GenSlo slo;
  GenObjective objective = GenObjective::kGoodput;
  std::vector<GenEvaluated> pareto;
  Expected<GenEvaluated> best = Error{ErrorCode::kInvalidArgument, "nothing was evaluated"};
};

// The default space of a generative tune.
std::string default_gen_space_text();

// The most combinations a generative tune's space may hold: it evaluates
// every one.
inline constexpr uint64_t kMaxGenSpace = 100'000;
// `text` (empty: the default) as a generative tune's space: refused when it
// does not parse, holds more than kMaxGenSpace combinations, or names a
// tensor model's option (the strategy, max_batch_size, target_p99_ms),
// naming the entry.
Expected<TuneSpace> parse_gen_space(const std::string& text);

GenTuneResult gen_search(const TuneSpace& space, const Options& base,
                         const GenTuneSettings& settings, const GenEvaluator& evaluate);

// `spec` with every rate multiplied by `factor` (a trace replays `factor`
// times faster). kInvalidArgument for a closed loop, which has no rate.
Expected<ArrivalSpec> scaled_traffic(const ArrivalSpec& spec, double factor);
// The mean offered rate of `spec` over its duration, requests/s (a trace:
// its requests over its length).
double mean_rate(const ArrivalSpec& spec);

struct MaxRate {
  double factor = 0;               // on the traffic's rates; 0: not even the least tried
  std::optional<GenEvaluated> at;  // what `feasible` returned at `factor`
  double refused_factor = 0;       // the least factor found to miss (0: none found)
  int searches = 0;
};

// The largest factor in [lo, hi] at which `feasible` finds a configuration,
// by doubling from `start` until one misses and then bisecting until the
// bracket is within `precision` (relative). `feasible(factor)` returns the
// best configuration there, or nullopt.
MaxRate max_rate(const std::function<std::optional<GenEvaluated>(double factor)>& feasible,
                 double start = 1.0, double precision = 0.02, double lo = 1.0 / 1024,
                 double hi = 1024);

// The figures as JSON, the quantile ones named by `quantile` (GenSlo's):
// {"tokens_per_s", "requests_per_s", "goodput_rps", "ttft_p50_ms",
// "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "e2e_p50_ms", "e2e_p99_ms",
// "sent", "ok", "failed", "preemptions", "steps", "decodes_per_step",
// "band" and "headroom" where worked out} for quantile 99. (Files written before named them
// "ttft_ms", "itl_ms" and "e2e_ms"; readers take both.)
std::string gen_figures_json(const GenEvaluated& e, int quantile);
// {"fast", "slow", "ttft_ms": [lo, hi], "itl_ms", "tokens_per_s", "goodput_rps"}:
// the figures at the quantile over the band.
std::string gen_band_json(const GenBand& band);

// {"kind": "generation", "objective", "slo": {"ttft_p99_ms", "itl_p99_ms",
//  "quantile"} (the bounds named by their quantile), "space", "space_size", "evaluated", "invalid",
//  "alike", "stopped", "best": {"options", "predicted", "measured"} or null, "error", "pareto":
//  [{"options", ...figures}], ...extra members}. "best.options" is
// options_to_json()'s, as the tensor tune writes it.
std::string gen_tune_json(const GenTuneResult& result,
                          const std::optional<GenEvaluated>& measured = std::nullopt,
                          const std::vector<std::pair<std::string, std::string>>& members = {});

}  // namespace batchscope

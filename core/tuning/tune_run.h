// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the tuner's two front ends share, `batchscope tune` and the window's
// Tuner panel, around search() (tuner.h):
//  - prediction_evaluator(): the predictor as the search's Evaluator, the
//    traffic bounded as every prediction is (predict_bounds.h);
//  - distinct_front(): the Pareto front with points of the same figures
//    folded into one, the cheapest (the front is sorted by p99, and the
//    tuner's tie rule prefers the cheaper);
//  - tune_candidates(): the best K predictions that meet the SLO, in the
//    objective's order, which are confirmed live;
//  - confirm_live(): one candidate run live with the same traffic against a
//    fresh in-process engine (inproc_run.h) until perf_analyzer's stability
//    rule holds, with predicted and measured figures side by side;
//  - best_measured(): the winner among the confirmed, as measured.
// Under load: a live confirmation takes rule.windows to rule.max_trials runs
// of the traffic's duration each, and competes for the cores with whatever
// else runs (the window pauses its own traffic meanwhile).
// Thread-safety: free functions without shared state; confirm_live() blocks
// its caller and may run on any thread, its `stop` flag set from any other.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "batching/adaptive_plan.h"
#include "batching/engine.h"
#include "common/model_metadata.h"
#include "common/status.h"
#include "runs/run_record.h"
#include "traffic/arrivals.h"
#include "traffic/gen_workload.h"
#include "tuning/cost_model.h"
#include "tuning/tuner.h"

namespace batchscope {

// Predicts one configuration under `traffic` against `cost`. `simulated`,
// when given, accumulates the requests replayed (the caller's thread only).
// With `plan_on_cost`, adaptive configurations plan on `cost`, as a live
// engine handed plan_on_cost(cost) does; else on the strategy's own fit.
// `lengths`: each request's length in turn (PredictSpec::lengths).
Evaluator prediction_evaluator(const ArrivalSpec& traffic, const CostModel& cost,
                               uint64_t* simulated = nullptr, bool plan_on_cost = false,
                               std::vector<uint32_t> lengths = {});

// What a tune of a model sends: for a model whose inputs vary in length,
// the inputs live runs send in turn and each request's length for the
// predictor (varied_inputs() and varied_lengths() of `lengths`, or the
// model's default lengths, from `seed`); both empty for other models.
struct TuneRequests {
  std::vector<Tensors> inputs;
  std::vector<uint32_t> lengths;
};
TuneRequests tune_requests(const ModelMetadata& model, const std::optional<LengthDist>& lengths,
                           uint64_t seed);

// What a tune of `model` searches by default: TuneSpace::default_text() of
// its max_batch_size, and where `lengths` (TuneRequests::lengths) is not
// empty, TuneSpace::padding_text() of them.
std::string model_space_text(const ModelMetadata& model, std::span<const uint32_t> lengths);

// The largest batch size the space can ask for (base's, when it does not
// search max_batch_size).
uint32_t largest_batch(const TuneSpace& space, const Options& base);

// True when two points have the same throughput, p50, p99 and loss rate.
bool same_figures(const Evaluated& a, const Evaluated& b);

struct FrontPoint {
  size_t index = 0;  // into the front given
  size_t alike = 0;  // further points of the front with the same figures
};
// The front (as pareto_front() sorts it) with consecutive points of the same
// figures shown once, as the first of them.
std::vector<FrontPoint> distinct_front(std::span<const Evaluated> pareto);

// The best `k` predictions of `result` that meet its SLO, in the objective's
// order (choose_best() again and again, each pick's options removed).
std::vector<Evaluated> tune_candidates(const TuneResult& result, int k);

// A run's totals as one stability window.
RunWindow window_of(const RunSummary& summary);

// A configuration confirmed live: its prediction, and its figures measured
// over the last stable runs (rule.windows of them, or all when fewer): each
// figure the median of those runs', the counts their sums.
struct Confirmed {
  Evaluated predicted;
  Evaluated measured;
  int runs = 0;
  bool stable = false;
  // Those runs' p50 and p99, lowest to highest.
  FigureRange p50_runs, p99_runs;
  // Whether the measured p50 and p99 fell inside the predicted band; unset
  // where the prediction had none.
  std::optional<bool> inside_band;
  // t(b) and each request's overhead as the engine ran them in the last run
  // (CostModel::from_run); null when no batch size ran often enough.
  std::shared_ptr<const CostModel> observed;
  // Every live run it took, in order, records and all (a run history keeps
  // them).
  std::vector<std::shared_ptr<const RunData>> live_runs;
  // Its prediction again, made with the cost model calibrated by the
  // confirmations (tune fills it in).
  std::optional<Evaluated> recalibrated;
};

// `cost` refined by every confirmation's observed t(b), each for its lane
// count (CostModel::calibrated).
CostModel calibrate(const CostModel& cost, std::span<const Confirmed> confirmed);

struct ConfirmSpec {
  RunnerFactory factory;  // makes the runners of the fresh engine of each run
  StageMaker stage;       // what each such engine binds before batching (bind_model)
  ModelMetadata metadata;
  ArrivalSpec traffic;  // with a finite duration_s (or max_requests)
  // No run starts after it; unset: no limit.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Set: the run under way ends at its next send and no further run starts.
  const std::atomic<bool>* stop = nullptr;
  StabilityRule rule{0.10, 3, 6};
  // What an adaptive configuration plans with live: the strategy's own fit
  // (make_adaptive_plan) unless given, as the cost its predictions used
  // (plan_on_cost) so that live runs plan as predicted.
  AdaptivePlanner planner;
  // After each run with the runs done so far, on the caller's thread.
  std::function<void(int runs)> on_run;
  // The inputs each run sends in turn (varied_inputs() for a model whose
  // inputs vary in length); empty: run_inproc's own (at the reference
  // length, what a calibration sends). A run whose batches vary in length
  // has no `observed` t(b).
  std::vector<Tensors> inputs;
};

// One live run of the traffic with options `o` against a fresh in-process
// engine.
struct LiveRun {
  RunSummary summary;
  std::shared_ptr<const RunData> run;  // what was recorded
  size_t batches = 0;
  // t(b) and each request's overhead as the engine ran them
  // (CostModel::from_run, of the batches that started with all of o's
  // lanes busy); null when no batch size ran often enough.
  std::shared_ptr<const CostModel> observed;
};
Expected<LiveRun> run_live_once(const ConfirmSpec& spec, const Options& o);

// Runs the traffic live against predicted.options until the stability rule
// holds. nullopt: the deadline came first. kCancelled: `stop` was set. A
// model or engine that fails is the error.
Expected<std::optional<Confirmed>> confirm_live(const ConfirmSpec& spec,
                                                const Evaluated& predicted);

// Calibration under the traffic, before a search (`tune`, the Tuner panel):
// the traffic runs live once (or a few times) per lane count the space
// searches, fifo with the largest batch and a 2 ms wait (so that many sizes
// form), and a run refines the cost for its lane count
// (CostModel::calibrated), its curve from the batches that started with all
// its lanes busy.

// The lane counts `space` searches, ascending, or base's alone.
std::vector<uint32_t> lane_counts(const TuneSpace& space, const Options& base);

// The options of the calibration run with `lanes`: base's, fifo,
// max_batch_size `max_batch`, max_wait 2 ms.
Options calibration_options(const Options& base, uint32_t max_batch, uint32_t lanes);

struct CalibrationRun {
  Options options;
  // Of the run chosen (the median level's).
  size_t batches = 0;
  double p50_ms = 0, p99_ms = 0;
  // Each size seen: its median over what the cost said before, minus 1,
  // ascending (0.3: 30% slower than the cost said).
  std::vector<double> moved;
  // Each run's t(b) (null where no size ran 5 times) and cost_level()
  // against the cost before (0 there), in run order, and the position of the
  // one chosen.
  std::vector<std::shared_ptr<const CostModel>> seen;
  std::vector<double> levels;
  size_t chosen = 0;
  // What each run recorded, in run order (a history keeps them).
  std::vector<std::shared_ptr<const RunData>> live_runs;
  // t(b) as the chosen run saw it; null when no run had a size that ran 5
  // times (nothing refined).
  std::shared_ptr<const CostModel> observed() const {
    return chosen < seen.size() ? seen[chosen] : nullptr;
  }
};

// How slow a live run ran against `base`: the geometric mean, over the
// sizes `observed` holds, of its t(b) over base's with `lanes` busy (1.2:
// 20% slower). 0 when no size compares.
double cost_level(const CostModel& observed, const CostModel& base, uint32_t lanes);

// The position of the median of `levels` (the lower of the middle two for
// an even count), skipping zeros (runs that refined nothing); 0 when all are.
size_t median_level(std::span<const double> levels);

// Calibration runs of spec's traffic with `o` (calibration_options), `runs`
// of them (1..kMaxCalibrationRuns): `cost` is refined for o.num_lanes by
// the run whose level (cost_level against `cost`) is the median, so that
// one run the machine slowed or sped does not set every prediction after
// it. A model or engine that fails is the error; `cost` is then unchanged.
inline constexpr int kMaxCalibrationRuns = 9;
Expected<CalibrationRun> calibrate_live(const ConfirmSpec& spec, const Options& o, CostModel& cost,
                                        int runs = 1);

// The position in `confirmed` of the best by its measured figures, or an
// error saying that none of them meets the objective as measured, naming the
// closest.
Expected<size_t> best_measured(std::span<const Confirmed> confirmed, double slo_p99_ms,
                               TuneObjective objective);

// [{"options": {...}, "runs": N, "stable": bool, "predicted": {"throughput_rps",
// "p50_ms", "p99_ms", "sent", "lost"}, "measured": {the same}, and when set
// "recalibrated": {the same}}, ...]:
// the "confirmed" member of tune's JSON.
std::string confirmed_json(std::span<const Confirmed> confirmed);

}  // namespace batchscope

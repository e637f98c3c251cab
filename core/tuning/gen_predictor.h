// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a generation run would measure, on a virtual clock: the real step
// planner and scheduler (continuous or static, the paged cache, preemption
// and recompute) run the requests that `bench` would send, drawn from the
// same arrivals and workload, while a stand-in model advances the clock by
// each step's cost and returns no information (its tokens are greedy over
// flat logits; requests run to max_tokens as bench's do). Requests enter the
// scheduler before the first step that starts at or after their send time,
// as the engine's inbox does; a closed loop sends the next one when one
// ends. The result is a GenRun like run_gen_load's, with every step, so the
// same summary, exports and plots apply.
//
// The cost: step_us + decode_us per sequence decoded + context_us per
// cached token the step's sequences read + prefill_token_us per prompt
// token prefilled, times a factor drawn for each step (seeded by the
// arrivals' seed) from the spread of its decodes' bucket, and between_us of the engine's own after
// each step. With more lanes than one, each lane is a scheduler and a model on its own virtual
// clock, and each request goes to the lane with the fewest outstanding at its send, as GenEngine
// gives it; each step is priced by the fit measured at that lane count (GenStepCost::at_lanes).
// From --synthetic-lm S,T it is exact (S, T, 0, T, no spread, 0); from a measured step cost
// (tuning/step_cost.h) it is that fit, and a profile's grid where the cost has one
// (tuning/step_grid.h); for a model and GPU not at hand, the roofline's
// (roofline/roofline_cost.h), whose time per request outside the steps moves
// every request's first token and end by as much. Thread-safety: a pure function of its arguments
// (the workload advances).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/options.h"
#include "generation/lm_runner.h"
#include "roofline/roofline_cost.h"
#include "traffic/arrivals.h"
#include "traffic/gen_load.h"
#include "traffic/gen_workload.h"
#include "tuning/gen_tune.h"
#include "tuning/step_cost.h"
#include "tuning/step_grid.h"

namespace batchscope {

struct GenStepCost {
  double step_us = 0;
  double decode_us = 0;
  double prefill_token_us = 0;
  double context_us = 0;
  double between_us = 0;
  std::vector<StepSpreadPoint> spread;    // empty: every step costs its fit
  StepGrid grid;                          // a profile's points, where it has them
  uint32_t lanes = 1;                     // the lanes the fit was measured at
  std::vector<StepLaneFit> by_lanes;      // the fits at other lane counts
  bool exact = false;                     // the synthetic model's: the same at any lanes
  std::vector<StepSpreadBucket> spreads;  // by decodes and prefill (step_cost.h); not with a grid
  // A model and GPU not at hand (roofline/roofline_cost.h): where set, it
  // prices every step, times `roofline_scale`, and the terms above are 0.
  std::shared_ptr<const RooflineCost> roofline;
  double roofline_scale = 1;

  static GenStepCost synthetic(double step_us, double token_us) {
    return {step_us, token_us, token_us, 0, 0, {}, {}, 1, {}, true, {}, nullptr, 1};
  }
  // The roofline's cost of a model on a GPU, one replica (its TP inside).
  static GenStepCost of(RooflineCost roofline) {
    GenStepCost c;
    c.roofline = std::make_shared<const RooflineCost>(std::move(roofline));
    return c;
  }
  static GenStepCost of(const StepCost& measured) {
    return {measured.step_us,
            measured.token_us,
            measured.prefill_token_us,
            measured.context_us,
            measured.between_us,
            measured.spread,
            StepGrid(measured.grid),
            measured.lanes,
            measured.by_lanes,
            false,
            measured.spreads,
            nullptr,
            1};
  }
  // This cost on a machine `factor` times as slow (a band's or headroom's
  // prediction): every term of every fit, and the grid, scaled.
  GenStepCost scaled(double factor) const;
  // Whether it prices steps at `lanes` lanes: its own count, a measured fit,
  // or any count for an exact cost (lanes that only wait cost nothing of each
  // other's time).
  bool has_lanes(uint32_t lanes) const;
  // The cost at `lanes` lanes: that count's fit with this spread (no grid:
  // the grid was measured at its own count); itself where it has none.
  GenStepCost at_lanes(uint32_t lanes) const;
  // A step that decodes `decodes` sequences and prefills `prefill_tokens`,
  // its sequences reading `context` cached tokens, at its fitted cost; with
  // a grid, its decodes (at the mean context per sequence) and its prefill
  // are read from the grid, each part moved by the fit's difference where
  // it lies outside the grid, and a step of both counts the grid's floor
  // once. `prefill_reads`, the cached positions the prefill tokens attend to
  // (each chunk's tokens those before them), counts for the roofline alone.
  Duration of_step(uint32_t decodes, uint32_t prefill_tokens, uint64_t context = 0,
                   uint64_t prefill_reads = 0) const;
  // The spread's factor at uniform draw u in [0, 1): its quantiles joined
  // by straight lines, the end ones held beyond them; 1 without a spread.
  double factor_at(double u) const;
  // The same from the spread of a step's decodes and prefill (spread_for);
  // the pooled spread where a grid prices the decodes, as its points hold
  // what the buckets correct in the line.
  double factor_at(double u, uint32_t decodes, bool prefill) const;
  // Whether steps draw a factor at all.
  bool has_spread() const { return !spread.empty() || !spreads.empty(); }
  // "S us + T us per decode + P us per prompt token", then the terms that
  // are not 0: "+ C us per cached token read", "B us between steps" and
  // "spread xLO..xHI (q 0.05..0.99)".
  std::string text() const;
};

// `model` gives the context, the cache (block_size, num_blocks) and the
// vocabulary; `max_steps` bounds the run (its records take about 100 bytes a
// step), after which the requests left are failed as "predictor stopped".
GenRun predict_gen(const ArrivalSpec& spec, GenWorkload& workload, const Options& options,
                   const LmInfo& model, const GenStepCost& cost, uint64_t max_steps = 5'000'000);

// A tune's evaluator on the predictor: each configuration's run of
// `traffic`, its requests from `workload(traffic.seed)`, summarized with the
// SLO's bounds at its quantile. Holds copies of what it is given.
GenEvaluator predicted_evaluator(const ArrivalSpec& traffic,
                                 std::function<GenWorkload(uint64_t seed)> workload,
                                 const LmInfo& model, const GenStepCost& cost, const GenSlo& slo);

// The same with the step cost `slow` times as slow and every rate of
// `traffic` `rate` times as high (scaled_traffic), for bands and headroom
// (gen_headroom.h). A rate the traffic cannot take fails every request.
std::function<GenEvaluated(const Options&, double slow, double rate)> scaled_predicted_evaluator(
    const ArrivalSpec& traffic, std::function<GenWorkload(uint64_t seed)> workload,
    const LmInfo& model, const GenStepCost& cost, const GenSlo& slo);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A generative model's step cost as a run measured it. Steps that only
// decoded give step_us + token_us * decodes + context_us * context, the
// context being the cached tokens the step's sequences read: a least-squares
// fit, refitted without the steps beyond 3 median absolute deviations of it
// (a cold first step, a stall), three times at most. The context term is
// left out (0) where the steps read fewer than two ranges of context per
// sequence, as it would be the decode count again. `--synthetic-lm S,T`
// replays the first two terms. Steps with a prefill give the median cost of
// a prompt token beyond the fit. The spread is the quantiles of each
// decode-only step's time over its fitted cost; the spreads the same per
// row of decodes, and over the steps with a prefill (their time over the
// fit with the prompt tokens' cost), each from 20 steps or more: a line
// misprices steps of few decodes and of many in opposite directions, and
// one spread drawn for every step would lend the one's factors to the
// other. between_us is the median
// time from a step's end to the next one's start while sequences were
// running: the engine's own time, which no model step includes.
// `bench --cost-out FILE` writes it from an in-process run, `profile` from a
// grid (tuning/step_profile.h).
// Thread-safety: plain functions of their arguments.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "generation/gen_types.h"
#include "runs/gen_records.h"
#include "tuning/cost_drift.h"

namespace batchscope {

struct StepCostRow {
  uint32_t decodes_from = 0;  // decode-only steps that decoded this many sequences ..
  uint32_t decodes_to = 0;    // .. up to this many
  uint64_t steps = 0;
  double median_us = 0;
};

// A decode-only step's time over its fitted cost, at quantile q.
struct StepSpreadPoint {
  double q = 0;
  double ratio = 1;
};

// The spread of the decode-only steps of decodes_from..decodes_to, or
// (prefill) of the steps with a prefill.
struct StepSpreadBucket {
  uint32_t decodes_from = 0;  // 0 with prefill
  uint32_t decodes_to = 0;
  bool prefill = false;
  uint64_t steps = 0;
  std::vector<StepSpreadPoint> spread;  // by q, rising
};

// The spread a step of `decodes` decodes (prefilling, or not) draws from:
// the bucket of its decodes, else the nearest decode bucket; the prefill
// bucket for a step with a prefill; `pooled` where there is none.
const std::vector<StepSpreadPoint>& spread_for(const std::vector<StepSpreadPoint>& pooled,
                                               const std::vector<StepSpreadBucket>& buckets,
                                               uint32_t decodes, bool prefill);

// One point a profile measured: `decodes` sequences decoding at `position`
// cached positions each, or (decodes 0) a prefill of `prefill` tokens; its
// median step.
struct StepGridPoint {
  uint32_t decodes = 0;
  uint32_t position = 0;
  uint32_t prefill = 0;
  double us = 0;
};

// The fit at another lane count than the cost's own: lanes share the
// machine's cores and memory, so a step's fixed part, its cost per decode
// and the rest change with their number, and not by one factor.
struct StepLaneFit {
  uint32_t lanes = 0;
  uint64_t steps = 0;  // steps it was measured from
  double step_us = 0, token_us = 0, context_us = 0, prefill_token_us = 0, between_us = 0;
};

struct StepCost {
  uint32_t lanes = 1;                   // the engine lanes the fit was measured with
  std::vector<StepLaneFit> by_lanes;    // by lanes, rising; never `lanes` itself
  uint64_t steps = 0;                   // steps measured
  uint64_t decode_steps = 0;            // of them, the steps that only decoded
  double step_us = 0;                   // fitted cost of a decode step ..
  double token_us = 0;                  // .. of each sequence it decodes ..
  double context_us = 0;                // .. and of each cached token they read
  double prefill_token_us = 0;          // median cost of a prompt token; 0 when no step prefilled
  double between_us = 0;                // the engine's time from one step to the next
  std::vector<StepSpreadPoint> spread;  // by q, rising; empty below 20 decode-only steps
  std::vector<StepSpreadBucket>
      spreads;                      // by decodes rising, the prefill one last; none from a profile
  std::vector<StepCostRow> rows;    // decode-only steps by decodes: 1, 2-3, 4-7, ...
  std::vector<StepGridPoint> grid;  // a profile's points (tuning/step_grid.h); none from a run
  // The live runs that refined it (cost_drift.h), oldest first: each one's
  // level, the median of its decode-only steps' times over this fit's, at
  // its lanes; no points.
  std::vector<CostEvidence> evidence;
};

// The median, over `steps`' decode-only steps, of each one's time over
// `kept`'s fitted cost of it at `lanes` lanes; 0 when none compares (no
// fit at that count, or no such step).
double step_level(const StepCost& kept, std::span<const StepRecord> steps, uint32_t lanes);

// The cost at `lanes` engine lanes: itself at its own count, another
// count's fit with its spread (no rows, no grid: those were measured at its
// own, but the spreads), none where that count was not measured.
std::optional<StepCost> at_lanes(const StepCost& cost, uint32_t lanes);

// The quantiles the spread keeps.
inline constexpr double kStepSpreadQuantiles[] = {0.01, 0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99};

// Errors when no step that only decoded has an end after its start. The
// time between steps is each lane's own; `lanes` is the run's num_lanes.
Expected<StepCost> measure_step_cost(std::span<const StepRecord> steps, uint32_t lanes = 1);

// {"format": "batchscope-cost", "kind": "generation-steps", "version": 6,
//  "model", "device", "lanes", "steps", "decode_steps", "step_us", "token_us",
//  "context_us", "prefill_token_us", "between_us", "synthetic_lm": "S,T",
//  "spread": [{"q", "ratio"}], "spreads": [{"decodes_from", "decodes_to",
//  "prefill", "steps", "spread"}], "by_decodes": [{"decodes_from", "decodes_to",
//  "steps", "median_us"}], "grid": [{"decodes", "position", "prefill", "us"}],
//  "by_lanes": [{"lanes", "steps", "step_us", "token_us", "context_us",
//  "prefill_token_us", "between_us"}]}
inline constexpr int kStepCostVersion = 6;
std::string step_cost_json(const StepCost& cost, const std::string& model,
                           const std::string& device);

// `kept` moved towards `seen`: each figure the mean of the two weighted by
// their steps, the kept side's weight at most `cap` steps so that a long
// history still follows the machine. The rows, the spread and the grid are
// the later measurement's where it has them; each spread bucket the later
// one has replaces the kept one of its decodes. `seen` with no steps leaves `kept` as it
// was.
StepCost refine_step_cost(const StepCost& kept, const StepCost& seen, uint64_t cap = 20'000);

// What a run of `steps` at `lanes` lanes teaches `kept` (none: the run's
// own fit): at the fit's lane count, the fit refined (refine_step_cost); at
// another, that count's fit, refined the same way or added. `scale`
// multiplies the run's measured times first (a move held short,
// cost_drift.h). Errors as the measurement does.
Expected<StepCost> learn_step_cost(const std::optional<StepCost>& kept,
                                   std::span<const StepRecord> steps, uint32_t lanes,
                                   double scale = 1);

// Reads what step_cost_json() writes, and the versions before it (no
// "version", or up to 3: no context, between or spread terms; up to 4:
// measured at one lane, with no other lane count's fit; up to 5: one
// spread for every step): step_us,
// token_us and prefill_token_us (finite, at least 0, below 10 s) are
// required, the rest is kept where present and valid; a grid entry that is
// not counts and a time from 0 to 10 s is refused by its index, as is a
// lane fit that is not lanes 1..64 (rising) with times from 0 to 10 s, and
// a spread bucket without rising decodes and a valid spread. A newer
// version is refused by number. The error names the field and quotes its
// value.
Expected<StepCost> parse_step_cost_json(std::string_view text);

}  // namespace batchscope

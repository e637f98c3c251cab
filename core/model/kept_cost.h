// SPDX-License-Identifier: GPL-3.0-or-later
// A tensor model's kept cost on this machine: the cost `bench --target
// predict`, `tune` and the window's model loader predict with.
//  - `--cost FILE` wins (any cost file: `profile --json`, `bench --cost-out`,
//    a cache file from another machine, noted as such);
//  - else the cost cache's file for this model and machine
//    (tuning/cost_cache.h), made on first use: the model's profile (the
//    synthetic model's formula), then a live calibration per lane count the
//    prediction needs (tuning/cost_calibration.h), each printed as it goes;
//    a lane count the file lacks is calibrated and added; `--recalibrate`
//    makes the file anew.
// And after a live run of the model on this machine, the cache's file
// refined by what the run measured (refine_cost_cache).
// A build without the run history (no libcrypto to fingerprint a model
// file) has no cache: it measures t(b) now, as `profile` does.
// Thread-safety: runs on the calling thread, saying what it does through
// the Say it is given.

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "batching/adaptive_plan.h"
#include "model/local_model.h"
#include "model/say.h"
#include "runs/run_record.h"
#include "traffic/gen_workload.h"
#include "tuning/cost_cache.h"
#include "tuning/cost_model.h"

namespace batchscope {

// Where a prediction's cost comes from (a tensor model's t(b) or a language
// model's step cost alike).
struct CostChoice {
  std::string file;          // --cost FILE; empty: the cache
  bool recalibrate = false;  // --recalibrate: make the cache's file anew
  double calibration_s = 6;  // --calibration-seconds: live seconds per lane count
};

// What a prediction predicts with, and where it came from.
struct PredictionCost {
  CostModel cost;
  std::string source;          // "--cost FILE", "cached in FILE", "made now in FILE"
  std::optional<CostKey> key;  // the cache's, when it came from there
  std::string path;            // the cache file
};

// The cache's key for this model on this machine and device; an error when
// the model file cannot be read or this build has no cache.
Expected<CostKey> cost_key_for(const ModelChoice& model);

// The cost for predictions on `model` with each of `lanes` lane counts and
// batches up to `max_batch` (its largest profiled size at least), as the
// header says. `base` gives the calibration runs' queue, timeout and
// threads. `command` names the caller in what it says.
Expected<PredictionCost> prediction_cost(const ModelChoice& model, const Options& base,
                                         const std::vector<uint32_t>& lanes, uint32_t max_batch,
                                         const CostChoice& choice, const char* command,
                                         const Say& say);

// Refines the cache's file for `model` with `run`, a live run with `lanes`
// lanes (its batches that started with all of them busy), and says what
// moved in one line; a run on a busy machine (RunData::others, or t(b)
// far from the kept drift) is kept as evidence and refines nothing, and
// says why. Nothing when the model has no cached cost yet or no
// size ran often enough. A file that cannot be refined is named through
// say.err.
std::optional<CostRefinement> refine_cost_cache(const ModelChoice& model, const RunData& run,
                                                uint32_t lanes, const char* command,
                                                const Say& say);
// The same with t(b) as a run measured it (CostModel::from_run), `others`
// what other processes used over it (null: not watched).
std::optional<CostRefinement> refine_cost_cache(const ModelChoice& model, const CostModel& observed,
                                                uint32_t lanes, const char* command, const Say& say,
                                                const CompetingLoad* others = nullptr);

// The model's kept cost on this machine as it stands; none when there is
// none yet, it is refused, or this build keeps none.
std::optional<CostModel> kept_cost(const ModelChoice& model);

// The adaptive strategy's planner for a live engine serving `model`: on its
// kept cost where there is one (the cost every prediction uses, so a live
// engine plans as its predictions did), else on the strategy's own fit.
// Says which, naming `command`.
AdaptivePlanner adaptive_planner_for(const ModelChoice& model, const char* command, const Say& say);

// For a prediction on a model whose inputs vary in length: each request's
// length in turn, as bench sends them (varied_lengths() of `seq_len`, or of
// the default lengths, from `seed`), and a note through say.err when the
// cost has no t(b, L) to price them with. Empty for a model whose inputs do
// not vary.
std::vector<uint32_t> prediction_lengths(const ModelMetadata& model,
                                         const std::optional<LengthDist>& seq_len, uint64_t seed,
                                         const CostModel& cost, const std::string& command,
                                         const Say& say);

}  // namespace batchscope

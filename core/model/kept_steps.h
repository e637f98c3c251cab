// SPDX-License-Identifier: GPL-3.0-or-later
// A language model's kept step cost on this machine, and the live runs in
// this process that measure and refine it. A prediction is priced by the
// synthetic model's own cost, a step cost file (--cost FILE, as bench
// --cost-out writes), or the model's step cost kept on this machine and
// device (tuning/cost_cache.h): made on first use by a few seconds of the
// traffic run live, made anew by --recalibrate, refined by every live run
// of the model in this process.
// Thread-safety: functions of the calling thread.

#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/options.h"
#include "model/kept_cost.h"
#include "model/local_model.h"
#include "model/say.h"
#include "traffic/arrivals.h"
#include "traffic/gen_load.h"
#include "traffic/gen_workload_spec.h"
#include "tuning/gen_predictor.h"

namespace batchscope {

// The step cost a prediction uses, and where it came from.
struct PricedSteps {
  GenStepCost cost;
  std::string source;
  // How the kept step cost's runs moved (tuning/cost_drift.h); none for the
  // synthetic model or a --cost file.
  CostDrift drift;
};

// A live run that measured the step cost, and the options it ran under (a
// tune keeps them under itself).
struct GenCalibration {
  GenRun run;
  Options options;
};

// The step cost for predictions on `model` at each of `lanes` lane counts
// (default: the options'): each count the cost has no fit for is measured
// live, `cost.calibration_s` of the traffic, and kept. Each live run goes
// to `calibration` when given.
Expected<PricedSteps> price_gen_steps(const LocalModel& model, const Options& options,
                                      const ArrivalSpec& spec, const GenWorkloadSpec& lengths,
                                      const CostChoice& cost, const Say& say,
                                      std::vector<uint32_t> lanes = {},
                                      std::vector<GenCalibration>* calibration = nullptr);

// After a live run of `model` in this process at `lanes` lanes: its steps
// refine the kept step cost (made from them when there is none), weighted
// by steps, or, at another lane count than the fit's, that count's scale;
// one line says so. A run on a busy machine (`others`, what other processes
// used over it, null: not watched) or whose steps ran far from the kept
// cost is kept in it as evidence, labelled busy, and refines nothing; a
// far move is held short (tuning/cost_drift.h). Nothing for the synthetic
// model, whose cost is exact, or a run with no decode-only step; a file
// that cannot be kept is named through say.err.
void refine_kept_steps(const LocalModel& model, std::span<const StepRecord> steps, uint32_t lanes,
                       const Say& say, const CompetingLoad* others = nullptr);

// The model's step cost kept on this machine and where, when there is one
// that can be read; never for the synthetic model.
std::optional<std::pair<StepCost, std::string>> kept_step_cost(const LocalModel& model);

// The traffic run live against a generation engine in this process, with
// its steps; whatever is still running `drain` after the last send is left.
Expected<GenRun> run_gen_inproc(const LocalModel& model, const Options& options,
                                const ArrivalSpec& spec, GenWorkload& workload,
                                Duration drain = std::chrono::seconds(300));

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `bench --target predict` on a generative model: the run the in-process
// generation engine would record, on a virtual clock (tuning/gen_predictor.h),
// priced by --synthetic-lm's own cost, a step cost file (--cost FILE, as
// --cost-out writes), or a few seconds of the same traffic run live
// (--calibration-seconds) to measure one. `tune` prices and runs live through
// the same functions.

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "app/lm_setup.h"
#include "app/traffic_flags.h"
#include "common/options.h"
#include "traffic/arrivals.h"
#include "traffic/gen_load.h"
#include "tuning/gen_predictor.h"

namespace batchscope {

struct GenPredictOutputs {
  std::string json, csv_prefix, trace;
  double slo_ttft_ms = 0, slo_itl_ms = 0;
};

// The step cost a prediction uses, and where it came from: --synthetic-lm's
// own, a step cost file (--cost), or the model's kept step cost on this
// machine and device (tuning/cost_cache.h: made on first use by
// `calibration_s` of the traffic run live, made anew by --recalibrate).
struct PricedSteps {
  GenStepCost cost;
  std::string source;
};
struct GenCostChoice {
  std::string file;          // --cost FILE
  bool recalibrate = false;  // --recalibrate
  double calibration_s = 6;  // --calibration-seconds
};
// `lanes`: every lane count the predictions will run (default: the
// options'); each one the cost has no scale for is measured live and kept.
// `calibration`, when given, receives each live calibration run and the
// options it ran under (a tune keeps them under itself).
struct GenCalibration {
  GenRun run;
  Options options;
};
Expected<PricedSteps> price_gen_steps(const LmChoice& choice, const Options& options,
                                      const ArrivalSpec& spec, const GenLengthFlags& lengths,
                                      const GenCostChoice& cost, std::vector<uint32_t> lanes = {},
                                      std::vector<GenCalibration>* calibration = nullptr);

// After a live run of `choice` in this process at `lanes` lanes: its steps
// refine the kept step cost (made from them when there is none), weighted by
// steps, or, at another lane count than the fit's, that count's scale; one
// line says so. Nothing for the synthetic model, whose cost is exact, or a
// run with no decode-only step; a file that cannot be kept is named on
// stderr.
void refine_kept_steps(const LmChoice& choice, std::span<const StepRecord> steps,
                       uint32_t lanes = 1);

// The model's step cost kept on this machine and where, when there is one
// that can be read; never for the synthetic model.
std::optional<std::pair<StepCost, std::string>> kept_step_cost(const LmChoice& choice);

// The traffic run live against the engine in this process, with its steps;
// whatever is still running `drain` after the last send is left.
Expected<GenRun> run_gen_inproc(const LmChoice& choice, const Options& options,
                                const ArrivalSpec& spec, GenWorkload& workload,
                                Duration drain = std::chrono::seconds(300));

int run_gen_predict(const LmChoice& choice, const Options& options, const ArrivalSpec& spec,
                    GenLengthFlags lengths, const GenCostChoice& cost,
                    const GenPredictOutputs& out);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `bench --target predict` on a generative model: the run the in-process
// generation engine would record, on a virtual clock (tuning/gen_predictor.h),
// priced by --synthetic-lm's own cost, a step cost file (--cost FILE, as
// --cost-out writes), or a few seconds of the same traffic run live
// (--calibration-seconds) to measure one.

#include <string>

#include "app/lm_setup.h"
#include "app/traffic_flags.h"
#include "common/options.h"
#include "traffic/arrivals.h"

namespace batchscope {

struct GenPredictOutputs {
  std::string json, csv_prefix, trace;
  double slo_ttft_ms = 0, slo_itl_ms = 0;
};

int run_gen_predict(const LmChoice& choice, const Options& options, const ArrivalSpec& spec,
                    GenLengthFlags lengths, const std::string& cost_file, double calibration_s,
                    const GenPredictOutputs& out);

}  // namespace batchscope

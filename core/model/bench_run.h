// SPDX-License-Identifier: GPL-3.0-or-later
// What `batchscope bench` does with a tensor model besides sending the load:
// the run the in-process engine would record, predicted on the model's kept
// cost (or a cost file); the planner a live engine's adaptive strategy plans
// with; and the cost file a live run writes or refines (--cost-out).
// Thread-safety: functions of the calling thread.

#pragma once

#include <optional>
#include <string>

#include "batching/adaptive_plan.h"
#include "common/options.h"
#include "model/kept_cost.h"
#include "model/local_model.h"
#include "model/say.h"
#include "runs/run_record.h"
#include "traffic/arrivals.h"
#include "traffic/gen_workload.h"

namespace batchscope {

// The run `model` would record under `spec` with `options`, on a virtual
// clock, priced by `cost` (a cost file, or the model's kept cost, made on
// first use); `config` is the run's. Says the cost, the capacity it gives
// and the lengths priced. The adaptive strategy plans on the cost it is
// predicted with, as a live engine plans on the kept cost. The run carries
// its band (t(b) at the kept drift's ends) and the range of its latencies
// over kPredictedDraws other draws of the traffic (PredictedBand).
inline constexpr int kPredictedDraws = 4;
Expected<RunData> predict_bench(const LocalModel& model, const Options& options,
                                const ArrivalSpec& spec, const CostChoice& cost,
                                const std::optional<LengthDist>& seq_len, const RunConfig& config,
                                const Say& say);

// The adaptive strategy's planner for a live run of `model`: on `plan_file`
// (a cost file) when given, else on the model's kept cost where there is
// one, else on its own fit. Says which; an unreadable file is an error.
Expected<AdaptivePlanner> live_planner(const ModelChoice& model, const std::string& plan_file,
                                       const char* command, const Say& say);

// A cost file written from a live run (--cost-out): t(b) as its batches ran
// (at one lane), or, where `refining` was read from that file before the
// run, that cost refined by the run's t(b) for its lanes, each size's move
// said. The JSON to write, and what it is.
struct CostOut {
  std::string json;
  std::string what;
};
Expected<CostOut> cost_out_of(const RunData& run, const ModelChoice& model,
                              const std::optional<CostModel>& refining, uint32_t lanes,
                              const std::string& path, const Say& say);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope tune --model-config CONFIG --gpu NAME`: a language model's
// serving planned for a GPU that is not here. For each tensor parallelism
// asked (--tp 1,2,4), the model is planned there (planned_lm.h: the roofline
// step cost and the paged cache the GPU's memory leaves, one cache for the
// whole space: the activations' reserve for its largest max_num_seqs and
// max_num_batched_tokens) and every configuration of the space runs on the
// step predictor under the objective. Across the parallelisms:
//   --target-rate R: one replica's capacity (the largest rate some
//     configuration serves within the objective) gives the replicas,
//     ceil(R x (1 + headroom) / capacity), and the fewest GPUs in all
//     (TP x replicas) win, the smaller TP on a tie; the winner's
//     configuration is then tuned at R over its replicas;
//   --max-rate: the most capacity a GPU (capacity / TP);
//   else: the objective a GPU (goodput or tokens/s over TP; latency: the
//     lowest TTFT).
// The headroom is --headroom, else kDefaultBand (15%); the band of each
// prediction scales the roofline's step by 1 -+ it. Nothing is confirmed
// live: the JSON says what the plan assumes ("plan": {"caveats"}), names
// the model and GPU, and is enough for `export --config`.
// Thread-safety: blocks its caller; `report` is called on that thread.

#include <optional>

#include "common/serving_plan.h"
#include "model/lm_tune.h"
#include "tuning/tune_space.h"

namespace batchscope {

// The space a planned tune searches by default; with a context of at most
// its largest budget (--max-model-len 16384 or less), chunked_prefill=1|0
// besides.
std::string default_planned_space_text();

// The step a plan's one cache reserves for: `base` with the space's
// largest max_num_seqs and max_num_batched_tokens.
Options planned_reserve(const TuneSpace& space, Options base);

// What a plan names for the exports (common/serving_plan.h): the model
// (`model_id`, else the config's _name_or_path, else the folder holding
// config.json), the GPU, TP, dtypes and memory share, and what the plan
// assumes (`reserve`: the step its cache was sized for); one replica and no
// capacity, which the caller fills in.
ServingPlan plan_for_export(const PlanChoice& choice, const std::string& model_id,
                            const PlannedLm& planned, const Options& reserve);

std::optional<WorkError> tune_planned_lm(const LmTuneRequest& request, LmTuneReport& report);

}  // namespace batchscope

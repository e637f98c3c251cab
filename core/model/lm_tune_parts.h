// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the language-model tunes share (lm_tune.cpp for a model run here,
// planned_tune.cpp for one planned for a GPU): the budget's halves, the
// largest rate some configuration serves, the model's JSON. Internal to
// core/model.
// Thread-safety: free functions; they call `at` and `say` on the caller's thread.

#include <chrono>
#include <functional>
#include <string>

#include "generation/lm_runner.h"
#include "model/lm_tune.h"

namespace batchscope {

using Seconds = std::chrono::duration<double>;
using SteadyTime = std::chrono::steady_clock::time_point;

// Seconds from now to halfway to `deadline` (at least a millisecond): what
// a phase may take when the rest must be left for the phases after it.
double half_of_what_is_left(SteadyTime deadline);

// {"name", "context_length", "block_size", "num_blocks"}: the tune's "lm",
// what the exports need of the model.
std::string gen_model_json(const LmInfo& info);

// The largest factor on the traffic's rates at which some configuration
// still meets the objective, found on the predictor within half of what is
// left of the budget; the traffic scaled by it, and the "max_rate" JSON.
struct RateFound {
  ArrivalSpec traffic;
  std::string json;
};
Expected<RateFound> find_max_rate(const LmTuneRequest& t, const TuneSpace& space,
                                  const GenTuneSettings& settings, SteadyTime deadline,
                                  const std::function<GenEvaluator(const ArrivalSpec&)>& at,
                                  const Say& say);

}  // namespace batchscope

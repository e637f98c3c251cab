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
// The cost: step_us + decode_us per sequence decoded + prefill_token_us per
// prompt token prefilled. From --synthetic-lm S,T it is exact (S, T, T);
// from a measured step cost (tuning/step_cost.h) it is that fit, without
// its spread.
// Thread-safety: a pure function of its arguments (the workload advances).

#include <chrono>
#include <cstdint>

#include "common/clock.h"
#include "common/options.h"
#include "generation/lm_runner.h"
#include "traffic/arrivals.h"
#include "traffic/gen_load.h"
#include "traffic/gen_workload.h"
#include "tuning/step_cost.h"

namespace batchscope {

struct GenStepCost {
  double step_us = 0;
  double decode_us = 0;
  double prefill_token_us = 0;

  static GenStepCost synthetic(double step_us, double token_us) {
    return {step_us, token_us, token_us};
  }
  static GenStepCost of(const StepCost& measured) {
    return {measured.step_us, measured.token_us, measured.prefill_token_us};
  }
  // A step that decodes `decodes` sequences and prefills `prefill_tokens`.
  Duration of_step(uint32_t decodes, uint32_t prefill_tokens) const;
};

// `model` gives the context, the cache (block_size, num_blocks) and the
// vocabulary; `max_steps` bounds the run (its records take about 100 bytes a
// step), after which the requests left are failed as "predictor stopped".
GenRun predict_gen(const ArrivalSpec& spec, GenWorkload& workload, const Options& options,
                   const LmInfo& model, const GenStepCost& cost, uint64_t max_steps = 5'000'000);

}  // namespace batchscope

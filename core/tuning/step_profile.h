// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `profile` on a generative model: its step cost over a grid, measured on
// the model alone. Decode steps of 1, 2, 4, ... sequences up to max_seqs,
// each sequence at 8, 32, 128, ... cached positions up to the context, and
// prefill steps of 8, 16, 32, ... prompt tokens up to max_batched_tokens,
// each point `runs` times after the model's warm-up. Every sequence reads
// cache block 0, which the model warms and writes, as its warm-up does. The
// steps then go through measure_step_cost (tuning/step_cost.h) for the
// line with its context term; the points' medians become the cost's grid
// (tuning/step_grid.h), which prices the steps it spans, and the spread is
// each step's time over its own point's median. The engine's
// time between steps is not the model's, so a profile has none; a live run
// (bench, tune) adds it when it refines the kept cost.
// Thread-safety: runs the model on the calling thread.

#include <cstdint>
#include <functional>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "generation/lm_runner.h"
#include "tuning/step_cost.h"

namespace batchscope {

struct StepProfileOptions {
  uint32_t max_seqs = 32;             // the largest decode step
  uint32_t max_batched_tokens = 512;  // the largest prefill chunk
  uint32_t runs = 15;                 // steps timed at each point
};

struct StepProfilePoint {
  uint32_t decodes = 0;         // sequences decoded (0: a prefill)
  uint32_t position = 0;        // cached positions per sequence
  uint32_t prefill_tokens = 0;  // prompt tokens prefilled
  double p50_us = 0, p90_us = 0, max_us = 0;
  double fitted_us = 0;  // the line's price of the point
};

struct StepProfile {
  std::vector<StepProfilePoint> points;
  std::vector<StepRecord> steps;  // every step timed, in order
  StepCost cost;
};

// Errors when the model fails a step or its context or cache is too small
// for one decode. `on_point` (may be empty) hears each point as it ends.
Expected<StepProfile> profile_steps(
    LmRunner& model, const StepProfileOptions& options, const Clock& clock,
    const std::function<void(const StepProfilePoint&)>& on_point = {});

}  // namespace batchscope

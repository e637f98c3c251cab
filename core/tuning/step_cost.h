// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A generative model's step cost as a run measured it. Steps that only
// decoded give the line step_us + token_us * decodes, fitted through the
// median step of each decode count (weighted by its steps), the form
// `--synthetic-lm S,T` replays; medians keep a cold first step or a stall
// from bending it. Steps with a prefill give the median cost of a prompt
// token beyond that line. `bench --cost-out FILE` writes it from an
// in-process generation run.
// Thread-safety: plain functions of their arguments.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "generation/gen_types.h"

namespace batchscope {

struct StepCostRow {
  uint32_t decodes_from = 0;  // decode-only steps that decoded this many sequences ..
  uint32_t decodes_to = 0;    // .. up to this many
  uint64_t steps = 0;
  double median_us = 0;
};

struct StepCost {
  uint64_t steps = 0;            // steps measured
  uint64_t decode_steps = 0;     // of them, the steps that only decoded
  double step_us = 0;            // fitted cost of a decode step ..
  double token_us = 0;           // .. and of each sequence it decodes
  double prefill_token_us = 0;   // median cost of a prompt token; 0 when no step prefilled
  std::vector<StepCostRow> rows;  // decode-only steps by decodes: 1, 2-3, 4-7, ...
};

// Errors when no step that only decoded has an end after its start.
Expected<StepCost> measure_step_cost(std::span<const StepRecord> steps);

// {"model", "device", "steps", "decode_steps", "step_us", "token_us",
//  "prefill_token_us", "synthetic_lm": "S,T", "by_decodes": [{"decodes_from",
//  "decodes_to", "steps", "median_us"}]}
std::string step_cost_json(const StepCost& cost, const std::string& model,
                           const std::string& device);

// `kept` moved towards `seen`: each figure the mean of the two weighted by
// their steps, the kept side's weight at most `cap` steps so that a long
// history still follows the machine. The rows are the later measurement's
// where it has any. `seen` with no steps leaves `kept` as it was.
StepCost refine_step_cost(const StepCost& kept, const StepCost& seen, uint64_t cap = 20'000);

// Reads what step_cost_json() writes: step_us, token_us and
// prefill_token_us (finite, at least 0, below 10 s) are required, the rest
// is kept where present. The error names the field and quotes its value.
Expected<StepCost> parse_step_cost_json(std::string_view text);

}  // namespace batchscope

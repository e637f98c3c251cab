// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope tune` on a generative model: every configuration of the space
// (scheduling, max_num_seqs, max_num_batched_tokens, static's max_wait)
// predicted on the step predictor (tuning/gen_predictor.h) under a TTFT and
// ITL objective (tuning/gen_tune.h), the best few confirmed live in process,
// the result written as JSON and kept in the run history; --max-rate first
// finds the highest rate some configuration still serves within the
// objective.

#include <map>
#include <string>

namespace batchscope {

int run_gen_tune(std::map<std::string, std::string> flags);
std::string gen_tune_help();

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope tune`: searches a space of batching options on the predictor
// (the traffic replayed through the real strategies against the model's
// measured cost curve t(b)), keeps the Pareto front, picks the best
// configuration under a p99 objective, confirms the top few live under the
// same traffic until their figures are stable, and prints, saves and exports
// the winner.

#include <string>
#include <vector>

namespace batchscope {

int run_tune(const std::vector<std::string>& args);
std::string tune_help();

}  // namespace batchscope

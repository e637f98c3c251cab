// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `profile` on a generative model (its sidecar says "kind": "generative",
// or --synthetic-lm): the step cost over a grid of decodes, context and
// prompt tokens, on the model alone (tuning/step_profile.h), printed as a
// table with the fit, and written by --json as a step cost file that
// `bench --target predict --cost` and `tune --cost` read.

#include <map>
#include <string>

namespace batchscope {

std::string profile_lm_help();
int run_profile_lm(std::map<std::string, std::string> flags);

}  // namespace batchscope

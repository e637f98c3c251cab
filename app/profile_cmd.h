// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope profile`: a model's batch cost curve t(b), its fit and the
// speedup batching allows, as a table and optionally as JSON.

#include <string>
#include <vector>

namespace batchscope {

int run_profile(const std::vector<std::string>& args);
std::string profile_help();

}  // namespace batchscope

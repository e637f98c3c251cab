// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope bench`: drives a target with an arrival pattern, records the
// run, prints a summary, and exports it (JSON, CSV, Chrome trace, PNG).

#include <string>
#include <vector>

namespace batchscope {

int run_bench(int argc, char** argv, const std::vector<std::string>& args);
std::string bench_help();

}  // namespace batchscope

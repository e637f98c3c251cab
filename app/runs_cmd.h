// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope runs`: the run history from the command line: list, show,
// compare, export, rm, import (and ids, for tab completion).

#include <string>
#include <vector>

namespace batchscope {

int run_runs(const std::vector<std::string>& args);
std::string runs_help();

// `batchscope report`: kept runs as one self-contained HTML page.
int run_report(const std::vector<std::string>& args);
std::string report_help();

}  // namespace batchscope

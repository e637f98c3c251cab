// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A report to share: kept runs as one self-contained HTML page (no script,
// no network, charts as inline SVG) that any browser opens: per run its
// latency fan over time (p50 line, p90..p99 band), throughput over time and
// batch-size histogram, and for generation runs TTFT and ITL over time; then tables of the figures
// side by side, the options and traffic, and the machine and model each ran on, differences marked.
// Thread-safety: a free function.

#include <string>
#include <vector>

#include "runs/history.h"

namespace batchscope {

// `title` heads the page; `made_by` names what wrote it ("Batchscope 0.2.0
// (git 1a2b3c4d5e6f)"), `generated` when (UTC text). `generation`
// holds, run by run, a generation run's requests (History::load_generation
// from time zero), from which its TTFT and ITL over time are drawn; empty
// for other runs (or give no vector at all).
std::string run_report_html(const std::vector<HistoryRun>& runs, const std::string& title,
                            const std::string& made_by, const std::string& generated,
                            const std::vector<std::vector<HistoryGenRequest>>& generation = {});

}  // namespace batchscope

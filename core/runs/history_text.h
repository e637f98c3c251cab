// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Kept runs as the text `batchscope runs` prints: a table of runs, one run
// in full, and two runs side by side. Each run's summary is taken as given
// (a run cut short gets its summary from its records first, kept_summary()).
// Times are UTC, numbers in their shortest plain form ("12.5", "0.372").
// Thread-safety: free functions without shared state.

#include <string>
#include <vector>

#include "runs/history.h"

namespace batchscope {

// A header and a line per run: id, start, kind, model, req/s, p50, p99, and
// what ran (with its parent run and whether it was stopped or cut).
std::string runs_table_text(const std::vector<HistoryRun>& runs);
// One run: when, what, its options, its live runs (`parts`, newest first),
// its figures and the context it ran in.
std::string run_text(const HistoryRun& run, const std::vector<HistoryRun>& parts);
// Two runs' figures side by side with B - A, and where their context differs.
std::string comparison_text(const HistoryRun& a, const HistoryRun& b);

}  // namespace batchscope

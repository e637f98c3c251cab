// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A kept run's figures as the run history gives them back, for the `runs`
// command and the Runs panel alike: a finished run's own summary; a run cut
// short (the program ended while it was kept) has none, so its summary is
// made from the records it kept, a generation run's as its bench measured.
// Built only with the run history (SQLite).
// Thread-safety: as the History passed in (one thread at a time).

#include <string>

#include "runs/history.h"
#include "traffic/gen_load.h"

namespace batchscope {

// A generation run's kept records as the GenRun its bench measured; times
// count from TimePoint{}, the run's start.
Expected<GenRun> load_gen_run(History& h, const HistoryRun& row);

// The run's summary JSON: its own, or for a run cut short, made from its
// records (summary_of for tensor runs, summarize_gen for generation runs).
Expected<std::string> kept_summary(History& h, const HistoryRun& row);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// A kept run written out as bench would have written it (`runs export`):
// its JSON summary, its request bodies as JSON lines (serve
// --record-bodies), its requests (and, for a tensor run, its windows) as
// CSV, or its Chrome trace; kept runs as one HTML report (`report`); a
// bench JSON summary kept as a run (`runs import`). Pictures need Qt and
// are the caller's. Built
// only with the run history (SQLite).
// Thread-safety: as the History passed in (one thread at a time).

#pragma once

#include <string>
#include <vector>

#include "runs/history.h"

namespace batchscope {

// One file to write: where, what, and what it is ("CSV per request").
struct KeptFile {
  std::string path;
  std::string text;
  std::string what;
};

struct KeptExport {
  std::vector<KeptFile> files;
  // Where the run kept fewer requests than it saw: a line that says so.
  std::string note;
};

// `row`'s export in `format` (json, bodies, csv, trace) to `out` (csv: a
// prefix for OUT_requests.csv and OUT_windows.csv). Refused: another format
// (png included, which needs a picture), a tune's own run for anything but
// its JSON, and bodies for a run that kept none; each naming the run.
Expected<KeptExport> export_kept_run(History& h, const HistoryRun& row, const std::string& format,
                                     const std::string& out);

// Runs `ids` of `h` as one HTML report (run_report.h), headed by `title`
// (empty: the one run's label, or "Batchscope runs" and their ids), each
// run cut short summarised from its records; `made_by` names the writer.
Expected<std::string> kept_report_html(History& h, const std::vector<int64_t>& ids,
                                       std::string title, const std::string& made_by);

// A bench --json summary (`text`) kept in `h` as a run of its own, in one
// transaction; its id.
Expected<int64_t> keep_imported_run(History& h, const std::string& text);

}  // namespace batchscope

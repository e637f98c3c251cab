// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A recorded run's files, as `batchscope bench` writes them: NAME.json (the
// summary), NAME-requests.csv, NAME-windows.csv and NAME-trace.json (Chrome
// trace), then NAME.png, which the Runs panel draws on the GUI thread.
// Thread-safety: write_run_text_files reads only the run, which nobody
// changes, so it may run on any thread.

#include <QString>
#include <atomic>
#include <functional>

#include "common/status.h"
#include "ui/runs/run_list.h"

namespace batchscope {

// A run's name as a file name: letters, digits, '.', '-' and '_' kept, the
// rest made '_', so a name cannot leave the chosen directory.
QString run_file_base(const QString& name);

// Writes the four text files of a run into `dir` (made if missing), calling
// progress(k, file name) before the k-th; stops when *cancel turns true.
Status write_run_text_files(const RecordedRun& run, const QString& dir,
                            const std::function<void(int, const QString&)>& progress,
                            const std::atomic<bool>* cancel = nullptr);

QString run_png_path(const RecordedRun& run, const QString& dir);

}  // namespace batchscope

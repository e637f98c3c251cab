// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Writing a run's exports, and what a build without Qt can run: shared by
// bench, tune and runs.
// Thread-safety: functions of the calling thread.

#include <string>

#include "common/status.h"

namespace batchscope {

// Writes one export of a run and says so ("  wrote PATH (WHAT)"); an empty
// path writes nothing. False, after saying why, when it cannot be written.
bool save_export(const std::string& path, const std::string& text, const char* what);

// A build without Qt runs bench and tune in process only: an error naming
// the flag when `target` is not inproc or predict, or a plot or a payload
// file is asked for; ok otherwise.
Status qt_free_check(const std::string& target, const std::string& plot_out,
                     const std::string& payload_file);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// What the commands share in what they print and write: their errors, the
// terminal that
// core/model's work says its progress on, writing a run's exports, and what
// a build without Qt can run.
// Thread-safety: functions of the calling thread.

#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "model/say.h"

class QCoreApplication;

namespace batchscope {

// A command's refusal or failure on stderr ("batchscope bench: MESSAGE"),
// giving its exit status: 2 (the default) for what was asked, 1 for what
// went wrong doing it.
struct Fail {
  const char* command;
  int operator()(const std::string& message, int code = 2) const;
};

// Progress to stdout and notes to stderr, each flushed as it is said.
Say terminal_say();

// Writes one export of a run and says so ("  wrote PATH (WHAT)"); an empty
// path writes nothing. False, after saying why, when it cannot be written.
bool save_export(const std::string& path, const std::string& text, const char* what);

// A build without Qt runs bench and tune in process only: an error naming
// the flag when `target` is not inproc or predict, or a plot or a payload
// file is asked for; ok otherwise.
Status qt_free_check(const std::string& target, const std::string& plot_out,
                     const std::string& payload_file);

#ifdef BATCHSCOPE_WITH_QT
// The Qt application a run needs: one that can draw (offscreen unless a
// platform is set) for a `plot`, else a core one for this process's
// listener (`self_http`), else none.
std::unique_ptr<QCoreApplication> run_application(int& argc, char** argv, bool plot,
                                                  bool self_http);
#endif

}  // namespace batchscope

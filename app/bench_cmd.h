// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope bench`: drives a target with an arrival pattern, records the
// run, prints a summary, and exports it (JSON, CSV, Chrome trace, PNG).

#include <string>
#include <vector>

#include "common/status.h"
#include "traffic/arrivals.h"

namespace batchscope {

// Writes one export of a run and says so ("  wrote PATH (WHAT)"); an empty
// path writes nothing. False, after saying why, when it cannot be written.
bool save_export(const std::string& path, const std::string& text, const char* what);

// Reads one arrival-pattern flag (--pattern, --rate, --duration, --seed, ...)
// into `spec`; false when `name` is not one of them. A bad value sets `bad`.
bool take_arrival_flag(const std::string& name, const std::string& value, ArrivalSpec& spec,
                       Status& bad);

// A build without Qt runs bench and tune in process only: an error naming
// the flag when `target` is not inproc or predict, or a plot or a payload
// file is asked for; ok otherwise.
Status qt_free_check(const std::string& target, const std::string& plot_out,
                     const std::string& payload_file);

int run_bench(int argc, char** argv, const std::vector<std::string>& args);
std::string bench_help();

}  // namespace batchscope

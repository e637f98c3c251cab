// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Trace CSV: the arrival times `bench --pattern trace` replays (an
// ArrivalSpec's `trace`), read from a file of timestamps or gaps; files are
// read, and their format told, by llm_trace.h.
// Thread-safety: pure functions.

#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace batchscope {

// Parses a trace CSV. One arrival per line; column 1 is read and any further
// columns are ignored; blank lines are skipped. The first non-blank line may be
// a header (skipped when column 1 is not a number). Column 1 holds timestamps
// in microseconds from the run's start (header "timestamp_us", which must then
// be non-decreasing) or inter-arrival gaps in microseconds (header
// "interarrival_us"; the first gap is the offset of the first arrival). With no
// such header, non-decreasing values are timestamps and anything else is gaps.
// Values may have a fraction (rounded to the nanosecond). Errors name the line.
Expected<std::vector<Duration>> parse_trace_csv(std::string_view text);

}  // namespace batchscope

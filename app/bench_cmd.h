#pragma once
// `batchscope bench`: drives a target with an arrival pattern, records the
// run, prints a summary, and exports it (JSON, CSV, Chrome trace, PNG).

#include <string>
#include <vector>

#include "arrivals.h"
#include "status.h"

namespace batchscope {

// Reads one arrival-pattern flag (--pattern, --rate, --duration, --seed, ...)
// into `spec`; false when `name` is not one of them. A bad value sets `bad`.
bool take_arrival_flag(const std::string& name, const std::string& value, ArrivalSpec& spec,
                       Status& bad);

int run_bench(int argc, char** argv, const std::vector<std::string>& args);
std::string bench_help();

}  // namespace batchscope

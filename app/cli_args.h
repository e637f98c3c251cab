// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Command-line flags shared by the subcommands: `--name value` pairs, and the
// serving options every subcommand that runs the engine accepts.
// Thread-safety: plain values.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "batching/synthetic_runner.h"
#include "common/options.h"
#include "common/status.h"

namespace batchscope::cli {

// Flags as given: "--rate 100" -> {"rate": "100"}. Flags named in `switches`
// take no value. Anything else that is not a flag is an error.
Expected<std::map<std::string, std::string>> parse_flags(
    const std::vector<std::string>& args, const std::vector<std::string>& switches = {});

// Reads the serving options (--max-batch-size, --max-wait-ms, --queue-capacity,
// --timeout-ms, --lanes, --strategy, --target-p99-ms) over `base`, removing
// them from `flags`, and validates the result.
Expected<Options> take_options(std::map<std::string, std::string>& flags, Options base = {});

// "--synthetic A_US,C_US[,L_US]" -> the synthetic runner's cost a + c*b + l*ln(b+1).
Expected<SyntheticCost> parse_synthetic(const std::string& text);

Expected<double> parse_number(const std::string& flag, const std::string& text, double lo,
                              double hi);
// parse_number() into `field`, converted to its type; the error otherwise
// (and `field` unchanged).
template <class T>
Status read_number(const std::string& flag, const std::string& text, double lo, double hi,
                   T& field) {
  auto v = parse_number(flag, text, lo, hi);
  if (!v) return v.error();
  field = static_cast<T>(*v);
  return {};
}

// --max-connections N: 1 up to the process's descriptor limit (RLIMIT_NOFILE),
// which the message names when N is above it.
Expected<size_t> parse_max_connections(const std::string& text);

// The help text for the serving options, one flag a line.
std::string options_help();

}  // namespace batchscope::cli

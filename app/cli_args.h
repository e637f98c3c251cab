// SPDX-License-Identifier: GPL-3.0-or-later
// Command-line flags shared by the subcommands: `--name value` pairs, numbers
// in a range, and the serving options every subcommand that runs an engine
// accepts.
// Thread-safety: plain values.

#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

// A flag read into a field as it is given: text, a number in [lo, hi]
// converted to the field's type, or a switch (a field set true).
struct FlagField {
  const char* name;
  std::function<Status(const std::string& value)> read;
};
inline FlagField text(const char* name, std::string& field) {
  return {name, [&field](const std::string& v) {
            field = v;
            return Status::Ok();
          }};
}
template <class T>
FlagField number(const char* name, double lo, double hi, T& field) {
  return {name, [name, lo, hi, &field](const std::string& v) {
            return read_number(name, v, lo, hi, field);
          }};
}
// A whole number in [lo, hi]; a fraction is refused by name.
FlagField whole(const char* name, double lo, double hi, int& field);
inline FlagField on(const char* name, bool& field) {
  return {name, [&field](const std::string&) {
            field = true;
            return Status::Ok();
          }};
}
// Reads each of `fields` that `flags` holds and removes it; the first bad
// value's error.
Status take_fields(std::map<std::string, std::string>& flags,
                   std::initializer_list<FlagField> fields);
// An error naming the first flag left in `flags` as unknown to `command`
// (see batchscope COMMAND --help); ok when none is left.
Status no_flags_left(const std::map<std::string, std::string>& flags, const std::string& command);

// --max-connections N: 1 up to the process's descriptor limit (RLIMIT_NOFILE),
// which the message names when N is above it.
Expected<size_t> parse_max_connections(const std::string& text);
FlagField max_connections(size_t& field);

// "16,64,256": whole numbers in [lo, hi], at least one; the error quotes
// the item and names `flag`.
Expected<std::vector<uint32_t>> parse_counts(const std::string& flag, const std::string& text,
                                             double lo, double hi);

// The help text for the serving options, one flag a line.
std::string options_help();

}  // namespace batchscope::cli

// SPDX-License-Identifier: GPL-3.0-or-later
// The traffic flags `bench` and `tune` share: the arrival pattern and its
// parameters (--pattern, --rate, --trace, --duration, ...), and a generative
// model's request lengths (--prompt-len, --max-tokens, --lengths-trace, or
// the lengths of a language-model --trace).
// Thread-safety: plain values.

#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "traffic/arrivals.h"
#include "traffic/gen_workload_spec.h"

namespace batchscope {

// Reads one arrival-pattern flag into `spec`; false when `name` is not one of
// them. A bad value sets `bad`. --trace reads any format llm_trace.h knows
// (its arrivals; lengths are take_gen_length_flag's business).
bool take_arrival_flag(const std::string& name, const std::string& value, ArrivalSpec& spec,
                       Status& bad);
// --trace without --pattern means --pattern trace.
void trace_sets_pattern(const std::map<std::string, std::string>& flags, ArrivalSpec& spec);

// A generative model's request lengths: reads --prompt-len, --max-tokens,
// --lengths-trace, and --trace (its arrivals into `spec`, its lengths into
// `lengths`); false when `name` is none of them.
bool take_gen_length_flag(const std::string& name, const std::string& value,
                          GenWorkloadSpec& lengths, ArrivalSpec& spec, Status& bad);
// After every flag is read: refuses length flags beside a trace that gives
// each request's lengths, naming both.
Status check_gen_lengths(const std::map<std::string, std::string>& flags,
                         const GenWorkloadSpec& lengths);

}  // namespace batchscope

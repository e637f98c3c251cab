// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The traffic flags `bench` and `tune` share: the arrival pattern and its
// parameters (--pattern, --rate, --trace, --duration, ...), and a generative
// model's request lengths (--prompt-len, --max-tokens, --lengths-trace, or
// the lengths of a language-model --trace).
// Thread-safety: plain values.

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "traffic/arrivals.h"
#include "traffic/gen_workload.h"

namespace batchscope {

// Reads one arrival-pattern flag into `spec`; false when `name` is not one of
// them. A bad value sets `bad`. --trace reads any format llm_trace.h knows
// (its arrivals; lengths are GenLengthFlags' business).
bool take_arrival_flag(const std::string& name, const std::string& value, ArrivalSpec& spec,
                       Status& bad);
// --trace without --pattern means --pattern trace.
void trace_sets_pattern(const std::map<std::string, std::string>& flags, ArrivalSpec& spec);

// A generative model's request lengths: drawn from two distributions, or
// replayed from --lengths-trace or from a language-model --trace.
struct GenLengthFlags {
  LengthDist prompt;               // default uniform:16,64
  LengthDist max_tokens;           // default lognormal:32,1,512
  std::vector<GenLengths> replay;  // rows to replay in order; empty: draw
  std::string trace_format;        // of --trace ("azure", ...); empty when none

  GenLengthFlags();
  // True when the lengths come from a language-model trace.
  bool from_trace() const { return !trace_format.empty() && trace_format != "timestamps"; }
  // What the requests are, for the run's record: "prompt uniform:16,64, max_tokens ...",
  // "azure trace of 120 requests", "lengths trace of 40 rows".
  std::string describe() const;
  GenWorkload workload(uint64_t seed) const;
};

// Reads --prompt-len, --max-tokens, --lengths-trace, and --trace (its arrivals
// into `spec`, its lengths into `lengths`); false when `name` is none of them.
bool take_gen_length_flag(const std::string& name, const std::string& value,
                          GenLengthFlags& lengths, ArrivalSpec& spec, Status& bad);
// After every flag is read: refuses length flags beside a trace that gives
// each request's lengths, naming both.
Status check_gen_lengths(const std::map<std::string, std::string>& flags,
                         const GenLengthFlags& lengths);

}  // namespace batchscope

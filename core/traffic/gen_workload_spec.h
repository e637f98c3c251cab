// SPDX-License-Identifier: GPL-3.0-or-later
// What a generative workload's requests are before a seed draws them:
// prompt and output lengths from two distributions, or rows replayed in
// order (a lengths trace, or the lengths of a language-model trace). bench
// and tune read it from their flags; GenWorkload makes the requests.
// Thread-safety: a plain value.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traffic/gen_workload.h"

namespace batchscope {

struct GenWorkloadSpec {
  LengthDist prompt;               // default uniform:16,64
  LengthDist max_tokens;           // default lognormal:32,1,512
  std::vector<GenLengths> replay;  // rows to replay in order; empty: draw
  std::string trace_format;        // of the trace ("azure", ...); empty when none

  GenWorkloadSpec();
  // True when the lengths come from a language-model trace.
  bool from_trace() const { return !trace_format.empty() && trace_format != "timestamps"; }
  // What the requests are, for the run's record: "prompt uniform:16,64, max_tokens ...",
  // "azure trace of 120 requests", "lengths trace of 40 rows".
  std::string describe() const;
  GenWorkload workload(uint64_t seed) const;
};

}  // namespace batchscope

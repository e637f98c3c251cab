// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/gen_workload_spec.h"

namespace batchscope {

GenWorkloadSpec::GenWorkloadSpec()
    : prompt(*LengthDist::parse("uniform:16,64", "--prompt-len")),
      max_tokens(*LengthDist::parse("lognormal:32,1,512", "--max-tokens")) {}

std::string GenWorkloadSpec::describe() const {
  if (from_trace())
    return trace_format + " trace of " + std::to_string(replay.size()) + " requests";
  if (!replay.empty()) return "lengths trace of " + std::to_string(replay.size()) + " rows";
  return "prompt " + prompt.describe() + ", max_tokens " + max_tokens.describe();
}

GenWorkload GenWorkloadSpec::workload(uint64_t seed) const {
  return replay.empty() ? GenWorkload(prompt, max_tokens, seed) : GenWorkload(replay, seed);
}

}  // namespace batchscope

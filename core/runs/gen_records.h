// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The records the iteration-level engine (core/generation) emits for each
// step, kept here beside the request-level engine's (records.h) so that
// runs, the history among them, can keep them.
// Thread-safety: plain values.

#include <cstdint>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace batchscope {

// One step of the engine, for the step inspector and the metrics.
struct StepRecord {
  uint64_t step = 0;  // counted per lane, from 1
  uint32_t lane = 0;  // the engine lane that ran it
  TimePoint start{};
  TimePoint end{};
  uint32_t decodes = 0;         // sequences that decoded one token
  uint32_t prefill_tokens = 0;  // prompt tokens prefilled
  uint32_t prefills = 0;        // prefill chunks
  uint32_t context_tokens = 0;  // tokens already cached that its sequences read
  uint32_t output_tokens = 0;   // tokens sampled and kept (an end-of-sequence token is not)
  uint32_t running = 0;         // sequences holding cache after the step
  uint32_t waiting = 0;         // admitted requests not yet running
  uint32_t blocks_used = 0;     // cache blocks held after the step
  uint32_t blocks_total = 0;
  uint32_t preempted = 0;  // sequences preempted at this step
  uint32_t finished = 0;   // sequences that ended at this step
  // The sequences of this step: id, and prefill tokens (0: a decode).
  std::vector<std::pair<uint64_t, uint32_t>> seqs;
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The step planner of the generation engine: a pure function of the
// sequences running, the requests waiting, the free cache blocks, the time
// and the options, answering what the next step runs.
//
// continuous (iteration-level): every step
//   1. each decoding sequence, oldest first, decodes one token; when it needs
//      a cache block and none is free, the newest running sequence is
//      preempted (its blocks freed, requeued for recompute), down to itself;
//   2. prompts partly prefilled continue, oldest first, in chunks that fit
//      the token budget left and the free blocks;
//   3. unless the step had to preempt, waiting requests join in arrival
//      order while fewer than max_num_seqs run and budget and blocks
//      remain; a prompt longer than the budget left is prefilled in chunks
//      over the next steps.
// continuous without chunked prefill (Options::chunked_prefill off, as vLLM's
//   scheduler without it): a step either prefills or decodes. A prompt
//   longer than the whole budget, once begun, goes on alone in chunks; else
//   waiting requests join in arrival order while their whole prompts fit the
//   budget and the free blocks (and fewer than max_num_seqs run), and the
//   step prefills only them; when none can join, every running sequence
//   decodes, preempting as above.
// static (request-level): when nothing runs, a batch of up to max_num_seqs
//   is admitted once max_num_seqs wait or the oldest has waited max_wait_us
//   (else: wake then); then its sequences run as above, but nothing joins
//   until every one of them has finished.
// The token budget (max_num_batched_tokens) counts a decode as one token and
// a prefill chunk as its length; it is never exceeded.
// Thread-safety: a pure function.

#include <cstdint>
#include <span>
#include <vector>

#include "common/clock.h"
#include "common/options.h"

namespace batchscope {

struct RunningSeq {
  uint64_t id = 0;
  uint32_t to_prefill = 0;  // tokens whose keys and values are not cached yet
  uint32_t cached = 0;      // positions in the cache
  uint32_t blocks = 0;      // cache blocks it holds
};

struct WaitingSeq {
  uint64_t id = 0;
  uint32_t to_prefill = 0;  // its prompt (with any tokens to recompute)
  TimePoint arrival{};
};

struct PlanInput {
  std::span<const RunningSeq> running;  // in admission order, oldest first
  std::span<const WaitingSeq> waiting;  // in arrival order (requeued first)
  uint32_t free_blocks = 0;
  uint32_t block_size = 16;
  TimePoint now{};
};

struct PlanItem {
  enum class Kind : uint8_t { kDecode, kPrefill };
  uint64_t id = 0;
  Kind kind = Kind::kDecode;
  uint32_t tokens = 1;      // positions it runs: 1 for a decode, a prefill chunk's length
  uint32_t new_blocks = 0;  // blocks it takes at this step
  bool prefill() const { return kind == Kind::kPrefill; }
};

struct Plan {
  std::vector<uint64_t> preempt;  // running sequences to give up, newest first
  std::vector<PlanItem> items;    // running sequences first (admission order), then joins
  uint32_t admitted = 0;          // waiting requests, from the head, that join (the last items)
  TimePoint wake = kNever;        // nothing to run now: plan again at this time (or on news)
  bool empty() const { return items.empty() && preempt.empty(); }
};

// Blocks holding `positions` positions.
inline uint32_t blocks_for(uint32_t positions, uint32_t block_size) {
  return (positions + block_size - 1) / block_size;
}

Plan plan_step(const PlanInput& in, const Options& o);

}  // namespace batchscope

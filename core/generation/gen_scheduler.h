// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation engine's state and its step, without threads: the waiting
// queue, the running sequences, the cache's block pool, and step(), which
// plans (gen_planner.h), runs the model once, samples, streams the new text
// and finishes sequences. GenEngine runs it on a thread; tests drive it
// step by step on a manual clock.
//
// A sequence holds cache blocks from its first prefill chunk to its end. A
// preempted one gives its blocks up and goes back to the head of the queue
// with its output so far; when it runs again its prompt and that output are
// prefilled anew (recomputed), so its text goes on as if nothing happened.
// A sequence ends on the end-of-sequence token (unless ignore_eos), a stop
// string, max_tokens, a full context, cancel(), its deadline, or a failed
// step (every sequence of that step fails with the model's message).
//
// Thread-safety: none; one thread at a time. Callbacks run inside step().

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/options.h"
#include "generation/gen_planner.h"
#include "generation/gen_text.h"
#include "generation/gen_types.h"
#include "generation/lm_runner.h"

namespace batchscope {

struct StepOutcome {
  bool ran = false;         // a step ran (a record is in `step`)
  TimePoint wake = kNever;  // !ran: when something is next due (a static batch, a deadline)
  StepRecord step;
  std::vector<GenRecord> finished;  // requests that ended (texts left out)
};

class GenScheduler {
 public:
  GenScheduler(LmRunner& runner, Clock& clock);
  ~GenScheduler();

  // Checks a request against the model (prompt ids, context length); the
  // error names what is wrong and quotes the numbers sent.
  Status check(const GenRequest& r) const;
  // Queues a checked request that arrived at `arrival`; it must finish by `deadline`.
  void add(uint64_t id, GenRequest r, TimePoint arrival, TimePoint deadline);
  // Ends the request at the next step (its on_done says kCancelled).
  void cancel(uint64_t id);
  // Ends every request now with kError and `message` (the engine is stopping).
  std::vector<GenRecord> fail_all(const std::string& message);

  // Expires, plans and runs one step under `o`.
  StepOutcome step(const Options& o);

  size_t waiting() const { return waiting_.size(); }
  size_t running() const { return running_.size(); }
  uint32_t blocks_used() const { return total_blocks_ - static_cast<uint32_t>(free_.size()); }
  uint32_t blocks_total() const { return total_blocks_; }
  const LmInfo& info() const { return runner_.info(); }

 private:
  struct Sequence;
  using SeqPtr = std::unique_ptr<Sequence>;

  void expire(TimePoint now, StepOutcome& out);
  void finish(Sequence& s, FinishReason reason, TimePoint when, StepOutcome* out);
  void preempt(uint64_t id);
  // The model's next-token logits for `s` arrived at `when`; true if a
  // token was added to its output.
  bool take_token(Sequence& s, std::span<const float> logits, TimePoint when);

  LmRunner& runner_;
  Clock& clock_;
  uint32_t total_blocks_ = 0;
  std::vector<int32_t> free_;  // free cache blocks
  std::deque<SeqPtr> waiting_;
  std::vector<SeqPtr> running_;  // admission order
  std::unordered_map<uint64_t, Sequence*> by_id_;
  std::vector<std::pair<float, int32_t>> scratch_;
  uint64_t steps_ = 0;
};

}  // namespace batchscope

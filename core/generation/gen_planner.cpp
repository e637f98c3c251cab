// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/gen_planner.h"

#include <algorithm>

namespace batchscope {

namespace {

struct Planning {
  const PlanInput& in;
  Plan plan;
  uint32_t budget;
  uint32_t free;
  std::vector<const RunningSeq*> live;  // not preempted, admission order

  // Gives up the newest live sequence.
  void preempt_newest() {
    const RunningSeq* s = live.back();
    live.pop_back();
    free += s->blocks;
    plan.preempt.push_back(s->id);
  }

  // The largest chunk of a prompt with `to_prefill` tokens left, `cached`
  // positions cached and `blocks` blocks held, that the budget and the free
  // blocks allow.
  uint32_t chunk(uint32_t to_prefill, uint32_t cached, uint32_t blocks) const {
    const uint64_t room = uint64_t{blocks + free} * in.block_size - cached;
    return static_cast<uint32_t>(std::min<uint64_t>({to_prefill, budget, room}));
  }

  void add(uint64_t id, PlanItem::Kind kind, uint32_t tokens, uint32_t cached, uint32_t blocks) {
    const uint32_t need = blocks_for(cached + tokens, in.block_size) - blocks;
    free -= need;
    budget -= tokens;
    plan.items.push_back({.id = id, .kind = kind, .tokens = tokens, .new_blocks = need});
  }

  void decodes() {
    for (size_t i = 0; i < live.size(); ++i) {
      const RunningSeq* s = live[i];
      if (s->to_prefill > 0) continue;
      if (budget == 0) return;  // more running than the budget (lowered live): they wait a step
      const uint32_t need = blocks_for(s->cached + 1, in.block_size) - s->blocks;
      while (need > free && live.size() > i + 1) preempt_newest();
      if (need > free) {
        preempt_newest();  // itself: nothing newer is left to give up
        return;
      }
      add(s->id, PlanItem::Kind::kDecode, 1, s->cached, s->blocks);
    }
  }

  void prefills() {
    for (const RunningSeq* s : live) {
      if (s->to_prefill == 0) continue;
      const uint32_t n = chunk(s->to_prefill, s->cached, s->blocks);
      if (n > 0) add(s->id, PlanItem::Kind::kPrefill, n, s->cached, s->blocks);
    }
  }

  // Without chunked prefill: waiting prompts join whole, from the head, while
  // they fit; a prompt longer than the whole budget joins alone, its first
  // chunk now (it would never fit whole).
  void whole_joins(const Options& o) {
    for (const WaitingSeq& w : in.waiting) {
      if (live.size() + plan.admitted >= o.max_num_seqs) return;
      const uint32_t n = chunk(w.to_prefill, 0, 0);
      const bool alone = w.to_prefill > o.max_num_batched_tokens && plan.items.empty();
      if (n == 0 || (n < w.to_prefill && !alone)) return;
      ++plan.admitted;
      add(w.id, PlanItem::Kind::kPrefill, n, 0, 0);
      if (alone) return;
    }
  }

  // Waiting requests join from the head while they fit.
  void joins(const Options& o, bool need_work) {
    for (const WaitingSeq& w : in.waiting) {
      if (live.size() + plan.admitted >= o.max_num_seqs) return;
      const uint32_t n = chunk(w.to_prefill, 0, 0);
      if (n == 0 && need_work) return;
      ++plan.admitted;
      if (n > 0) add(w.id, PlanItem::Kind::kPrefill, n, 0, 0);
    }
  }
};

}  // namespace

Plan plan_step(const PlanInput& in, const Options& o) {
  Planning p{
      .in = in, .plan = {}, .budget = o.max_num_batched_tokens, .free = in.free_blocks, .live = {}};
  p.live.reserve(in.running.size());
  for (const RunningSeq& s : in.running) p.live.push_back(&s);

  if (!o.chunked_prefill && o.scheduling == Scheduling::kContinuous) {
    // A step prefills (a prompt longer than the budget, going on alone; else
    // the waiting prompts that fit whole) or, when none can, decodes.
    p.prefills();
    if (p.plan.items.empty()) p.whole_joins(o);
    if (p.plan.items.empty()) p.decodes();
    if (p.plan.items.empty() && p.plan.admitted == 0 && !p.live.empty() && p.plan.preempt.empty()) {
      p.preempt_newest();
    }
    return std::move(p.plan);
  }
  p.decodes();
  p.prefills();
  if (!p.plan.preempt.empty()) {
    // The cache ran out at this step: nothing new joins until it has room.
  } else if (o.scheduling == Scheduling::kContinuous) {
    p.joins(o, true);
  } else if (in.running.empty() && !in.waiting.empty()) {
    // A static batch forms when it is full or its oldest has waited long
    // enough; its members all join now, prefilled as budget allows.
    const bool full = in.waiting.size() >= o.max_num_seqs;
    const TimePoint due = in.waiting.front().arrival + microseconds(o.max_wait_us);
    if (full || in.now >= due) {
      p.joins(o, false);
    } else {
      p.plan.wake = due;
    }
  }
  // Sequences that hold blocks but cannot move (their prefills found no free
  // block): give up the newest, so the older ones go on at the next step.
  if (p.plan.items.empty() && p.plan.admitted == 0 && !p.live.empty()) p.preempt_newest();
  return std::move(p.plan);
}

}  // namespace batchscope

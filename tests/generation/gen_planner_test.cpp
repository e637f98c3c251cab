// SPDX-License-Identifier: GPL-3.0-or-later
// The step planner: exact decisions on hand-built states.
#include <gtest/gtest.h>

#include "generation/gen_planner.h"

namespace batchscope {
namespace {

const TimePoint t0 = TimePoint(std::chrono::seconds(100));

Options opts(Scheduling s, uint32_t seqs, uint32_t budget, int64_t wait_us = 1000) {
  Options o;
  o.scheduling = s;
  o.max_num_seqs = seqs;
  o.max_num_batched_tokens = budget;
  o.max_wait_us = wait_us;
  return o;
}

// A sequence past its prefill: `cached` positions in the blocks they fill.
RunningSeq decoding(uint64_t id, uint32_t cached) {
  return {id, 0, cached, blocks_for(cached, 16)};
}

Plan plan(std::vector<RunningSeq> r, std::vector<WaitingSeq> w, uint32_t free, const Options& o,
          TimePoint now = t0) {
  return plan_step({r, w, free, 16, now}, o);
}

TEST(GenPlanner, AWaitingRequestJoinsTheRunningDecodesAtOnce) {
  const Plan p = plan({decoding(1, 20)}, {{2, 5, t0}}, 10, opts(Scheduling::kContinuous, 8, 64));
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[0].id, 1u);
  EXPECT_FALSE(p.items[0].prefill());  // a decode, of one position
  EXPECT_EQ(p.items[0].tokens, 1u);
  EXPECT_EQ(p.items[1].id, 2u);
  EXPECT_EQ(p.items[1].tokens, 5u);
  EXPECT_EQ(p.items[1].new_blocks, 1u);
  EXPECT_EQ(p.admitted, 1u);
  EXPECT_TRUE(p.preempt.empty());
}

TEST(GenPlanner, ALongPromptIsChunkedToTheBudgetLeftAfterTheDecodes) {
  // Three decodes take 3 of 8 tokens; the 20-token prompt gets 5 now.
  const auto o = opts(Scheduling::kContinuous, 8, 8);
  Plan p = plan({decoding(1, 3), decoding(2, 4), decoding(3, 5)}, {{4, 20, t0}}, 100, o);
  ASSERT_EQ(p.items.size(), 4u);
  EXPECT_EQ(p.items[3].tokens, 5u);
  // Next step it continues from where it got to, before anything new joins.
  p = plan({decoding(1, 4), decoding(2, 5), decoding(3, 6), {4, 15, 5, 1}}, {{5, 3, t0}}, 100, o);
  ASSERT_EQ(p.items.size(), 4u);
  EXPECT_EQ(p.items[3].id, 4u);
  EXPECT_EQ(p.items[3].tokens, 5u);
  EXPECT_EQ(p.admitted, 0u);
}

TEST(GenPlanner, TheBudgetAndTheSequenceCapAreNeverExceeded) {
  const auto o = opts(Scheduling::kContinuous, 3, 10);
  const Plan p = plan({decoding(1, 3)}, {{2, 4, t0}, {3, 4, t0}, {4, 4, t0}}, 100, o);
  uint32_t tokens = 0;
  for (const PlanItem& i : p.items) tokens += i.tokens;
  EXPECT_EQ(tokens, 9u);      // 1 decode + two prompts of 4
  EXPECT_EQ(p.admitted, 2u);  // three running at most: the third prompt waits
  ASSERT_EQ(p.items.size(), 3u);
  EXPECT_EQ(p.items[2].tokens, 4u);
}

TEST(GenPlanner, WithoutAFreeBlockTheNewestRunningSequenceIsPreempted) {
  // Sequence 1 needs a new block (16 cached), none is free: 2, the newest, goes.
  const auto o = opts(Scheduling::kContinuous, 8, 64);
  const Plan p = plan({{1, 0, 16, 1}, {2, 0, 5, 1}}, {}, 0, o);
  ASSERT_EQ(p.preempt.size(), 1u);
  EXPECT_EQ(p.preempt[0], 2u);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].id, 1u);
  EXPECT_EQ(p.items[0].new_blocks, 1u);
}

TEST(GenPlanner, TheNewestPreemptsItselfWhenNothingNewerIsLeft) {
  const auto o = opts(Scheduling::kContinuous, 8, 64);
  const Plan p = plan({{1, 0, 5, 1}, {2, 0, 32, 2}}, {}, 0, o);
  // 1 fits in its block; 2 needs a third block and nothing newer can give one.
  ASSERT_EQ(p.preempt.size(), 1u);
  EXPECT_EQ(p.preempt[0], 2u);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].id, 1u);
}

TEST(GenPlanner, APromptJoinsOnlyWithTheBlocksItsChunkNeeds) {
  const auto o = opts(Scheduling::kContinuous, 8, 64);
  const Plan p = plan({}, {{1, 40, t0}}, 2, o);  // 2 free blocks hold 32 positions
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].tokens, 32u);
  EXPECT_EQ(p.items[0].new_blocks, 2u);
}

TEST(GenPlanner, StuckPrefillsGiveUpTheNewest) {
  const auto o = opts(Scheduling::kContinuous, 8, 64);
  const Plan p = plan({{1, 10, 16, 1}, {2, 10, 16, 1}}, {}, 0, o);
  EXPECT_TRUE(p.items.empty());
  ASSERT_EQ(p.preempt.size(), 1u);
  EXPECT_EQ(p.preempt[0], 2u);
}

TEST(GenPlanner, StaticWaitsForAFullBatchOrTheOldestsDeadline) {
  const auto o = opts(Scheduling::kStatic, 4, 64, 2000);
  Plan p = plan({}, {{1, 3, t0}, {2, 3, t0 + microseconds(500)}}, 100, o, t0 + microseconds(1000));
  EXPECT_TRUE(p.items.empty());
  EXPECT_EQ(p.wake, t0 + microseconds(2000));
  p = plan({}, {{1, 3, t0}, {2, 3, t0}}, 100, o, t0 + microseconds(2000));
  EXPECT_EQ(p.admitted, 2u);
  EXPECT_EQ(p.items.size(), 2u);
  p = plan({}, {{1, 3, t0}, {2, 3, t0}, {3, 3, t0}, {4, 3, t0}, {5, 3, t0}}, 100, o, t0);
  EXPECT_EQ(p.admitted, 4u);  // full: at once, max_num_seqs of them
}

TEST(GenPlanner, StaticAdmitsNothingWhileItsBatchRuns) {
  const auto o = opts(Scheduling::kStatic, 4, 64, 0);
  const Plan p = plan({decoding(1, 7)}, {{2, 3, t0}}, 100, o, t0 + std::chrono::seconds(5));
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].id, 1u);
  EXPECT_EQ(p.admitted, 0u);
}

TEST(GenPlanner, AStaticBatchJoinsWholeEvenPastTheBudget) {
  // Budget 8: the first prompt's chunk takes it all; the others join with no work yet.
  const auto o = opts(Scheduling::kStatic, 4, 8, 0);
  const Plan p = plan({}, {{1, 6, t0}, {2, 6, t0}, {3, 6, t0}}, 100, o, t0);
  EXPECT_EQ(p.admitted, 3u);
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[0].tokens, 6u);
  EXPECT_EQ(p.items[1].tokens, 2u);
}

TEST(GenPlanner, ContinuousJoinsStopAtTheFirstThatCannotStart) {
  const auto o = opts(Scheduling::kContinuous, 8, 4);
  const Plan p = plan({}, {{1, 4, t0}, {2, 1, t0}}, 100, o, t0);
  EXPECT_EQ(p.admitted, 1u);  // FIFO: 2 does not pass 1's place, and the budget is spent
}

TEST(GenPlanner, WithoutChunkedPrefillAStepPrefillsWholePromptsOrDecodes) {
  Options o = opts(Scheduling::kContinuous, 8, 32);
  o.chunked_prefill = false;
  // Two prompts of 12 fit the budget of 32 whole; the third (12 more) does
  // not, and nothing decodes beside them.
  Plan p = plan({decoding(1, 20)}, {{2, 12, t0}, {3, 12, t0}, {4, 12, t0}}, 100, o);
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.admitted, 2u);
  EXPECT_TRUE(p.items[0].prefill() && p.items[1].prefill());
  EXPECT_EQ(p.items[0].tokens + p.items[1].tokens, 24u);
  // A prompt too long for what is free waits, and the running decode.
  p = plan({decoding(1, 20), decoding(2, 12)}, {{4, 40, t0}}, 100, o);
  ASSERT_EQ(p.items.size(), 1u);  // 40 > 32: it joins alone, its first chunk
  EXPECT_EQ(p.items[0].id, 4u);
  EXPECT_EQ(p.items[0].tokens, 32u);
  // The long prompt goes on alone at the next step.
  p = plan({decoding(1, 20), decoding(2, 12), {4, 8, 32, 2}}, {{5, 4, t0}}, 100, o);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].id, 4u);
  EXPECT_EQ(p.items[0].tokens, 8u);
  EXPECT_EQ(p.admitted, 0u);
  // With no room for a whole prompt, every running sequence decodes.
  p = plan({decoding(1, 20), decoding(2, 12)}, {{6, 20, t0}}, 1, o);
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_FALSE(p.items[0].prefill());
  EXPECT_FALSE(p.items[1].prefill());
  EXPECT_EQ(p.admitted, 0u);
  // The same state with chunked prefill decodes and prefills in one step.
  o.chunked_prefill = true;
  p = plan({decoding(1, 20)}, {{2, 12, t0}}, 100, o);
  EXPECT_EQ(p.items.size(), 2u);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The generation scheduler driven step by step on a manual clock, over the
// synthetic model whose text depends on every token before it.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "generation/gen_scheduler.h"
#include "generation/synthetic_lm.h"

namespace batchscope {
namespace {

std::vector<int32_t> sched_tokens(std::string_view s) {
  std::vector<int32_t> t;
  for (char c : s) t.push_back(static_cast<unsigned char>(c));
  return t;
}

Options gen_options(Scheduling s, uint32_t seqs, uint32_t budget, int64_t wait_us = 0) {
  Options o;
  o.scheduling = s;
  o.max_num_seqs = seqs;
  o.max_num_batched_tokens = budget;
  o.max_wait_us = wait_us;
  return o;
}

// A model that fails the steps a test chooses.
class FailingLm final : public LmRunner {
 public:
  explicit FailingLm(LmRunner& inner) : inner_(inner) {}
  const LmInfo& info() const override { return inner_.info(); }
  Expected<LmLogits> step(const LmStep& s) override {
    if (fail_next) {
      fail_next = false;
      return Error{ErrorCode::kModelError, "out of memory in layer 3"};
    }
    return inner_.step(s);
  }
  bool fail_next = false;

 private:
  LmRunner& inner_;
};

struct Harness {
  ManualClock clock;
  SyntheticLm lm;
  FailingLm failing{lm};
  GenScheduler sched{failing, clock};
  std::map<uint64_t, std::string> streamed;
  std::map<uint64_t, int> done_calls;
  std::map<uint64_t, GenRecord> records;
  std::vector<StepRecord> steps;
  uint64_t next_id = 1;

  static SyntheticLmOptions model(int blocks, int context, uint32_t eos_every, ManualClock* c) {
    SyntheticLmOptions o;
    o.num_blocks = blocks;
    o.context_length = context;
    o.eos_every = eos_every;
    o.step_us = 1000;
    o.token_us = 10;
    o.spend = [c](Duration d) { c->advance(d); };
    return o;
  }
  explicit Harness(int blocks = 256, int context = 1024, uint32_t eos_every = 0)
      : lm(model(blocks, context, eos_every, &clock)) {}

  uint64_t add(std::string_view prompt, uint32_t max_tokens, std::vector<std::string> stop = {},
               Duration timeout = std::chrono::seconds(60)) {
    GenRequest r;
    r.prompt = sched_tokens(prompt);
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0;
    r.stop = std::move(stop);
    const uint64_t id = next_id++;
    r.on_text = [this, id](std::string_view text, uint32_t, TimePoint) { streamed[id] += text; };
    r.on_done = [this, id](const GenRecord& rec) {
      ++done_calls[id];
      records[id] = rec;
    };
    EXPECT_TRUE(sched.check(r).ok()) << sched.check(r).message();
    sched.add(id, std::move(r), clock.now(), clock.now() + timeout);
    return id;
  }
  StepOutcome step(const Options& o) {
    StepOutcome out = sched.step(o);
    if (out.step.step > 0) steps.push_back(out.step);
    return out;
  }
  void run(const Options& o, int max_steps = 100000) {
    for (int i = 0; i < max_steps && (sched.waiting() + sched.running()) > 0; ++i) {
      StepOutcome out = step(o);
      if (!out.ran) clock.advance_to(out.wake);
    }
  }
  // The greedy text the model gives after `prompt`, `n` tokens long.
  std::string expected(std::string_view prompt, uint32_t n) {
    std::vector<int32_t> h = sched_tokens(prompt);
    std::string out;
    for (uint32_t i = 0; i < n; ++i) {
      const int32_t t = lm.next_after(h);
      if (t == lm.info().eos_token) break;
      h.push_back(t);
      out.push_back(static_cast<char>(t));
    }
    return out;
  }
};

TEST(GenScheduler, AWaitingRequestJoinsAtTheNextStep) {
  Harness h;
  const auto o = gen_options(Scheduling::kContinuous, 8, 64);
  const uint64_t a = h.add("In the beginning", 20);
  h.step(o);
  h.step(o);
  const uint64_t b = h.add("And God said", 5);
  const StepOutcome out = h.step(o);
  ASSERT_EQ(out.step.seqs.size(), 2u);
  EXPECT_EQ(out.step.seqs[0], std::make_pair(a, 0u));   // a decodes
  EXPECT_EQ(out.step.seqs[1], std::make_pair(b, 12u));  // b's whole prompt joins
  EXPECT_EQ(out.step.decodes, 1u);
  EXPECT_EQ(out.step.prefill_tokens, 12u);
}

TEST(GenScheduler, AShortRequestLeavesWithoutWaitingForALongOne) {
  Harness h;
  const auto o = gen_options(Scheduling::kContinuous, 8, 64);
  const uint64_t longer = h.add("long", 60);
  const uint64_t shorter = h.add("short", 3);
  h.run(o);
  EXPECT_EQ(h.records[shorter].output_tokens, 3u);
  EXPECT_EQ(h.records[longer].output_tokens, 60u);
  EXPECT_LT(h.records[shorter].finished, h.records[longer].finished);
  EXPECT_EQ(h.records[shorter].reason, FinishReason::kLength);
  // Prefill with the first token, then two decodes: three steps.
  EXPECT_EQ(h.records[shorter].finished, h.steps[2].end);
}

TEST(GenScheduler, StaticModeNeverJoinsARunningBatch) {
  Harness h;
  const auto o = gen_options(Scheduling::kStatic, 8, 64);
  const uint64_t a = h.add("long", 30);
  h.step(o);
  const uint64_t b = h.add("late", 2);
  h.run(o);
  EXPECT_GE(h.records[b].admitted, h.records[a].finished);
  for (const StepRecord& s : h.steps) {
    for (const auto& [id, n] : s.seqs) {
      if (s.end <= h.records[a].finished) EXPECT_EQ(id, a) << "step " << s.step;
    }
  }
}

TEST(GenScheduler, ALongPromptIsPrefilledInChunksAndGivesTheSameText) {
  Harness h;
  const std::string prompt(40, 'x');
  const auto o = gen_options(Scheduling::kContinuous, 4, 16);
  const uint64_t a = h.add(prompt, 5);
  h.run(o);
  ASSERT_GE(h.steps.size(), 3u);
  EXPECT_EQ(h.steps[0].prefill_tokens, 16u);
  EXPECT_EQ(h.steps[1].prefill_tokens, 16u);
  EXPECT_EQ(h.steps[2].prefill_tokens, 8u);
  EXPECT_EQ(h.records[a].first_token, h.steps[2].end);
  EXPECT_EQ(h.records[a].text, h.expected(prompt, 5));
}

// Many requests of mixed lengths through a small cache: every budget holds
// at every step, sequences are preempted and recomputed, and every text is
// what the model gives each prompt alone.
void run_mixed(Scheduling mode, bool check_static) {
  Harness h(/*blocks=*/12, /*context=*/160);
  const auto o = gen_options(mode, 6, 24);
  std::mt19937 rng(5);
  std::map<uint64_t, std::pair<std::string, uint32_t>> asked;
  for (int i = 0; i < 40; ++i) {
    std::string prompt;
    const int len = 1 + static_cast<int>(rng() % 50);
    for (int k = 0; k < len; ++k) prompt.push_back(static_cast<char>('a' + rng() % 26));
    const uint32_t n = 1 + rng() % 60;
    asked[h.add(prompt, n)] = {prompt, n};
    if (i % 3 == 0) h.step(o);
  }
  h.run(o);
  uint64_t preemptions = 0;
  for (const StepRecord& s : h.steps) {
    EXPECT_LE(s.decodes + s.prefill_tokens, 24u) << "step " << s.step;
    EXPECT_LE(s.running, 6u);
    EXPECT_LE(s.blocks_used, 12u);
    preemptions += s.preempted;
  }
  EXPECT_GT(preemptions, 0u) << "the cache was meant to run out";
  for (const auto& [id, ask] : asked) {
    ASSERT_EQ(h.done_calls[id], 1) << id;
    ASSERT_EQ(h.records[id].error, "") << id;
    EXPECT_EQ(h.records[id].text, h.expected(ask.first, ask.second)) << id;
    EXPECT_EQ(h.streamed[id], h.records[id].text) << id;
    EXPECT_EQ(h.records[id].output_tokens, ask.second);
    EXPECT_EQ(h.records[id].gaps.size(), ask.second - 1);
  }
  EXPECT_EQ(h.sched.blocks_used(), 0u);
  if (!check_static) return;
  // Batches do not overlap: whoever was admitted later was admitted after
  // everyone admitted earlier had finished, unless preempted back to the queue.
  for (const auto& [x, rx] : h.records) {
    for (const auto& [y, ry] : h.records) {
      if (ry.admitted > rx.admitted && rx.preemptions == 0) EXPECT_GE(ry.admitted, rx.finished);
    }
  }
}

TEST(GenScheduler, ContinuousKeepsEveryBudgetAndRecomputesPreemptedText) {
  run_mixed(Scheduling::kContinuous, false);
}

TEST(GenScheduler, StaticKeepsEveryBudgetAndItsBatchesApart) {
  run_mixed(Scheduling::kStatic, true);
}

TEST(GenScheduler, CancelEndsTheRequestAndFreesItsBlocks) {
  Harness h;
  const auto o = gen_options(Scheduling::kContinuous, 8, 64);
  const uint64_t a = h.add("a prompt of some length", 50);
  h.step(o);
  h.step(o);
  EXPECT_GT(h.sched.blocks_used(), 0u);
  h.sched.cancel(a);
  h.step(o);
  EXPECT_EQ(h.done_calls[a], 1);
  EXPECT_EQ(h.records[a].reason, FinishReason::kCancelled);
  EXPECT_EQ(h.records[a].output_tokens, 2u);
  EXPECT_EQ(h.sched.blocks_used(), 0u);
  EXPECT_EQ(h.sched.running(), 0u);
}

TEST(GenScheduler, ARequestPastItsDeadlineTimesOut) {
  Harness h;
  const auto o = gen_options(Scheduling::kStatic, 8, 64, /*wait_us=*/5'000'000);
  const TimePoint t = h.clock.now();
  const uint64_t a = h.add("waits", 5, {}, milliseconds(100));
  StepOutcome out = h.step(o);
  EXPECT_FALSE(out.ran);
  EXPECT_EQ(out.wake, t + milliseconds(100));  // the deadline comes before the batch's wait
  h.clock.advance(milliseconds(100));
  h.step(o);
  EXPECT_EQ(h.records[a].reason, FinishReason::kTimedOut);
  EXPECT_EQ(h.records[a].admitted, kNever);
}

TEST(GenScheduler, EndOfSequenceAndStopStringsFinishWithStop) {
  Harness h(256, 1024, /*eos_every=*/7);
  const auto o = gen_options(Scheduling::kContinuous, 8, 64);
  const uint64_t a = h.add("And it came to pass", 200);
  h.run(o);
  EXPECT_EQ(h.records[a].reason, FinishReason::kStop);
  EXPECT_EQ(h.records[a].text, h.expected("And it came to pass", 200));
  EXPECT_LT(h.records[a].output_tokens, 200u);

  Harness s;
  const std::string full = s.expected("abc", 40);
  const std::string stop = full.substr(10, 3);
  const uint64_t b = s.add("abc", 40, {stop});
  s.run(o);
  EXPECT_EQ(s.records[b].reason, FinishReason::kStop);
  EXPECT_EQ(s.records[b].text, full.substr(0, full.find(stop)));
  EXPECT_EQ(s.streamed[b], s.records[b].text);
}

TEST(GenScheduler, AFailedStepFailsItsSequencesAndServingGoesOn) {
  Harness h;
  const auto o = gen_options(Scheduling::kContinuous, 8, 64);
  const uint64_t a = h.add("one", 10);
  const uint64_t b = h.add("two", 10);
  h.step(o);
  h.failing.fail_next = true;
  h.step(o);
  EXPECT_EQ(h.records[a].reason, FinishReason::kError);
  EXPECT_EQ(h.records[a].error, "out of memory in layer 3");
  EXPECT_EQ(h.records[b].reason, FinishReason::kError);
  EXPECT_EQ(h.sched.blocks_used(), 0u);
  const uint64_t c = h.add("three", 4);
  h.run(o);
  EXPECT_EQ(h.records[c].text, h.expected("three", 4));
}

TEST(GenScheduler, RequestsBeyondTheModelAreRefusedByName) {
  Harness h(256, 64);
  GenRequest r;
  EXPECT_EQ(h.sched.check(r).message(), "the prompt is empty; it needs at least one token");
  r.prompt = {65, 300};
  EXPECT_EQ(h.sched.check(r).message(), "prompt token 1 = 300 is not in the vocabulary (0 to 256)");
  r.prompt = sched_tokens("0123456789");
  r.max_tokens = 60;
  EXPECT_EQ(h.sched.check(r).message(),
            "the model's context is 64 tokens, but 70 were asked for (10 in the prompt, "
            "max_tokens = 60)");
}

TEST(GenScheduler, TheSameSeedGivesTheSameSampledText) {
  Harness h;
  const auto o = gen_options(Scheduling::kContinuous, 8, 64);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    GenRequest r;
    r.prompt = sched_tokens("seed");
    r.max_tokens = 30;
    r.sampling.temperature = 1.5;
    r.sampling.seed = i < 2 ? 11 : 12;
    const uint64_t id = h.next_id++;
    r.on_done = [&h, id](const GenRecord& rec) { h.records[id] = rec; };
    h.sched.add(id, std::move(r), h.clock.now(), kNever);
    ids.push_back(id);
  }
  h.run(o);
  EXPECT_EQ(h.records[ids[0]].text, h.records[ids[1]].text);
  EXPECT_EQ(h.records[ids[0]].output_tokens, 30u);
}

}  // namespace
}  // namespace batchscope

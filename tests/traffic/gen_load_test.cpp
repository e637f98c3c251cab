// SPDX-License-Identifier: GPL-3.0-or-later
// Generation workloads, the load driver over a target that answers at once,
// the run summary on hand-built runs, and the metrics windows.
#include <gtest/gtest.h>

#include <algorithm>

#include "generation/gen_metrics.h"
#include "traffic/gen_load.h"
#include "traffic/gen_workload.h"

namespace batchscope {
namespace {

TEST(LengthDist, ReadsEachFormAndRefusesOthersByName) {
  auto f = LengthDist::parse("fixed:32", "--max-tokens");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->describe(), "fixed 32");
  auto l = LengthDist::parse("lognormal:32,1,512", "--max-tokens");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->describe(), "lognormal median 32 sigma 1 max 512");
  EXPECT_EQ(LengthDist::parse("gamma:3", "--max-tokens").error().message,
            "--max-tokens: unknown distribution 'gamma'; use fixed:N, uniform:LO,HI or "
            "lognormal:MEDIAN,SIGMA[,MAX]");
  EXPECT_EQ(LengthDist::parse("uniform:9,3", "--prompt-len").error().message,
            "--prompt-len: uniform's low is above its high");
  EXPECT_EQ(LengthDist::parse("fixed:x", "--prompt-len").error().message,
            "--prompt-len: expected a number >= 0, got 'x'");
}

TEST(GenWorkload, DrawsAreSeededBoundedAndShapedAsAsked) {
  const auto prompt = *LengthDist::parse("uniform:4,8", "p");
  const auto tokens = *LengthDist::parse("lognormal:32,1,512", "m");
  GenWorkload a(prompt, tokens, 9), b(prompt, tokens, 9);
  std::vector<uint32_t> m;
  for (int i = 0; i < 20000; ++i) {
    const GenLengths x = a.next(), y = b.next();
    ASSERT_EQ(x.prompt, y.prompt);
    ASSERT_EQ(x.max_tokens, y.max_tokens);
    ASSERT_GE(x.prompt, 4u);
    ASSERT_LE(x.prompt, 8u);
    ASSERT_GE(x.max_tokens, 1u);
    ASSERT_LE(x.max_tokens, 512u);
    m.push_back(x.max_tokens);
  }
  std::sort(m.begin(), m.end());
  EXPECT_NEAR(m[m.size() / 2], 32, 2);  // the median asked for
  EXPECT_EQ(m.back(), 512u);            // the tail reaches the cap
  EXPECT_EQ(a.prompt_text(12).size(), 12u);
}

TEST(GenWorkload, ATraceIsReplayedInOrderAndErrorsNameTheLine) {
  auto t = parse_lengths_csv("prompt_tokens,max_tokens\n10,20\n\n3,400\n");
  ASSERT_TRUE(t.ok());
  GenWorkload w(*t, 1);
  EXPECT_EQ(w.next().max_tokens, 20u);
  EXPECT_EQ(w.next().prompt, 3u);
  EXPECT_EQ(w.next().prompt, 10u);  // cycles
  EXPECT_EQ(parse_lengths_csv("10,20\n7\n").error().message,
            "lengths trace line 2: expected PROMPT_TOKENS,MAX_TOKENS (whole numbers >= 1)");
}

// Answers every request at once with its tokens, on the caller's thread.
class InstantTarget final : public GenTarget {
 public:
  explicit InstantTarget(Clock& c) : clock_(c) {}
  void send(const std::string& prompt, uint32_t max_tokens, Callbacks cb) override {
    prompts.push_back(prompt);
    for (uint32_t i = 0; i < max_tokens; ++i) cb.on_tokens(clock_.now(), 1);
    cb.on_done(true, max_tokens, clock_.now(), "length");
  }
  std::vector<std::string> prompts;

 private:
  Clock& clock_;
};

TEST(GenLoad, EveryScheduledRequestIsSentWithItsLengthsAndRecorded) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kConstant;
  spec.rate = 2000;
  spec.duration_s = 0.02;  // 40 arrivals
  GenWorkload w(*LengthDist::parse("fixed:5", "p"), *LengthDist::parse("uniform:1,4", "m"), 3);
  SteadyClock clock;
  InstantTarget t(clock);
  const GenRun run = run_gen_load(spec, w, t, clock);
  ASSERT_EQ(run.requests.size(), 40u);
  uint64_t tokens = 0;
  for (const GenRequestResult& r : run.requests) {
    EXPECT_TRUE(r.done && r.ok);
    EXPECT_EQ(r.output_tokens, r.max_tokens);
    EXPECT_EQ(r.gaps.size(), r.max_tokens - 1);
    tokens += r.output_tokens;
  }
  EXPECT_EQ(t.prompts[0].size(), 5u);
  const GenSummary s = summarize_gen(run, 0, 0);
  EXPECT_EQ(s.sent, 40u);
  EXPECT_EQ(s.ok, 40u);
  EXPECT_EQ(s.output_tokens, tokens);
}

// Holds two requests in flight for ever and refuses the rest at once, as an
// engine with a full queue does.
class FullTarget final : public GenTarget {
 public:
  explicit FullTarget(Clock& c) : clock_(c) {}
  void send(const std::string&, uint32_t, Callbacks cb) override {
    if (held.size() < 2) {
      held.push_back(std::move(cb));
      return;
    }
    ++refused;
    cb.on_done(false, 0, clock_.now(), "rejected");
  }
  std::vector<Callbacks> held;
  int refused = 0;

 private:
  Clock& clock_;
};

TEST(GenLoad, AClosedLoopThatIsRefusedWaitsForAnAnswerBeforeSendingAgain) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kClosed;
  spec.concurrency = 10;
  spec.duration_s = 0.05;
  GenWorkload w(*LengthDist::parse("fixed:5", "p"), *LengthDist::parse("fixed:3", "m"), 3);
  SteadyClock clock;
  FullTarget t(clock);
  const GenRun run = run_gen_load(spec, w, t, clock, milliseconds(1));
  // Two held, one refused; then nothing ends, so nothing more is sent (it
  // used to send and be refused for the whole run, keeping every try).
  EXPECT_EQ(t.refused, 1);
  ASSERT_EQ(run.requests.size(), 3u);
  EXPECT_EQ(run.requests[2].outcome, "rejected");
  EXPECT_FALSE(run.requests[0].done);
}

GenRequestResult answered(int64_t sent_ms, int64_t first_ms, std::vector<int64_t> gaps_ms,
                          uint32_t max_tokens, const TimePoint t0) {
  GenRequestResult r;
  r.intended = milliseconds(sent_ms);
  r.max_tokens = max_tokens;
  r.done = r.ok = true;
  r.outcome = "length";
  r.first = t0 + milliseconds(first_ms);
  TimePoint at = r.first;
  for (int64_t g : gaps_ms) {
    r.gaps.push_back(milliseconds(g));
    at += milliseconds(g);
  }
  r.last = r.finished = at;
  r.output_tokens = static_cast<uint32_t>(gaps_ms.size() + 1);
  return r;
}

TEST(GenSummary, QuantilesHalvesAndGoodputFromHandBuiltRequests) {
  GenRun run;
  run.start = TimePoint(std::chrono::seconds(50));
  const TimePoint t0 = run.start;
  run.requests.push_back(answered(0, 10, {5, 5}, 3, t0));         // TTFT 10, e2e 20
  run.requests.push_back(answered(0, 40, {5}, 2, t0));            // TTFT 40, e2e 45
  run.requests.push_back(answered(100, 150, {30, 30}, 9, t0));    // TTFT 50, ITL 30, e2e 110
  run.requests.push_back(answered(100, 120, {5, 5, 5}, 12, t0));  // TTFT 20, e2e 35
  GenRequestResult refused;
  refused.done = true;
  refused.outcome = "rejected";
  refused.finished = t0 + milliseconds(1);
  run.requests.push_back(refused);
  const GenSummary s = summarize_gen(run, /*ttft=*/45, /*itl=*/10);
  EXPECT_EQ(s.sent, 5u);
  EXPECT_EQ(s.ok, 4u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_EQ(s.output_tokens, 3u + 2 + 3 + 4);
  EXPECT_NEAR(s.duration_s, 0.210, 1e-9);  // the last answer, at 210 ms
  EXPECT_NEAR(s.ttft.p50, 20, 0.1);
  EXPECT_NEAR(s.ttft.max, 50, 0.2);
  EXPECT_NEAR(s.itl.max, 30, 0.2);
  EXPECT_NEAR(s.e2e_short.max, 45, 0.2);  // max_tokens 2 and 3 (the median is 3)
  EXPECT_NEAR(s.e2e_long.p50, 35, 0.2);
  EXPECT_EQ(s.good, 3u);  // the third misses both objectives
}

// With lanes each step carries its own lane's counts; the engine's are
// every lane's latest, summed.
TEST(GenMetrics, AStepsRunningAndCacheAreEveryLanesLatestSummed) {
  GenMetrics m(std::chrono::seconds(1), 10);
  const TimePoint t = TimePoint(std::chrono::seconds(100));
  StepRecord a;
  a.start = t;
  a.end = t + milliseconds(2);
  a.running = 3;
  a.blocks_used = 5;
  a.blocks_total = 64;
  StepRecord b = a;
  b.lane = 1;
  b.end = t + milliseconds(3);
  b.running = 2;
  b.blocks_used = 7;
  StepRecord a2 = a;
  a2.end = t + milliseconds(4);
  a2.running = 1;
  m.fold({}, std::vector<StepRecord>{a, b, a2});
  ASSERT_EQ(m.windows().size(), 1u);
  const GenWindow& w = m.windows()[0];
  EXPECT_EQ(w.running_max, 5u);  // 3 + 2 after lane 1's step
  EXPECT_EQ(w.running_sum, 3u + 5u + 3u);
  EXPECT_EQ(w.blocks_used_max, 12u);
  EXPECT_EQ(w.blocks_total, 128u);  // two lanes' pools
}

TEST(GenMetrics, FilesRequestsAndStepsUnderTheirWindows) {
  GenMetrics m(std::chrono::seconds(1), 10);
  const TimePoint t = TimePoint(std::chrono::seconds(100));
  GenRecord r;
  r.reason = FinishReason::kLength;
  r.arrival = t;
  r.admitted = t + milliseconds(5);
  r.first_token = t + milliseconds(20);
  r.gaps = {milliseconds(4), milliseconds(6)};
  r.finished = t + milliseconds(1500);
  GenRecord cancelled = r;
  cancelled.reason = FinishReason::kCancelled;
  StepRecord s;
  s.start = t;
  s.end = t + milliseconds(10);
  s.decodes = 3;
  s.prefill_tokens = 7;
  s.output_tokens = 4;
  s.running = 3;
  s.blocks_used = 5;
  s.blocks_total = 64;
  const std::vector<GenRecord> reqs = {r, cancelled};
  const std::vector<StepRecord> steps = {s};
  m.fold(reqs, steps);
  ASSERT_EQ(m.windows().size(), 2u);
  EXPECT_EQ(m.windows()[0].steps, 1u);
  EXPECT_EQ(m.windows()[1].finished, 2u);
  const GenWindow& all = m.totals();
  EXPECT_EQ(all.reasons[static_cast<size_t>(FinishReason::kLength)], 1u);
  EXPECT_EQ(all.reasons[static_cast<size_t>(FinishReason::kCancelled)], 1u);
  EXPECT_EQ(all.ttft_ns.count(), 1u);  // the cancelled one is counted by reason only
  EXPECT_EQ(all.itl_ns.count(), 2u);
  EXPECT_EQ(all.output_tokens, 4u);
  EXPECT_EQ(all.blocks_used_max, 5u);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The generation predictor against the real generation engine on a manual
// clock: the engine runs on its own thread over the synthetic model, whose
// every step stops until the test has moved the clock over its cost (and
// sent the requests due meanwhile, each at its own time). The predictor must
// give every request the same first token, gaps and end to the nanosecond,
// and the same steps, continuous and static, with preemption.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "generation/gen_engine.h"
#include "generation/synthetic_lm.h"
#include "traffic/gen_load.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_cost.h"

namespace batchscope {
namespace {

using std::chrono::microseconds;

constexpr auto kSafety = std::chrono::seconds(20);

// The engine thread hands each step's cost here and waits for the test.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Duration> step;
  void spend(Duration d) {
    std::unique_lock lk(mu);
    step = d;
    cv.notify_all();
    cv.wait(lk, [&] { return !step; });
  }
};

struct Case {
  Scheduling scheduling = Scheduling::kContinuous;
  uint32_t max_num_seqs = 8;
  uint32_t max_num_batched_tokens = 96;
  int num_blocks = 40;  // 640 positions: sequences get preempted
  double rate = 120;
};

ArrivalSpec arrivals(const Case& c) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = c.rate;
  spec.duration_s = 0.5;
  spec.seed = 5;
  return spec;
}

GenWorkload workload() {
  return GenWorkload(*LengthDist::parse("uniform:8,80", "prompt"),
                     *LengthDist::parse("lognormal:24,1,120", "max"), 17);
}

Options options_of(const Case& c) {
  Options o;
  o.scheduling = c.scheduling;
  o.max_num_seqs = c.max_num_seqs;
  o.max_num_batched_tokens = c.max_num_batched_tokens;
  o.max_wait_us = 0;
  return o;
}

SyntheticLmOptions model_of(const Case& c) {
  SyntheticLmOptions m;
  m.num_blocks = c.num_blocks;
  m.context_length = 256;  // the cache must hold one whole context
  m.step_us = 700;
  m.token_us = 13.5;
  return m;
}

// The engine, driven by hand: what a load driver would have measured.
GenRun run_engine(const Case& c) {
  auto clock = std::make_shared<ManualClock>();
  Gate gate;
  SyntheticLmOptions m = model_of(c);
  m.spend = [&gate](Duration d) { gate.spend(d); };
  GenEngine engine(std::make_unique<SyntheticLm>(m), options_of(c), clock);
  const Status started = engine.start();
  EXPECT_TRUE(started.ok()) << started.message();

  std::vector<Duration> offsets;
  ArrivalSchedule schedule(arrivals(c));
  while (auto next = schedule.next()) offsets.push_back(*next);
  GenWorkload w = workload();
  std::mutex book_mu;
  GenRun run;
  run.start = clock->now();
  run.requests.resize(offsets.size());
  size_t sent = 0, done = 0;
  auto send_due = [&](TimePoint upto) {
    while (sent < offsets.size() && run.start + offsets[sent] <= upto) {
      clock->advance_to(run.start + offsets[sent]);
      const GenLengths len = w.next();
      const size_t i = sent++;
      {
        std::lock_guard g(book_mu);
        GenRequestResult& q = run.requests[i];
        q.intended = offsets[i];
        q.prompt_tokens = len.prompt;
        q.max_tokens = len.max_tokens;
      }
      GenRequest r = gen_request_of(w.prompt_text(len.prompt), len.max_tokens);
      r.on_text = [&, i](std::string_view, uint32_t tokens, TimePoint when) {
        if (tokens == 0) return;
        std::lock_guard g(book_mu);
        GenRequestResult& q = run.requests[i];
        if (q.last != kNever) q.gaps.push_back(when - q.last);
        if (q.first == kNever) q.first = when;
        q.last = when;
        q.output_tokens += tokens;
      };
      r.on_done = [&, i](const GenRecord& rec) {
        std::lock_guard g(book_mu);
        GenRequestResult& q = run.requests[i];
        q.done = true;
        q.ok = rec.reason == FinishReason::kLength || rec.reason == FinishReason::kStop;
        q.outcome = finish_reason_name(rec.reason);
        q.finished = rec.finished;
        ++done;
      };
      EXPECT_TRUE(engine.submit(std::move(r)).ok());
    }
  };

  bool expect_step = false;  // requests were sent to an idle engine: a step must come
  const auto give_up = std::chrono::steady_clock::now() + kSafety;
  for (;;) {
    // Until the engine is in a step, or parked (only the test moves the
    // clock or sends, so a parked engine stays parked).
    std::optional<Duration> step;
    for (;;) {
      {
        std::lock_guard g(gate.mu);
        step = gate.step;
      }
      if (step || (!expect_step && !clock->parked().empty())) break;
      if (std::chrono::steady_clock::now() > give_up) break;
      std::this_thread::yield();
    }
    if (!step && (expect_step || clock->parked().empty())) {
      ADD_FAILURE() << "the engine neither stepped nor parked";
      break;
    }
    if (step) {
      const TimePoint end = clock->now() + *step;
      send_due(end);  // the driver's sends during the step, each at its time
      clock->advance_to(end);
      std::lock_guard g(gate.mu);
      gate.step.reset();
      expect_step = false;
      gate.cv.notify_all();
      continue;
    }
    if (sent == offsets.size()) {
      std::lock_guard g(book_mu);
      if (done == sent) break;
      ADD_FAILURE() << "the engine parked with " << sent - done << " requests unanswered";
      break;
    }
    send_due(run.start + offsets[sent]);
    expect_step = true;
  }
  engine.stop(Duration(0));
  std::vector<GenRecord> records;
  engine.drain(records, run.steps);
  return run;
}

void expect_same(const GenRun& engine, const GenRun& predicted) {
  ASSERT_EQ(engine.requests.size(), predicted.requests.size());
  ASSERT_GT(engine.requests.size(), 30u);
  for (size_t i = 0; i < engine.requests.size(); ++i) {
    const GenRequestResult& e = engine.requests[i];
    const GenRequestResult& p = predicted.requests[i];
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_TRUE(e.ok);
    EXPECT_EQ(e.ok, p.ok);
    EXPECT_EQ(e.outcome, p.outcome);
    EXPECT_EQ(e.intended, p.intended);
    EXPECT_EQ(e.prompt_tokens, p.prompt_tokens);
    EXPECT_EQ(e.output_tokens, p.output_tokens);
    EXPECT_EQ(e.first - engine.start, p.first - predicted.start);
    EXPECT_EQ(e.finished - engine.start, p.finished - predicted.start);
    EXPECT_EQ(e.gaps, p.gaps);
  }
  ASSERT_EQ(engine.steps.size(), predicted.steps.size());
  for (size_t i = 0; i < engine.steps.size(); ++i) {
    const StepRecord& e = engine.steps[i];
    const StepRecord& p = predicted.steps[i];
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_EQ(e.decodes, p.decodes);
    EXPECT_EQ(e.prefill_tokens, p.prefill_tokens);
    EXPECT_EQ(e.preempted, p.preempted);
    EXPECT_EQ(e.blocks_used, p.blocks_used);
    EXPECT_EQ(e.start - engine.start, p.start - predicted.start);
    EXPECT_EQ(e.end - engine.start, p.end - predicted.start);
  }
}

GenRun predict(const Case& c) {
  GenWorkload w = workload();
  const SyntheticLmOptions m = model_of(c);
  const SyntheticLm model(m);
  return predict_gen(arrivals(c), w, options_of(c), model.info(),
                     GenStepCost::synthetic(m.step_us, m.token_us));
}

TEST(GenPredictor, EqualsTheEngineRequestForRequestContinuousWithPreemption) {
  const Case c;
  const GenRun engine = run_engine(c);
  const GenRun predicted = predict(c);
  expect_same(engine, predicted);
  uint32_t preempted = 0;
  for (const StepRecord& s : predicted.steps) preempted += s.preempted;
  EXPECT_GT(preempted, 0u);  // the small cache made it recompute
}

TEST(GenPredictor, EqualsTheEngineRequestForRequestStatic) {
  Case c;
  c.scheduling = Scheduling::kStatic;
  c.num_blocks = 400;
  c.rate = 60;
  expect_same(run_engine(c), predict(c));
}

TEST(GenPredictor, AClosedLoopKeepsItsConcurrencyAndStopsSendingAtTheEnd) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kClosed;
  spec.concurrency = 6;
  spec.duration_s = 0.4;
  GenWorkload w = workload();
  const SyntheticLm model(SyntheticLmOptions{});
  Options o;
  o.max_num_seqs = 4;
  const GenRun run = predict_gen(spec, w, o, model.info(), GenStepCost::synthetic(1000, 10));
  ASSERT_FALSE(run.requests.empty());
  for (const GenRequestResult& r : run.requests) {
    EXPECT_TRUE(r.ok);
    EXPECT_LT(r.intended, std::chrono::milliseconds(400));
  }
  // Six in flight: the first six are sent at once, the seventh when one ends.
  ASSERT_GT(run.requests.size(), 6u);
  EXPECT_EQ(run.requests[5].intended, Duration(0));
  EXPECT_GT(run.requests[6].intended, Duration(0));
  for (const StepRecord& s : run.steps) EXPECT_LE(s.decodes + s.prefills, 4u);
}

TEST(GenPredictor, AClosedLoopBeyondTheQueueIsRefusedOncePerStepAndEnds) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kClosed;
  spec.concurrency = 50;
  spec.duration_s = 0.2;
  GenWorkload w = workload();
  const SyntheticLm model(SyntheticLmOptions{});
  Options o;
  o.max_num_seqs = 2;
  o.queue_capacity = 4;
  const GenRun run = predict_gen(spec, w, o, model.info(), GenStepCost::synthetic(1000, 10));
  size_t rejected = 0, ok = 0;
  for (const GenRequestResult& r : run.requests) {
    rejected += r.outcome == "rejected";
    ok += r.ok;
  }
  EXPECT_GT(ok, 0u);
  EXPECT_GT(rejected, 0u);
  EXPECT_LE(rejected, run.steps.size() + 1);  // at most one refusal per step
  EXPECT_EQ(ok + rejected, run.requests.size());
}

TEST(GenPredictor, ACostIsPricedPerDecodeAndPerPromptToken) {
  const GenStepCost c{100, 10, 2, 0, 0, {}, {}};
  EXPECT_EQ(c.of_step(3, 50), microseconds(230));
  const GenStepCost same = GenStepCost::synthetic(700, 13.5);
  EXPECT_EQ(same.of_step(2, 5), std::chrono::nanoseconds(794500));
}

TEST(StepCostFile, ReadsWhatItWritesAndNamesWhatIsWrong) {
  StepCost c;
  c.steps = 40;
  c.decode_steps = 30;
  c.step_us = 1905.5;
  c.token_us = 20.25;
  c.prefill_token_us = 58;
  c.rows.push_back({1, 1, 12, 1900});
  auto back = parse_step_cost_json(step_cost_json(c, "tiny_lm", "cpu"));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->step_us, 1905.5);
  EXPECT_EQ(back->token_us, 20.25);
  EXPECT_EQ(back->prefill_token_us, 58);
  EXPECT_EQ(back->steps, 40u);
  ASSERT_EQ(back->rows.size(), 1u);
  EXPECT_EQ(back->rows[0].median_us, 1900);

  EXPECT_EQ(parse_step_cost_json("[1]").error().message, "a step cost file is a JSON object");
  EXPECT_EQ(parse_step_cost_json("{").error().message, "a step cost file is JSON; this is not");
  EXPECT_EQ(parse_step_cost_json(R"({"step_us": 1, "token_us": 2})").error().message,
            "the step cost has no \"prefill_token_us\"");
  EXPECT_EQ(parse_step_cost_json(R"({"step_us": -1, "token_us": 2, "prefill_token_us": 0})")
                .error()
                .message,
            "\"step_us\" must be a number of microseconds from 0 to 10 s, not -1");
  EXPECT_EQ(parse_step_cost_json(R"({"step_us": 1, "token_us": "x", "prefill_token_us": 0})")
                .error()
                .message,
            "\"token_us\" must be a number of microseconds from 0 to 10 s, not \"x\"");
}

}  // namespace
}  // namespace batchscope

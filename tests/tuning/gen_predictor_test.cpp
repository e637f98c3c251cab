// SPDX-License-Identifier: GPL-3.0-or-later
// The generation predictor against the real generation engine on a manual
// clock: the engine runs on its own thread over the synthetic model, whose
// every step stops until the test has moved the clock over its cost (and
// sent the requests due meanwhile, each at its own time). The predictor must
// give every request the same first token, gaps and end to the nanosecond,
// and the same steps, continuous and static, with preemption.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
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

constexpr auto kGenGiveUp = std::chrono::seconds(20);

// Each lane's thread hands its step's end here and waits for the test.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  std::map<int, TimePoint> ends;  // by lane: the step it is in, and its end
  void spend(int lane, TimePoint end) {
    std::unique_lock lk(mu);
    ends[lane] = end;
    cv.notify_all();
    cv.wait(lk, [&] { return ends.count(lane) == 0; });
  }
};

struct GenCase {
  Scheduling scheduling = Scheduling::kContinuous;
  uint32_t max_num_seqs = 8;
  uint32_t max_num_batched_tokens = 96;
  int num_blocks = 40;  // 640 positions: sequences get preempted
  double rate = 120;
  uint32_t lanes = 1;
};

ArrivalSpec arrivals(const GenCase& c) {
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

Options options_of(const GenCase& c) {
  Options o;
  o.scheduling = c.scheduling;
  o.max_num_seqs = c.max_num_seqs;
  o.max_num_batched_tokens = c.max_num_batched_tokens;
  o.max_wait_us = 0;
  o.num_lanes = c.lanes;
  return o;
}

SyntheticLmOptions model_of(const GenCase& c) {
  SyntheticLmOptions m;
  m.num_blocks = c.num_blocks;
  m.context_length = 256;  // the cache must hold one whole context
  m.step_us = 700;
  m.token_us = 13.5;
  return m;
}

// The engine, driven by hand: what a load driver would have measured. The
// test moves the clock only when every lane is in a step (at the gate) or
// parked with nothing due, and then to the next thing: a send, a step's end
// or a parked lane's deadline.
GenRun run_engine(const GenCase& c) {
  auto clock = std::make_shared<ManualClock>();
  Gate gate;
  auto model = [&](int lane) {
    SyntheticLmOptions m = model_of(c);
    m.spend = [&gate, &clock, lane](Duration d) { gate.spend(lane, clock->now() + d); };
    return std::make_unique<SyntheticLm>(m);
  };
  GenEngine engine(model(0), options_of(c), clock, model);
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
  auto send = [&] {
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
  };

  const auto give_up = std::chrono::steady_clock::now() + kGenGiveUp;
  for (;;) {
    // Settled: nothing in an inbox, every lane at the gate or parked with
    // its deadline still ahead.
    TimePoint next_end = kNever, next_wake = kNever;
    bool settled = false;
    std::string seen;
    while (!settled && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
      // Read in the order a lane moves (given a request, takes it in, steps,
      // parks), so that no earlier state read here outlives a later one.
      const GenStatus st = engine.status();
      std::map<int, TimePoint> ends;
      {
        std::lock_guard g(gate.mu);
        ends = gate.ends;
      }
      const TimePoint now = clock->now();
      const std::vector<TimePoint> parked = clock->parked();
      next_end = kNever;
      for (const auto& [lane, end] : ends) next_end = std::min(next_end, end);
      next_wake = kNever;
      bool due = false;
      for (TimePoint t : parked) {
        due = due || t <= now;
        next_wake = std::min(next_wake, t);
      }
      // A lane out of a step must be parked with nothing given to it since.
      uint32_t inbox = 0;
      for (size_t i = 0; i < st.per_lane.size(); ++i) {
        if (ends.count(static_cast<int>(i)) == 0) inbox += st.per_lane[i].inbox;
      }
      settled = !due && ends.size() + parked.size() == c.lanes && inbox == 0;
      seen = std::to_string(ends.size()) + " in a step, " + std::to_string(parked.size()) +
             " parked" + (due ? " (one due)" : "") + ", " + std::to_string(inbox) +
             " in an idle lane's inbox";
    }
    if (!settled) {
      ADD_FAILURE() << "the engine's lanes did not settle: " << seen << " after " << sent
                    << " sends";
      break;
    }
    const TimePoint next_send = sent < offsets.size() ? run.start + offsets[sent] : kNever;
    if (next_send <= next_end && next_send <= next_wake && next_send != kNever) {
      send();  // a send at a step's end comes before the step ends, as the driver's would
      continue;
    }
    if (next_end <= next_wake && next_end != kNever) {
      clock->advance_to(next_end);
      std::lock_guard g(gate.mu);
      std::erase_if(gate.ends, [&](const auto& e) { return e.second == next_end; });
      gate.cv.notify_all();
      continue;
    }
    if (next_wake != kNever) {
      clock->advance_to(next_wake);
      continue;
    }
    std::lock_guard g(book_mu);
    if (done != sent) ADD_FAILURE() << "the engine parked with " << sent - done << " unanswered";
    break;
  }
  engine.stop(Duration(0));
  std::vector<GenRecord> records;
  engine.drain(records, run.steps);
  return run;
}

// Steps by lane, then by the lane's count.
std::vector<StepRecord> by_lane(std::vector<StepRecord> steps) {
  std::sort(steps.begin(), steps.end(), [](const StepRecord& a, const StepRecord& b) {
    return std::pair{a.lane, a.step} < std::pair{b.lane, b.step};
  });
  return steps;
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
  const std::vector<StepRecord> es = by_lane(engine.steps), ps = by_lane(predicted.steps);
  for (size_t i = 0; i < es.size(); ++i) {
    const StepRecord& e = es[i];
    const StepRecord& p = ps[i];
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_EQ(e.lane, p.lane);
    EXPECT_EQ(e.step, p.step);
    EXPECT_EQ(e.decodes, p.decodes);
    EXPECT_EQ(e.prefill_tokens, p.prefill_tokens);
    EXPECT_EQ(e.preempted, p.preempted);
    EXPECT_EQ(e.blocks_used, p.blocks_used);
    EXPECT_EQ(e.start - engine.start, p.start - predicted.start);
    EXPECT_EQ(e.end - engine.start, p.end - predicted.start);
  }
}

GenRun predict(const GenCase& c) {
  GenWorkload w = workload();
  const SyntheticLmOptions m = model_of(c);
  const SyntheticLm model(m);
  return predict_gen(arrivals(c), w, options_of(c), model.info(),
                     GenStepCost::synthetic(m.step_us, m.token_us));
}

TEST(GenPredictor, EqualsTheEngineRequestForRequestContinuousWithPreemption) {
  const GenCase c;
  const GenRun engine = run_engine(c);
  const GenRun predicted = predict(c);
  expect_same(engine, predicted);
  uint32_t preempted = 0;
  for (const StepRecord& s : predicted.steps) preempted += s.preempted;
  EXPECT_GT(preempted, 0u);  // the small cache made it recompute
}

TEST(GenPredictor, EqualsTheEngineRequestForRequestStatic) {
  GenCase c;
  c.scheduling = Scheduling::kStatic;
  c.num_blocks = 400;
  c.rate = 60;
  expect_same(run_engine(c), predict(c));
}

TEST(GenPredictor, EqualsTheEngineRequestForRequestOnThreeLanes) {
  GenCase c;
  c.lanes = 3;
  c.rate = 300;  // enough that every lane holds several at once
  c.num_blocks = 400;
  const GenRun engine = run_engine(c);
  const GenRun predicted = predict(c);
  expect_same(engine, predicted);
  std::map<uint32_t, size_t> per_lane;
  for (const StepRecord& s : predicted.steps) ++per_lane[s.lane];
  EXPECT_EQ(per_lane.size(), 3u);  // each lane took its share
}

TEST(GenPredictor, EqualsTheEngineRequestForRequestStaticOnTwoLanes) {
  GenCase c;
  c.scheduling = Scheduling::kStatic;
  c.lanes = 2;
  c.num_blocks = 400;
  c.rate = 150;
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
  const GenStepCost c{100, 10, 2, 0, 0, {}, {}, 1, {}, false};
  EXPECT_EQ(c.of_step(3, 50), microseconds(230));
  const GenStepCost same = GenStepCost::synthetic(700, 13.5);
  EXPECT_EQ(same.of_step(2, 5), std::chrono::nanoseconds(794500));
}

// A model and GPU not at hand: the scheduler on the virtual clock, each
// step priced by the roofline from what it decodes, prefills and reads.
TEST(GenPredictor, OnTheRooflineEachStepIsItsCostByHand) {
  auto shape = parse_model_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
      "intermediate_size": 14336, "max_position_embeddings": 131072, "num_attention_heads": 32,
      "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256})",
                                  "llama");
  ASSERT_TRUE(shape) << shape.error().message;
  RooflineSetup setup;
  setup.model = *shape;
  setup.gpu = *gpu_named("h100-sxm");
  auto roofline = RooflineCost::make(setup);
  ASSERT_TRUE(roofline) << roofline.error().message;
  const GenStepCost cost = GenStepCost::of(*roofline);
  EXPECT_TRUE(cost.has_lanes(1));
  EXPECT_FALSE(cost.has_lanes(2));
  EXPECT_NE(cost.text().find("the roofline of llama on h100-sxm x1"), std::string::npos)
      << cost.text();
  // One request alone: a 100-token prompt in chunks of 64 and 36, then 4 decodes.
  ArrivalSpec spec;
  spec.pattern = Pattern::kConstant;
  spec.rate = 1;
  spec.max_requests = 1;
  spec.duration_s = 1;
  GenWorkload w(*LengthDist::parse("fixed:100", "prompt"), *LengthDist::parse("fixed:5", "max"), 1);
  Options o;
  o.max_num_batched_tokens = 64;
  LmInfo info;
  info.context_length = 4096;
  info.num_blocks = static_cast<int>(roofline->kv_blocks());
  const GenRun run = predict_gen(spec, w, o, info, cost);
  ASSERT_EQ(run.requests.size(), 1u);
  const GenRequestResult& r = run.requests[0];
  ASSERT_TRUE(r.ok) << r.outcome;
  auto us = [](double v) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(v));
  };
  // The chunks attend to the positions before them and themselves:
  // 64 x 65 / 2, then 36 x 64 + 36 x 37 / 2, the second reading 64 cached;
  // and the serving stack's own time per request beside the steps.
  const double request_us = roofline->constants().request_us;
  EXPECT_GT(request_us, 0);
  EXPECT_EQ(r.first - run.start - r.intended, us(roofline->step_us(0, 64, 0, 2080)) +
                                                  us(roofline->step_us(0, 36, 64, 2970)) +
                                                  us(request_us));
  ASSERT_EQ(r.gaps.size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(r.gaps[i], us(roofline->step_us(1, 0, 100 + i, 0)));
  // Scaled, as a band's ends are: every step by the factor.
  const GenStepCost slow = cost.scaled(1.5);
  EXPECT_EQ(slow.of_step(1, 0, 100), us(1.5 * roofline->step_us(1, 0, 100, 0)));
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

// SPDX-License-Identifier: GPL-3.0-or-later
// The step cost's context term, its spread and the engine's time between
// steps: measured from step records, written and read back, and spent by the
// generation predictor.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "generation/synthetic_lm.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_cost.h"
#include "tuning/step_grid.h"
#include "tuning/step_profile.h"

namespace batchscope {
namespace {

using std::chrono::microseconds;

// Back-to-back decode steps with sequences running after each, `gap_us`
// apart, each costing `us(decodes, context)` times a factor.
struct Steps {
  std::vector<StepRecord> list;
  Duration at{};
  void add(uint32_t decodes, uint32_t context, double us, int64_t gap_us, uint32_t prefill = 0) {
    StepRecord s;
    s.step = list.size() + 1;
    s.start = TimePoint(std::chrono::seconds(1)) + at;
    s.end = s.start +
            std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us));
    s.decodes = decodes;
    s.prefill_tokens = prefill;
    s.context_tokens = context;
    s.running = decodes;
    list.push_back(s);
    at = s.end - TimePoint(std::chrono::seconds(1)) + microseconds(gap_us);
  }
};

TEST(StepCostContext, FitsTheCostOfTheContextItsSequencesRead) {
  // 400 us + 12 us per decode + 0.05 us per cached token read, at contexts
  // from 32 to 1024 tokens a sequence; 30 us of the engine's between steps.
  Steps s;
  for (int round = 0; round < 3; ++round) {
    for (uint32_t d : {1u, 2u, 4u, 8u}) {
      for (uint32_t per : {32u, 128u, 512u, 1024u}) {
        s.add(d, d * per, 400 + 12.0 * d + 0.05 * d * per, 30);
      }
    }
  }
  Expected<StepCost> c = measure_step_cost(s.list);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_NEAR(c->step_us, 400, 0.01);
  EXPECT_NEAR(c->token_us, 12, 0.01);
  EXPECT_NEAR(c->context_us, 0.05, 1e-5);
  EXPECT_NEAR(c->between_us, 30, 0.01);
  // Every step on its fit: the spread is flat at 1.
  ASSERT_EQ(c->spread.size(), std::size(kStepSpreadQuantiles));
  for (const StepSpreadPoint& p : c->spread) EXPECT_NEAR(p.ratio, 1, 1e-6);
}

// A run of decode steps costing `factor` times 400 + 12 us per decode.
std::vector<StepRecord> steps_at(double factor) {
  Steps s;
  for (int round = 0; round < 8; ++round) {
    for (uint32_t d : {1u, 2u, 4u, 8u}) s.add(d, d * 64, factor * (400 + 12.0 * d), 20);
  }
  return s.list;
}

TEST(StepCostDrift, ARunsLevelIsItsStepsOverTheKeptFit) {
  auto kept = measure_step_cost(steps_at(1));
  ASSERT_TRUE(kept.ok());
  EXPECT_NEAR(step_level(*kept, steps_at(1), 1), 1.0, 1e-6);
  EXPECT_NEAR(step_level(*kept, steps_at(3.6), 1), 3.6, 1e-6);
  EXPECT_EQ(step_level(*kept, steps_at(2), 2), 0);  // no fit at 2 lanes
  // A move held short: the run's times scaled before they refine.
  auto held = learn_step_cost(*kept, steps_at(2), 1, 0.625);  // 2x held to 1.25x
  ASSERT_TRUE(held.ok());
  EXPECT_NEAR(held->step_us, 400 * 1.125, 0.5);  // the mean of 400 and 500, by steps
  // The evidence is kept in the file, as written and read.
  StepCost with = *kept;
  CostEvidence e;
  e.at = "2026-12-03T10:00:00.000Z";
  e.level = 3.6;
  e.busy = "steps ran 3.60x the kept cost, far outside what it has seen";
  with.evidence.push_back(e);
  auto back = parse_step_cost_json(step_cost_json(with, "tiny_lm", "cpu"));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->evidence.size(), 1u);
  EXPECT_DOUBLE_EQ(back->evidence[0].level, 3.6);
  EXPECT_EQ(back->evidence[0].busy, e.busy);
  // And it judges the 3.6x run far: kept as evidence, refining nothing.
  const RunVerdict v =
      judge_level(3.6, drift_of_levels(back->evidence), false, nullptr, kBusyCores, "its steps");
  EXPECT_NE(v.busy.find("its steps ran 3.60x the kept cost"), std::string::npos) << v.busy;
}

TEST(StepCostContext, LeavesTheContextOutWhereTheRunGivesItNothingToStandOn) {
  // Every sequence at the same context: the context is the decode count
  // again, so its term stays 0 and the line takes the cost.
  Steps s;
  for (uint32_t d : {1u, 2u, 3u, 4u, 6u}) s.add(d, d * 100, 500 + 10.0 * d, 0);
  Expected<StepCost> c = measure_step_cost(s.list);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->context_us, 0);
  EXPECT_NEAR(c->step_us, 500, 1e-6);
  EXPECT_NEAR(c->token_us, 10, 1e-9);
  EXPECT_TRUE(c->spread.empty()) << "fewer than 20 decode-only steps";
}

TEST(StepCostContext, AStepNeverCostsNothingAtNoContext) {
  // One decode a step, time climbing with the context faster than any line
  // through a fixed cost allows (later steps slowed by other work): the free
  // fit is 0.5 us a position - 10 us, the context term alone fits next best.
  Steps s;
  for (uint32_t ctx : {40u, 100u, 400u, 1000u}) s.add(1, ctx, 0.5 * ctx - 10, 0);
  Expected<StepCost> c = measure_step_cost(s.list);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_GT(c->step_us + c->token_us, 0);
  EXPECT_GT(GenStepCost::of(*c).of_step(1, 0), Duration(0));
}

TEST(StepCostContext, NoTermComesOutBelowZero) {
  // Steps that a free line would give a fixed cost of -50 us: the fit keeps
  // every term at 0 or above, and the best such is the slope alone.
  Steps s;
  for (int round = 0; round < 4; ++round) {
    for (uint32_t d : {1u, 2u, 4u, 8u}) s.add(d, d * (round == 0 ? 20 : 200), 100.0 * d - 50, 0);
  }
  Expected<StepCost> c = measure_step_cost(s.list);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->step_us, 0);
  EXPECT_GT(c->token_us, 90);
  EXPECT_GE(c->context_us, 0);
}

TEST(StepCostContext, TheSpreadIsTheStepsOverTheirFitAndBetweenCountsOnlyWhileSequencesRun) {
  // 100 steps at one decode, at 1000 us times 0.9, 1.0 (most) or 1.5 (five).
  Steps s;
  for (int i = 0; i < 100; ++i) {
    const double f = i < 10 ? 0.9 : i < 95 ? 1.0 : 1.5;
    s.add(1, 64, 1000 * f, 40);
  }
  s.list[50].running = 0;  // the engine then waited for work: not its own time
  s.list[51].start += microseconds(5000);
  s.list[51].end += microseconds(5000);
  Expected<StepCost> c = measure_step_cost(s.list);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_NEAR(c->between_us, 40, 1e-6);
  ASSERT_EQ(c->spread.size(), std::size(kStepSpreadQuantiles));
  const double fit = c->step_us + c->token_us;  // the median step: 1000 us
  EXPECT_NEAR(fit, 1000, 1e-6);
  EXPECT_NEAR(c->spread.front().ratio, 0.9, 1e-9);  // q 0.01
  EXPECT_NEAR(c->spread[3].ratio, 1.0, 1e-9);       // q 0.5
  EXPECT_NEAR(c->spread.back().ratio, 1.5, 1e-9);   // q 0.99
}

TEST(StepCostContext, TheFileCarriesTheNewTermsAndOlderVersionsStillRead) {
  StepCost c;
  c.steps = 300;
  c.decode_steps = 250;
  c.step_us = 1500;
  c.token_us = 20;
  c.context_us = 0.125;
  c.prefill_token_us = 40;
  c.between_us = 35.5;
  c.spread = {{0.05, 0.95}, {0.5, 1.0}, {0.99, 1.75}};
  auto back = parse_step_cost_json(step_cost_json(c, "tiny_lm", "cpu"));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->context_us, 0.125);
  EXPECT_EQ(back->between_us, 35.5);
  ASSERT_EQ(back->spread.size(), 3u);
  EXPECT_EQ(back->spread[2].ratio, 1.75);
  // A version-3 file (before these terms) reads with them at 0.
  auto v3 = parse_step_cost_json(
      R"({"version": 3, "step_us": 1, "token_us": 2, "prefill_token_us": 3, "between_us": 9})");
  ASSERT_TRUE(v3.ok()) << v3.error().message;
  EXPECT_EQ(v3->between_us, 0);
  // A newer one is refused by number; a bad term is named and quoted.
  EXPECT_EQ(parse_step_cost_json(R"({"version": 7, "step_us": 1})").error().message,
            "the step cost has version 7; this batchscope reads versions up to 6 (a newer "
            "batchscope wrote it)");
  EXPECT_EQ(
      parse_step_cost_json(
          R"({"version": 4, "step_us": 1, "token_us": 2, "prefill_token_us": 3, "context_us": -2})")
          .error()
          .message,
      "\"context_us\" must be a number of microseconds from 0 to 10 s, not -2");
  // A spread that falls, or leaves (0, 1), is dropped rather than trusted.
  auto falling = parse_step_cost_json(
      R"({"version": 4, "step_us": 1, "token_us": 2, "prefill_token_us": 3,
          "spread": [{"q": 0.5, "ratio": 1.2}, {"q": 0.9, "ratio": 1.1}]})");
  ASSERT_TRUE(falling.ok());
  EXPECT_TRUE(falling->spread.empty());
}

TEST(StepCostContext, RefiningWeighsTheNewTermsAndTakesTheLaterSpread) {
  StepCost kept, seen;
  kept.steps = 100, kept.step_us = 1000, kept.context_us = 0.1, kept.between_us = 20;
  kept.spread = {{0.5, 1.0}};
  seen.steps = 300, seen.step_us = 2000, seen.context_us = 0.2, seen.between_us = 60;
  seen.spread = {{0.5, 1.0}, {0.99, 2.0}};
  const StepCost now = refine_step_cost(kept, seen);
  EXPECT_DOUBLE_EQ(now.context_us, 0.175);
  EXPECT_DOUBLE_EQ(now.between_us, 50);
  EXPECT_EQ(now.spread.size(), 2u);
}

// Two lanes' steps interleave in the records; each lane's gap is its own.
TEST(StepCostLanes, EachLaneCountHasItsOwnFitAndBetweenIsPerLane) {
  Steps one;
  for (int i = 0; i < 60; ++i) one.add(1 + i % 4, 0, 1000 + 200 * (1 + i % 4), 10);
  const StepCost base = measure_step_cost(one.list).value();
  EXPECT_EQ(base.lanes, 1u);
  EXPECT_NEAR(base.step_us, 1000, 1);
  EXPECT_NEAR(base.token_us, 200, 1);

  // At two lanes every step costs 300 + 700 per decode; lane 1's steps
  // start 5 us into lane 0's, so consecutive records overlap.
  Steps a, b;
  b.at = microseconds(5);
  for (int i = 0; i < 60; ++i) {
    a.add(1 + i % 4, 0, 300 + 700 * (1 + i % 4), 30);
    b.add(1 + i % 3, 0, 300 + 700 * (1 + i % 3), 30);
  }
  std::vector<StepRecord> two;
  for (size_t i = 0; i < 60; ++i) {
    two.push_back(a.list[i]);
    two.push_back(b.list[i]);
    two.back().lane = 1;
  }
  const StepCost learned = learn_step_cost(base, two, 2).value();
  EXPECT_EQ(learned.lanes, 1u);
  EXPECT_DOUBLE_EQ(learned.step_us, base.step_us) << "the one-lane fit is left as it was";
  ASSERT_EQ(learned.by_lanes.size(), 1u);
  const StepLaneFit& f = learned.by_lanes[0];
  EXPECT_EQ(f.lanes, 2u);
  EXPECT_NEAR(f.step_us, 300, 1);
  EXPECT_NEAR(f.token_us, 700, 1);
  EXPECT_NEAR(f.between_us, 30, 0.5) << "each lane's own gap, not the records' overlap";
  EXPECT_FALSE(at_lanes(learned, 3));
  EXPECT_NEAR(at_lanes(learned, 2)->token_us, 700, 1);

  // The predictor prices each lane count by its own fit; a grid is the base's only.
  const GenStepCost cost = GenStepCost::of(learned);
  EXPECT_TRUE(cost.has_lanes(1));
  EXPECT_TRUE(cost.has_lanes(2));
  EXPECT_FALSE(cost.has_lanes(3));
  auto us = [](Duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
  EXPECT_NEAR(us(cost.at_lanes(2).of_step(2, 0)), 1700, 2);
  EXPECT_NEAR(us(cost.at_lanes(1).of_step(2, 0)), 1400, 2);
  EXPECT_TRUE(GenStepCost::synthetic(100, 1).has_lanes(7)) << "the synthetic cost is exact";

  // Written and read back; a bad fit is named by its index.
  const StepCost back = parse_step_cost_json(step_cost_json(learned, "m", "cpu")).value();
  ASSERT_EQ(back.by_lanes.size(), 1u);
  EXPECT_EQ(back.by_lanes[0].lanes, 2u);
  EXPECT_DOUBLE_EQ(back.by_lanes[0].token_us, f.token_us);
  const auto bad = parse_step_cost_json(
      R"({"version": 5, "step_us": 1, "token_us": 2, "prefill_token_us": 3, "lanes": 1,)"
      R"( "by_lanes": [{"lanes": 1, "step_us": 1, "token_us": 1, "context_us": 0,)"
      R"( "prefill_token_us": 1, "between_us": 0}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("\"by_lanes\" entry 0 must be"), std::string::npos)
      << bad.error().message;
  EXPECT_EQ(parse_step_cost_json(
                R"({"version": 5, "step_us": 1, "token_us": 2, "prefill_token_us": 3, "lanes": 0})")
                .error()
                .message,
            "\"lanes\" must be 1..64, not 0");
}

TEST(GenStepCostSpend, PricesTheContextAndDrawsTheSpreadBetweenItsQuantiles) {
  GenStepCost c{100, 10, 2, 0.5, 0, {}, {}};
  EXPECT_EQ(c.of_step(3, 50, 40), microseconds(250));
  EXPECT_EQ(c.factor_at(0.3), 1);
  c.spread = {{0.1, 0.8}, {0.5, 1.0}, {0.9, 2.0}};
  EXPECT_DOUBLE_EQ(c.factor_at(0.05), 0.8);
  EXPECT_DOUBLE_EQ(c.factor_at(0.3), 0.9);
  EXPECT_DOUBLE_EQ(c.factor_at(0.7), 1.5);
  EXPECT_DOUBLE_EQ(c.factor_at(0.95), 2.0);
  EXPECT_EQ(c.text(),
            "100.0 us + 10.000 us per decode + 2.000 us per prompt token + 0.5 us per cached "
            "token read, spread x0.80..x2.00 (q 0.10..0.90)");
}

GenRun predicted(const GenStepCost& cost, uint64_t seed) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 150;
  spec.duration_s = 0.5;
  spec.seed = seed;
  GenWorkload w(*LengthDist::parse("uniform:8,200", "prompt"),
                *LengthDist::parse("uniform:4,60", "max"), 17);
  SyntheticLmOptions m;
  m.context_length = 512;
  Options o;
  o.max_num_seqs = 8;
  o.max_num_batched_tokens = 64;
  return predict_gen(spec, w, o, SyntheticLm(m).info(), cost);
}

TEST(GenStepCostSpend, ThePredictorPricesEachStepByTheContextTheSchedulerRecords) {
  const GenStepCost cost{300, 10, 4, 0.25, 0, {}, {}};
  const GenRun run = predicted(cost, 3);
  ASSERT_GT(run.steps.size(), 100u);
  uint64_t most = 0;
  for (const StepRecord& s : run.steps) {
    EXPECT_EQ(s.end - s.start, cost.of_step(s.decodes, s.prefill_tokens, s.context_tokens))
        << "step " << s.step;
    most = std::max<uint64_t>(most, s.context_tokens);
  }
  EXPECT_GT(most, 400u) << "the context grows as sequences decode";
}

TEST(GenStepCostSpend, AStepsContextIsTheTokensItsSequencesHaveCached) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = 10;
  spec.duration_s = 1;
  spec.max_requests = 1;
  GenWorkload w(*LengthDist::parse("fixed:10", "prompt"), *LengthDist::parse("fixed:3", "max"), 1);
  const GenRun run = predict_gen(spec, w, Options{}, SyntheticLm(SyntheticLmOptions{}).info(),
                                 GenStepCost::synthetic(100, 1));
  ASSERT_EQ(run.steps.size(), 3u);  // the prompt, then two decodes
  EXPECT_EQ(run.steps[0].prefill_tokens, 10u);
  EXPECT_EQ(run.steps[0].context_tokens, 0u);
  EXPECT_EQ(run.steps[1].context_tokens, 10u);
  EXPECT_EQ(run.steps[2].context_tokens, 11u);
}

TEST(GenStepCostSpend, ThePredictorWaitsTheEnginesTimeBetweenStepsAndDrawsTheSpreadBySeed) {
  GenStepCost cost{300, 10, 4, 0, 45, {}, {}};
  const GenRun run = predicted(cost, 3);
  size_t followed = 0;
  for (size_t i = 1; i < run.steps.size(); ++i) {
    if (run.steps[i - 1].running == 0) continue;
    EXPECT_EQ(run.steps[i].start - run.steps[i - 1].end, microseconds(45)) << "step " << i;
    ++followed;
  }
  EXPECT_GT(followed, 100u);
  // With a spread, steps of one kind differ, and the same seed repeats them.
  cost.spread = {{0.05, 0.9}, {0.5, 1.0}, {0.95, 1.6}};
  const GenRun a = predicted(cost, 3), b = predicted(cost, 3);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  Duration shortest = Duration::max(), longest{};
  for (size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].end - a.steps[i].start, b.steps[i].end - b.steps[i].start);
    const StepRecord& s = a.steps[i];
    const double ratio = static_cast<double>((s.end - s.start).count()) /
                         static_cast<double>(cost.of_step(s.decodes, s.prefill_tokens).count());
    EXPECT_GE(ratio, 0.9 - 1e-6);
    EXPECT_LE(ratio, 1.6 + 1e-6);
    shortest = std::min(shortest, s.end - s.start);
    longest = std::max(longest, s.end - s.start);
  }
  EXPECT_GT(longest, shortest);
}

TEST(StepGridTest, ReadsDecodesOverDecodeCountAndPositionAndPrefillsOverTokens) {
  // Decodes at 1 and 4 sequences, positions 0 and 15 (log2(p + 1): 0 and 4).
  const std::vector<StepGridPoint> points = {{1, 0, 0, 100},  {1, 15, 0, 200}, {4, 0, 0, 300},
                                             {4, 15, 0, 600}, {0, 0, 8, 1000}, {0, 0, 16, 1800}};
  const StepGrid g(points);
  ASSERT_TRUE(g.has_decodes());
  ASSERT_TRUE(g.has_prefill());
  EXPECT_EQ(g.size(), 6u);
  EXPECT_EQ(g.floor_us(), 100);
  double d = 0, p = 0;
  EXPECT_DOUBLE_EQ(g.decode_us(2, 3, d, p), 300);  // halfway on both axes
  EXPECT_DOUBLE_EQ(g.decode_us(4, 15, d, p), 600);
  EXPECT_DOUBLE_EQ(g.decode_us(8, 3, d, p), 450);  // held at 4 sequences
  EXPECT_DOUBLE_EQ(d, 4);
  EXPECT_DOUBLE_EQ(p, 3);
  double t = 0;
  EXPECT_DOUBLE_EQ(g.prefill_us(12, t), 1400);
  EXPECT_DOUBLE_EQ(g.prefill_us(32, t), 1800);
  EXPECT_DOUBLE_EQ(t, 16);
  // A point missing from the rectangle leaves no decode grid.
  const StepGrid holed(std::span<const StepGridPoint>(points).subspan(1));
  EXPECT_FALSE(holed.has_decodes());
  EXPECT_TRUE(holed.has_prefill());
}

TEST(StepGridTest, APricedStepReadsTheGridAndTheLineBeyondIt) {
  StepCost c;
  c.step_us = 0;
  c.token_us = 10;
  c.prefill_token_us = 50;
  c.grid = {{1, 0, 0, 100},  {1, 15, 0, 200}, {4, 0, 0, 300},
            {4, 15, 0, 600}, {0, 0, 8, 1000}, {0, 0, 16, 1800}};
  const GenStepCost cost = GenStepCost::of(c);
  EXPECT_EQ(cost.of_step(2, 0, 6), microseconds(300));   // 2 sequences at 3 positions each
  EXPECT_EQ(cost.of_step(8, 0, 24), microseconds(490));  // 450 at 4, and 4 more decodes at 10
  EXPECT_EQ(cost.of_step(0, 12, 0), microseconds(1400));
  EXPECT_EQ(cost.of_step(0, 20, 0), microseconds(2000));  // 1800 at 16, and 4 tokens at 50
  EXPECT_EQ(cost.of_step(2, 12, 6), microseconds(1600));  // both, the floor counted once
  EXPECT_NE(cost.text().find("a grid of 6 measured points"), std::string::npos) << cost.text();
  // The grid goes through the file and back.
  auto back = parse_step_cost_json(step_cost_json(c, "m", "cpu"));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->grid.size(), 6u);
  EXPECT_EQ(back->grid[5].prefill, 16u);
  EXPECT_EQ(back->grid[5].us, 1800);
  const std::string bad =
      R"({"version": 4, "step_us": 1, "token_us": 2, "prefill_token_us": 3,
          "grid": [{"decodes": 1, "position": 0, "prefill": 0, "us": 5}, {"decodes": -1}]})";
  EXPECT_NE(parse_step_cost_json(bad).error().message.find("\"grid\" entry 1 must be"),
            std::string::npos)
      << parse_step_cost_json(bad).error().message;
}

// A model whose every step moves a manual clock by a known cost:
// 200 us + 10 us per decode + 0.1 us per cached position read + 3 us per
// prompt token.
class PricedLm final : public LmRunner {
 public:
  explicit PricedLm(ManualClock& clock) : clock_(clock) {
    info_.name = "priced";
    info_.context_length = 600;
    info_.num_blocks = 4;
  }
  const LmInfo& info() const override { return info_; }
  Expected<LmLogits> step(const LmStep& step) override {
    double us = 200;
    for (const DecodeItem& d : step.decodes) {
      us += 10 + 0.1 * d.position;
      EXPECT_GE(d.blocks.size() * 16, static_cast<size_t>(d.position + 1));
      EXPECT_TRUE(std::all_of(d.blocks.begin(), d.blocks.end(), [](int32_t b) { return b == 0; }));
    }
    for (const PrefillChunk& p : step.prefills) us += 3.0 * static_cast<double>(p.tokens.size());
    clock_.advance(
        std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us)));
    ++steps;
    LmLogits out;
    out.rows = step.decodes.size() + step.prefills.size();
    out.values.assign(out.rows * static_cast<size_t>(info_.vocab_size), 0.0f);
    return out;
  }
  void warm_up(uint32_t, uint32_t) override { warmed = true; }
  bool warmed = false;
  uint64_t steps = 0;

 private:
  LmInfo info_;
  ManualClock& clock_;
};

TEST(StepProfileTest, MeasuresTheGridAndFitsEveryTermOfTheStepCost) {
  ManualClock clock;
  PricedLm lm(clock);
  size_t heard = 0;
  auto p = profile_steps(lm, {.max_seqs = 8, .max_batched_tokens = 64, .runs = 5}, clock,
                         [&](const StepProfilePoint&) { ++heard; });
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(lm.warmed);
  // Prefills of 8..64 tokens (4), decodes of 1..8 sequences (4) at 8, 32,
  // 128, 512 and 599 positions (5).
  EXPECT_EQ(p->points.size(), 4u + 4u * 5u);
  EXPECT_EQ(heard, p->points.size());
  EXPECT_EQ(lm.steps, p->points.size() * 5);
  EXPECT_EQ(p->points.back().decodes, 8u);
  EXPECT_EQ(p->points.back().position, 599u);
  EXPECT_NEAR(p->cost.step_us, 200, 1e-3);
  EXPECT_NEAR(p->cost.token_us, 10, 1e-3);
  EXPECT_NEAR(p->cost.context_us, 0.1, 1e-6);
  EXPECT_NEAR(p->cost.prefill_token_us, 3, 1e-3);
  EXPECT_EQ(p->cost.between_us, 0) << "the engine's time is not the model's";
  for (const StepProfilePoint& q : p->points) EXPECT_NEAR(q.p50_us, q.fitted_us, 1e-2);
  ASSERT_FALSE(p->cost.spread.empty());
  EXPECT_NEAR(p->cost.spread.back().ratio, 1, 1e-5);
  // Every point is in the grid, and a step on one is priced at its median.
  ASSERT_EQ(p->cost.grid.size(), p->points.size());
  const GenStepCost priced = GenStepCost::of(p->cost);
  for (const StepProfilePoint& q : p->points) {
    const double us = std::chrono::duration<double, std::micro>(
                          priced.of_step(q.decodes, q.prefill_tokens,
                                         static_cast<uint64_t>(q.decodes) * q.position))
                          .count();
    EXPECT_NEAR(us, q.p50_us, 0.01) << q.decodes << " decodes at " << q.position;
  }
}

TEST(StepProfileTest, AModelWithNoRoomForADecodeIsNamed) {
  ManualClock clock;
  PricedLm lm(clock);
  const_cast<LmInfo&>(lm.info()).context_length = 1;
  auto p = profile_steps(lm, {}, clock);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "model 'priced' has no room for one decode (context 1, 4 cache blocks)");
}

}  // namespace
}  // namespace batchscope

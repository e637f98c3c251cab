// SPDX-License-Identifier: GPL-3.0-or-later
// The step cost's spread per row of decodes and for the steps with a
// prefill: measured from step records, drawn by the predictor by each step's
// decodes, written and read back, refined bucket by bucket; and why: a run
// on a model whose steps do not follow a straight line is predicted again
// from its own measured cost.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "generation/synthetic_lm.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_cost.h"

namespace batchscope {
namespace {

using std::chrono::microseconds;

StepRecord step_of(uint64_t n, double at_us, double us, uint32_t decodes, uint32_t prefill = 0) {
  StepRecord s;
  s.step = n;
  s.start = TimePoint(std::chrono::seconds(1)) +
            std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(at_us));
  s.end =
      s.start + std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us));
  s.decodes = decodes;
  s.prefill_tokens = prefill;
  s.running = decodes;
  return s;
}

double median_of(const std::vector<StepSpreadPoint>& spread) {
  for (const StepSpreadPoint& p : spread) {
    if (p.q >= 0.5 - 1e-9) return p.ratio;
  }
  return 0;
}

// Steps of 1, 4 and 16 decodes at 600, 1000 and 1600 us (times 0.95..1.05),
// most of them of one decode, and 30 with a prefill of 10 tokens.
std::vector<StepRecord> bent_steps() {
  std::vector<StepRecord> out;
  double at = 0;
  for (int i = 0; i < 400; ++i) {
    const uint32_t d = i % 8 < 5 ? 1 : i % 8 < 7 ? 4 : 16;
    const double base = d == 1 ? 600 : d == 4 ? 1000 : 1600;
    const double us = base * (0.95 + 0.1 * ((i * 37) % 21) / 20.0);
    out.push_back(step_of(out.size() + 1, at, us, d));
    at += us + 20;
    if (i % 13 == 0) {
      out.push_back(step_of(out.size() + 1, at, 2000, 1, 10));
      at += 2020;
    }
  }
  return out;
}

TEST(StepSpread, EachRowOfDecodesHasItsOwnSpreadAboutTheFit) {
  const std::vector<StepRecord> steps = bent_steps();
  Expected<StepCost> c = measure_step_cost(steps);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->spreads.size(), 4u);  // 1, 4-7, 16-31, and the prefill
  auto fit = [&](double d) { return c->step_us + c->token_us * d; };
  // Each bucket's median over the fit puts it back at the row's own median.
  EXPECT_EQ(c->spreads[0].decodes_from, 1u);
  EXPECT_EQ(c->spreads[0].steps, 250u);
  EXPECT_NEAR(median_of(c->spreads[0].spread) * fit(1), 600, 600 * 0.02);
  EXPECT_EQ(c->spreads[1].decodes_from, 4u);
  EXPECT_EQ(c->spreads[1].decodes_to, 7u);
  EXPECT_NEAR(median_of(c->spreads[1].spread) * fit(4), 1000, 1000 * 0.02);
  EXPECT_EQ(c->spreads[2].decodes_from, 16u);
  EXPECT_NEAR(median_of(c->spreads[2].spread) * fit(16), 1600, 1600 * 0.02);
  EXPECT_TRUE(c->spreads[3].prefill);
  EXPECT_EQ(c->spreads[3].steps, 31u);
  EXPECT_NEAR(median_of(c->spreads[3].spread), 1, 1e-9) << "all prefills cost the same";
  // The line misses the bent rows in opposite directions, so one pooled
  // spread would lend one row's factors to the other.
  EXPECT_GT(median_of(c->spreads[1].spread), 1.05 * median_of(c->spreads[0].spread));
  EXPECT_GT(median_of(c->spreads[1].spread), 1.05 * median_of(c->spreads[2].spread));

  // The predictor draws by the step's decodes: its own bucket, the nearest
  // where it has none, the prefill bucket for a step with a prefill.
  const GenStepCost g = GenStepCost::of(*c);
  EXPECT_DOUBLE_EQ(g.factor_at(0.5, 1, false), median_of(c->spreads[0].spread));
  EXPECT_DOUBLE_EQ(g.factor_at(0.5, 5, false), median_of(c->spreads[1].spread));
  EXPECT_DOUBLE_EQ(g.factor_at(0.5, 9, false), median_of(c->spreads[1].spread)) << "8-15: nearest";
  EXPECT_DOUBLE_EQ(g.factor_at(0.5, 40, false), median_of(c->spreads[2].spread));
  EXPECT_DOUBLE_EQ(g.factor_at(0.5, 4, true), median_of(c->spreads[3].spread));
  EXPECT_NE(g.text().find(", by decodes 1 x"), std::string::npos) << g.text();
  EXPECT_NE(g.text().find(" prefill x1.00 (medians)"), std::string::npos) << g.text();
}

TEST(StepSpread, ARowOfFewerThanTwentyStepsHasNoneAndThePooledSpreadStandsIn) {
  std::vector<StepRecord> steps;
  double at = 0;
  for (int i = 0; i < 60; ++i) {
    const uint32_t d = i < 45 ? 1 : 8;  // 45 and 15
    steps.push_back(step_of(steps.size() + 1, at, d == 1 ? 500 : 900, d));
    at += 1000;
  }
  Expected<StepCost> c = measure_step_cost(steps);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->spreads.size(), 1u);
  EXPECT_EQ(c->spreads[0].decodes_to, 1u);
  // Nearest: eight decodes draw from the one-decode bucket.
  const GenStepCost g = GenStepCost::of(*c);
  EXPECT_DOUBLE_EQ(g.factor_at(0.5, 8, false), median_of(c->spreads[0].spread));
  // With no prefill bucket a prefilling step draws from the pooled spread.
  EXPECT_DOUBLE_EQ(g.factor_at(0.5, 1, true), median_of(c->spread));
  // A grid prices the decodes: the pooled spread only.
  StepCost gridded = *c;
  gridded.grid = {{1, 0, 0, 500}, {8, 0, 0, 900}, {1, 8, 0, 500}, {8, 8, 0, 900}};
  EXPECT_DOUBLE_EQ(GenStepCost::of(gridded).factor_at(0.5, 1, false), median_of(c->spread));
}

TEST(StepSpread, TheFileCarriesTheBucketsAndNamesABadOne) {
  Expected<StepCost> c = measure_step_cost(bent_steps());
  ASSERT_TRUE(c.ok());
  auto back = parse_step_cost_json(step_cost_json(*c, "m", "cpu"));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->spreads.size(), c->spreads.size());
  for (size_t i = 0; i < c->spreads.size(); ++i) {
    EXPECT_EQ(back->spreads[i].decodes_from, c->spreads[i].decodes_from);
    EXPECT_EQ(back->spreads[i].decodes_to, c->spreads[i].decodes_to);
    EXPECT_EQ(back->spreads[i].prefill, c->spreads[i].prefill);
    EXPECT_EQ(back->spreads[i].steps, c->spreads[i].steps);
    ASSERT_EQ(back->spreads[i].spread.size(), c->spreads[i].spread.size());
    EXPECT_DOUBLE_EQ(back->spreads[i].spread[3].ratio, c->spreads[i].spread[3].ratio);
  }
  // Version 5 had one spread; its buckets are not read.
  auto v5 = parse_step_cost_json(
      R"({"version": 5, "step_us": 1, "token_us": 2, "prefill_token_us": 3,
          "spreads": [{"decodes_from": 1, "decodes_to": 1, "spread": [{"q": 0.5, "ratio": 1}]}]})");
  ASSERT_TRUE(v5.ok()) << v5.error().message;
  EXPECT_TRUE(v5->spreads.empty());
  EXPECT_EQ(parse_step_cost_json(
                R"({"version": 6, "step_us": 1, "token_us": 2, "prefill_token_us": 3,
              "spreads": [{"decodes_from": 4, "decodes_to": 7, "spread": [{"q": 0.5, "ratio": 1}]},
                          {"decodes_from": 2, "decodes_to": 3, "spread": [{"q": 0.5, "ratio": 1}]}]})")
                .error()
                .message,
            "\"spreads\" entry 1 must be {\"decodes_from\", \"decodes_to\"} rising and apart, or "
            "{\"prefill\": true} once, with \"steps\" and a \"spread\" of rising quantiles, not "
            "{\"decodes_from\":2,\"decodes_to\":3,\"spread\":[{\"q\":0.5,\"ratio\":1}]}");
  EXPECT_FALSE(parse_step_cost_json(R"({"version": 6, "step_us": 1, "token_us": 2,
      "prefill_token_us": 3, "spreads": [{"prefill": true, "spread": []}]})")
                   .ok());
}

TEST(StepSpread, RefiningReplacesTheBucketsTheRunHasAndKeepsTheRest) {
  StepCost kept, seen;
  kept.steps = 100, kept.step_us = 1000;
  kept.spreads = {{1, 1, false, 50, {{0.5, 0.6}}}, {8, 15, false, 40, {{0.5, 1.3}}}};
  seen.steps = 100, seen.step_us = 1000;
  seen.spreads = {{1, 1, false, 30, {{0.5, 0.7}}}, {0, 0, true, 25, {{0.5, 1.1}}}};
  const StepCost now = refine_step_cost(kept, seen);
  ASSERT_EQ(now.spreads.size(), 3u);
  EXPECT_EQ(now.spreads[0].spread[0].ratio, 0.7);  // the run's
  EXPECT_EQ(now.spreads[1].decodes_from, 8u);      // kept
  EXPECT_TRUE(now.spreads[2].prefill);             // added, last
}

// A model whose steps bend away from a line (a grid of 1..16 decodes), its
// steps varying about each point: run on the predictor, its steps measured
// as a run's are, and the run predicted again from that measured cost. With
// one pooled spread the one-decode steps' low factors land on the big steps
// and ITL p50 comes out low; by decodes, it lands on the run's own.
GenRun bent_run(const GenStepCost& cost, double rate) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = rate;
  spec.duration_s = 30;
  spec.seed = 11;
  GenWorkload w(*LengthDist::parse("uniform:8,80", "prompt"),
                *LengthDist::parse("uniform:16,96", "max"), 23);
  SyntheticLmOptions m;
  m.context_length = 512;
  Options o;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 128;
  return predict_gen(spec, w, o, SyntheticLm(m).info(), cost);
}

TEST(StepSpread, ARunIsPredictedFromItsOwnCostWithoutTheBiasOfOnePooledSpread) {
  StepCost truth;
  truth.step_us = 300;
  truth.token_us = 60;
  truth.prefill_token_us = 20;
  for (uint32_t position : {0u, 256u}) {
    for (auto [d, us] :
         {std::pair{1u, 500.0}, {2u, 800.0}, {4u, 1000.0}, {8u, 1250.0}, {16u, 1600.0}}) {
      truth.grid.push_back({d, position, 0, us});
    }
  }
  truth.spread = {{0.05, 0.85}, {0.5, 1.0}, {0.95, 1.25}};
  double worst_bucketed = 0, worst_pooled = 0;
  for (double rate : {10.0, 30.0, 60.0}) {
    const GenRun live = bent_run(GenStepCost::of(truth), rate);
    Expected<StepCost> measured = measure_step_cost(live.steps);
    ASSERT_TRUE(measured.ok()) << measured.error().message;
    ASSERT_GE(measured->spreads.size(), 3u) << "rate " << rate;
    StepCost pooled = *measured;
    pooled.spreads.clear();
    const double want = summarize_gen(live, 0, 0).itl.p50;
    const double bucketed = summarize_gen(bent_run(GenStepCost::of(*measured), rate), 0, 0).itl.p50;
    const double one = summarize_gen(bent_run(GenStepCost::of(pooled), rate), 0, 0).itl.p50;
    worst_bucketed = std::max(worst_bucketed, std::abs(bucketed / want - 1));
    worst_pooled = std::max(worst_pooled, std::abs(one / want - 1));
    std::printf("rate %.0f: live ITL p50 %.3f ms, by decodes %.3f, pooled %.3f\n", rate, want,
                bucketed, one);
  }
  EXPECT_LT(worst_bucketed, 0.04);
  EXPECT_GT(worst_pooled, 2 * worst_bucketed);
}

}  // namespace
}  // namespace batchscope

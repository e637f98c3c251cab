// SPDX-License-Identifier: GPL-3.0-or-later
// A generative tune's bands and headroom: the band holds the nominal
// prediction, bisection finds known limits, and the choice is the best that
// holds, else the closest, marked fragile.
#include <gtest/gtest.h>

#include <map>

#include "tuning/gen_headroom.h"

namespace batchscope {
namespace {

Options seqs(uint32_t n) {
  Options o;
  o.max_num_seqs = n;
  return o;
}

// Per max_num_seqs: tokens/s, and a TTFT and ITL that grow with the step
// cost's slowdown and the rate.
struct SeqsShape {
  double tokens, ttft, itl;
};
GenScaledEvaluator gen_closed_form(std::map<uint32_t, SeqsShape> shapes) {
  return [shapes](const Options& o, double slow, double rate) {
    const SeqsShape& s = shapes.at(o.max_num_seqs);
    GenEvaluated e;
    e.options = o;
    e.tokens_per_s = s.tokens * rate;
    e.goodput_rps = e.tokens_per_s / 100;
    e.ttft_ms = e.ttft_p50_ms = s.ttft * slow * rate;
    e.itl_ms = e.itl_p50_ms = s.itl * slow;
    e.sent = e.ok = 100;
    return e;
  };
}

TEST(GenHeadroomTest, TheChoiceIsTheBestThatHoldsElseTheClosestMarkedFragile) {
  // Goodput first: 8 (TTFT 180 of 200: holds to 1.11x), then 4 (100: 2x).
  const GenScaledEvaluator f = gen_closed_form({{8, {1000, 180, 10}}, {4, {800, 100, 10}}});
  GenTuneResult r;
  r.slo.ttft_ms = 200;
  r.slo.itl_ms = 50;
  r.objective = GenObjective::kGoodput;
  for (uint32_t n : {8u, 4u}) r.evaluated.push_back(f(seqs(n), 1, 1));
  HeadroomSettings s;
  s.needed = 1.15;
  s.band = BandFactors{0.85, 1.15, "test"};
  GenHeadroomResult h = gen_rank_by_headroom(r, f, s);
  ASSERT_EQ(h.checked.size(), 2u);
  EXPECT_EQ(h.checked[0].options.max_num_seqs, 8u);
  ASSERT_TRUE(h.chosen());
  EXPECT_EQ(h.chosen()->options.max_num_seqs, 4u);
  EXPECT_FALSE(h.fragile());
  EXPECT_NEAR(h.checked[0].headroom->slowdown, 200.0 / 180, 0.02);
  EXPECT_NEAR(h.checked[1].headroom->slowdown, 2.0, 0.03);
  EXPECT_NEAR(h.checked[1].headroom->rate, 2.0, 0.03);
  // The band holds the nominal figures.
  const GenBand& b = *h.checked[1].band;
  EXPECT_DOUBLE_EQ(b.ttft_ms.low, 85);
  EXPECT_DOUBLE_EQ(b.ttft_ms.high, 115);
  EXPECT_LE(b.itl_ms.low, 10);
  EXPECT_GE(b.itl_ms.high, 10);
  // Needing 3x: none holds, the closest (4, 2x) is chosen, fragile.
  s.needed = 3;
  h = gen_rank_by_headroom(r, f, s);
  EXPECT_TRUE(h.fragile());
  EXPECT_EQ(h.chosen()->options.max_num_seqs, 4u);
  const std::string j = gen_headroom_json(h);
  EXPECT_NE(j.find("\"fragile\":true"), std::string::npos) << j;
  EXPECT_NE(j.find("\"ttft_ms\":[85"), std::string::npos) << j;
  const std::string table = gen_headroom_table(h, r.slo);
  EXPECT_NE(table.find("the closest: continuous scheduling, 4 sequences"), std::string::npos)
      << table;
  EXPECT_NE(table.find("fragile"), std::string::npos) << table;
}

TEST(GenHeadroomTest, AmongGoodputsThatTieTheOneWithTheMostRoomIsChosen) {
  // 8 and 16 tie on goodput (within 1%); by TTFT 8 leads, but its ITL (42
  // of 50) holds it to 1.19x; 16 holds to 1.67x (TTFT 120 of 200).
  const GenScaledEvaluator f = gen_closed_form({{8, {1000, 100, 42}}, {16, {995, 120, 20}}});
  GenTuneResult r;
  r.slo.ttft_ms = 200;
  r.slo.itl_ms = 50;
  r.objective = GenObjective::kGoodput;
  for (uint32_t n : {8u, 16u}) r.evaluated.push_back(f(seqs(n), 1, 1));
  HeadroomSettings s;
  s.needed = 1.15;
  GenHeadroomResult h = gen_rank_by_headroom(r, f, s);
  ASSERT_EQ(h.checked.size(), 2u);
  EXPECT_EQ(h.checked[0].options.max_num_seqs, 8u) << "the objective's order";
  ASSERT_TRUE(h.chosen());
  EXPECT_EQ(h.chosen()->options.max_num_seqs, 16u);
  // The latency objective keeps the lowest TTFT that holds.
  r.objective = GenObjective::kLatency;
  h = gen_rank_by_headroom(r, f, s);
  EXPECT_EQ(h.chosen()->options.max_num_seqs, 8u);
}

TEST(GenHeadroomTest, TheParetoFrontCarriesItsBandsIntoTheTuneJson) {
  const GenScaledEvaluator f = gen_closed_form({{8, {1000, 180, 10}}, {4, {800, 100, 10}}});
  GenTuneResult r;
  r.slo.ttft_ms = 200;
  r.objective = GenObjective::kGoodput;
  for (uint32_t n : {8u, 4u}) r.evaluated.push_back(f(seqs(n), 1, 1));
  r.best = r.evaluated[0];
  r.pareto = gen_pareto_front(r.evaluated);
  ASSERT_EQ(r.pareto.size(), 2u);
  HeadroomSettings s;
  s.needed = 1.15;
  s.band = BandFactors{0.85, 1.15, "test"};
  const GenHeadroomResult h = gen_rank_by_headroom(r, f, s);
  band_gen_front(r.pareto, h, f);
  for (const GenEvaluated& e : r.pareto) {
    ASSERT_TRUE(e.band) << e.options.max_num_seqs;
    EXPECT_LE(e.band->ttft_ms.low, e.ttft_ms);
    EXPECT_GE(e.band->ttft_ms.high, e.ttft_ms);
  }
  const std::string j = gen_tune_json(r);
  const size_t pareto = j.find("\"pareto\":[");
  ASSERT_NE(pareto, std::string::npos) << j;
  // Both points' bands, TTFT 180 and 100 each scaled by 0.85..1.15.
  EXPECT_NE(j.find("\"band\":{\"fast\":0.85,\"slow\":1.15,\"ttft_ms\":[153,", pareto),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"ttft_ms\":[85,", pareto), std::string::npos) << j;
  EXPECT_NE(j.find("\"headroom\":{", pareto), std::string::npos) << j;
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// How a kept cost learns how its machine moves: evidence kept with every
// refinement, the drift worked out from it and stored, the band's factors,
// busy runs kept apart and far moves held short.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/tuning/cost_points.h"
#include "tuning/cost_cache.h"
#include "tuning/cost_drift.h"

namespace batchscope {
namespace {

namespace fs = std::filesystem;
using test::points;

// A run's t(b): b = 1 and 8 at `level` times 100 and 400 us, 200 batches each.
CostModel run_at(double level) {
  return points({{1, 100 * level, 0, {}, true, 200}, {8, 400 * level, 0, {}, true, 200}});
}

// The curve the runs refine: 100 and 400 us, measured live over 1000 batches.
CostModel live_curve() {
  return points({{1, 100, 0, {}, true, 1000, "2026-12-01T10:00:00.000Z"},
                 {8, 400, 0, {}, true, 1000, "2026-12-01T10:00:00.000Z"}});
}

CostModel with_levels(CostModel m, std::initializer_list<double> levels) {
  int day = 1;
  for (double level : levels) {
    CostEvidence e =
        evidence_of(run_at(level), m, 1, "2026-12-0" + std::to_string(day++) + "T08:00:00.000Z");
    m = m.with_evidence(std::move(e));
  }
  return m;
}

TEST(CostDriftTest, EvidenceLevelIsTheBatchWeightedGeometricMeanOverTheCurve) {
  const CostModel curve = live_curve();
  // 1.2x at b = 1 over 100 batches, 0.9x at b = 8 over 300: exp((ln 1.2 + 3 ln 0.9) / 4).
  const std::vector<EvidencePoint> pts{{1, 120, 100}, {8, 360, 300}};
  EXPECT_NEAR(evidence_level(pts, curve, 1), std::exp((std::log(1.2) + 3 * std::log(0.9)) / 4),
              1e-12);
  EXPECT_EQ(evidence_level({}, curve, 1), 0);
  EXPECT_NEAR(evidence_of(run_at(1.3), curve, 1, "t").level, 1.3, 1e-12);
}

TEST(CostDriftTest, TheDriftIsWorkedOutFromKeptEvidenceAndStored) {
  const CostModel m = with_levels(live_curve(), {0.9, 1.0, 1.1, 1.2, 1.3});
  const CostDrift d = drift_of(m);
  ASSERT_TRUE(d.known());
  EXPECT_EQ(d.runs, 5u);
  EXPECT_NEAR(d.p10, 0.94, 1e-9);  // 0.9 + 0.4 * (1.0 - 0.9)
  EXPECT_NEAR(d.p50, 1.1, 1e-9);
  EXPECT_NEAR(d.p90, 1.26, 1e-9);
  EXPECT_EQ(d.oldest, "2026-12-01T08:00:00.000Z");
  EXPECT_EQ(d.newest, "2026-12-05T08:00:00.000Z");
  EXPECT_DOUBLE_EQ(d.span_s, 4 * 86400);
  EXPECT_NE(d.describe().find("0.94..1.26x"), std::string::npos) << d.describe();
  // Written and read back: the same evidence, so the same drift.
  auto back = CostModel::from_profile_json(m.to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->evidence().size(), 5u);
  EXPECT_EQ(back->evidence()[2].at, "2026-12-03T08:00:00.000Z");
  EXPECT_EQ(back->evidence()[2].points.size(), 2u);
  EXPECT_EQ(back->evidence()[2].points[1].batches, 200u);
  const CostDrift again = drift_of(*back);
  EXPECT_DOUBLE_EQ(again.p10, d.p10);
  EXPECT_DOUBLE_EQ(again.p90, d.p90);
}

TEST(CostDriftTest, RunsMadeMinutesApartSayNothingOfADrift) {
  CostModel m = live_curve();
  for (const char* at :
       {"2026-12-03T10:00:00.000Z", "2026-12-03T10:03:00.000Z", "2026-12-03T10:09:59.000Z"}) {
    m = m.with_evidence(evidence_of(run_at(1.1), m, 1, at));
  }
  CostDrift d = drift_of(m);
  EXPECT_EQ(d.runs, 3u);
  EXPECT_DOUBLE_EQ(d.span_s, 599);
  EXPECT_FALSE(d.known());
  EXPECT_EQ(d.unknown_why(),
            "the kept cost has 3 live runs over 10 minutes; a drift needs 3 over 10 minutes or "
            "more");
  m = m.with_evidence(evidence_of(run_at(1.1), m, 1, "2026-12-03T10:10:00.500Z"));
  EXPECT_TRUE(drift_of(m).known());
  EXPECT_DOUBLE_EQ(
      utc_seconds("2026-12-03T10:10:00.500Z") - utc_seconds("2026-12-03T10:00:00.000Z"), 600.5);
  EXPECT_EQ(utc_seconds("yesterday"), 0);
}

TEST(CostDriftTest, BusyEvidenceIsKeptButLeftOutOfTheDrift) {
  CostModel m = with_levels(live_curve(), {1.0, 1.1});
  CostEvidence busy = evidence_of(run_at(3.6), m, 1, "2026-12-03T08:00:00.000Z");
  busy.busy = "other processes used 1.00 cores";
  m = m.with_evidence(busy);
  EXPECT_EQ(m.evidence().size(), 3u);
  EXPECT_EQ(drift_of(m).runs, 2u);
  EXPECT_FALSE(drift_of(m).known());
  auto back = CostModel::from_profile_json(m.to_json());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->evidence()[2].busy, busy.busy);
}

TEST(CostDriftTest, TheFileKeepsTheLatestEvidenceOnly) {
  CostModel m = live_curve();
  for (size_t i = 0; i < kMaxEvidence + 5; ++i) {
    m = m.with_evidence(evidence_of(run_at(1), m, 1, "t" + std::to_string(i)));
  }
  ASSERT_EQ(m.evidence().size(), kMaxEvidence);
  EXPECT_EQ(m.evidence().front().at, "t5");
}

TEST(CostDriftTest, EvidenceThatIsNotSoIsRefusedByName) {
  const std::string base = R"({"points": [{"batch": 1, "median_us": 100}], "evidence": )";
  auto bad_lanes =
      CostModel::from_profile_json(base + R"([{"lanes": 0, "level": 1, "points": []}]})");
  ASSERT_FALSE(bad_lanes.ok());
  EXPECT_NE(bad_lanes.error().message.find("evidence[0].lanes = 0 must be a number from 1"),
            std::string::npos)
      << bad_lanes.error().message;
  auto bad_median = CostModel::from_profile_json(
      base +
      R"([{"lanes": 1, "level": 1, "points": [{"batch": 1, "median_us": -5, "batches": 1}]}]})");
  ASSERT_FALSE(bad_median.ok());
  EXPECT_NE(bad_median.error().message.find("evidence[0].points[0].median_us = -5"),
            std::string::npos)
      << bad_median.error().message;
  auto not_array = CostModel::from_profile_json(base + R"("often"})");
  ASSERT_FALSE(not_array.ok());
  EXPECT_NE(not_array.error().message.find("evidence = \"often\" must be an array"),
            std::string::npos);
}

TEST(CostDriftTest, TheBandHoldsTheNominalPrediction) {
  // Known: the drift's p10 and p90, each held on its side of 1.
  CostDrift d;
  d.runs = 5, d.p10 = 1.05, d.p50 = 1.1, d.p90 = 1.3, d.span_s = 3600;
  BandFactors f = band_factors(d);
  EXPECT_DOUBLE_EQ(f.low, 1.0);
  EXPECT_DOUBLE_EQ(f.high, 1.3);
  d.p10 = 0.8, d.p90 = 0.95;
  f = band_factors(d);
  EXPECT_DOUBLE_EQ(f.low, 0.8);
  EXPECT_DOUBLE_EQ(f.high, 1.0);
  // Not known yet: +-15%, and it says so.
  d.runs = 2;
  f = band_factors(d);
  EXPECT_DOUBLE_EQ(f.low, 0.85);
  EXPECT_DOUBLE_EQ(f.high, 1.15);
  EXPECT_NE(f.source.find("default +-15%"), std::string::npos) << f.source;
  // A margin asked for wins.
  f = band_factors(d, 0.3);
  EXPECT_DOUBLE_EQ(f.high, 1.3);
  EXPECT_DOUBLE_EQ(f.low, 0.7);
  EXPECT_EQ(f.source, "--headroom 0.3");
}

TEST(CostDriftTest, ScaledIsTheCostOnASlowerMachine) {
  const CostModel m = live_curve().with_capacity(1, 5000);
  const CostModel slow = m.scaled(1.5);
  EXPECT_DOUBLE_EQ(slow.cost_us(1), 150);
  EXPECT_DOUBLE_EQ(slow.cost_us(8), 600);
  EXPECT_DOUBLE_EQ(slow.cost_us(4), 1.5 * m.cost_us(4));
  EXPECT_DOUBLE_EQ(slow.measured_capacity(1), 5000 / 1.5);
  EXPECT_DOUBLE_EQ(m.scaled(1).cost_us(8), 400);
}

TEST(CostDriftTest, ARunBesideOtherWorkIsBusy) {
  const CostModel kept = live_curve();
  CompetingLoad load;
  load.cores = 1.0;
  load.busiest.push_back({4242, "spin", 0.98});
  RunVerdict v = judge_run(kept, run_at(1.4), 1, &load, 0.25);
  EXPECT_NE(v.busy.find("other processes used"), std::string::npos) << v.busy;
  EXPECT_NE(v.busy.find("spin"), std::string::npos) << v.busy;
  EXPECT_NEAR(v.level, 1.4, 1e-12);
  // The same load under a higher threshold: not busy.
  EXPECT_TRUE(judge_run(kept, run_at(1.0), 1, &load, 2.0).busy.empty());
}

TEST(CostDriftTest, AFarMoveIsBusyAndANearOneIsHeldToWhatTheDriftSupports) {
  // No drift yet: 3.6x is far; 1.5x is held to 1.25x; 1.2x goes through.
  const CostModel kept = live_curve();
  RunVerdict far = judge_run(kept, run_at(3.6), 1, nullptr);
  EXPECT_NE(far.busy.find("t(b) ran 3.60x the kept cost"), std::string::npos) << far.busy;
  RunVerdict held = judge_run(kept, run_at(1.5), 1, nullptr);
  EXPECT_TRUE(held.busy.empty());
  EXPECT_NEAR(held.scale, 1.25 / 1.5, 1e-12);
  EXPECT_NE(held.held.find("at most to 1.25x"), std::string::npos) << held.held;
  RunVerdict near = judge_run(kept, run_at(1.2), 1, nullptr);
  EXPECT_TRUE(near.busy.empty() && near.held.empty());
  EXPECT_EQ(near.scale, 1);
  // A drift of 0.8..1.6x known: 1.8x is within 1.25x of it, 3.6x still far.
  const CostModel moving = with_levels(kept, {0.8, 0.8, 1.0, 1.6, 1.6});
  EXPECT_TRUE(judge_run(moving, run_at(1.8), 1, nullptr).held.empty());
  EXPECT_FALSE(judge_run(moving, run_at(4.0), 1, nullptr).busy.empty());
  // A curve no run has refined takes the first run as it is.
  const CostModel profiled = points({{1, 100}, {8, 400}});
  RunVerdict first = judge_run(profiled, run_at(3.6), 1, nullptr);
  EXPECT_TRUE(first.busy.empty() && first.held.empty());
  // So does a size the curve only scaled from its profile: b = 8 here.
  const CostModel partly = points({{1, 100, 0, {}, true, 1000}, {8, 400}});
  const CostModel only_8 = points({{8, 100, 0, {}, true, 200}});
  RunVerdict correcting = judge_run(partly, only_8, 1, nullptr);
  EXPECT_TRUE(correcting.busy.empty() && correcting.held.empty()) << correcting.busy;
  EXPECT_FALSE(judge_run(partly, run_at(3.6), 1, nullptr).busy.empty());  // b = 1 is live
}

class KeptDriftTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("batchscope_drift_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    path_ = cost_cache_path(key_, dir_.string());
    ASSERT_TRUE(write_cached_cost(path_, key_, live_curve()).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }
  CostModel kept() {
    auto k = read_cached_cost(path_, key_);
    EXPECT_TRUE(k.ok() && k->has_value());
    return k.ok() && k->has_value() ? **k : CostModel();
  }
  const CostKey key_{"mlp", "sha256:abc", "cpu", R"({"machine": {"host": "a"}})"};
  fs::path dir_;
  std::string path_;
};

TEST_F(KeptDriftTest, ABusyRunIsKeptAsEvidenceAndRefinesNothing) {
  CompetingLoad load;
  load.cores = 0.98;
  load.busiest.push_back({4242, "spin", 0.98});
  auto r = refine_cached_cost(path_, key_, run_at(1.2), 1, &load);
  ASSERT_TRUE(r.ok() && r->has_value()) << (r.ok() ? "" : r.error().message);
  EXPECT_NE((*r)->busy.find("other processes used"), std::string::npos) << (*r)->busy;
  const CostModel now = kept();
  EXPECT_DOUBLE_EQ(now.cost_us(1), 100);
  EXPECT_EQ(now.points()[0].batches, 1000u);
  ASSERT_EQ(now.evidence().size(), 1u);
  EXPECT_EQ(now.evidence()[0].busy, (*r)->busy);
  EXPECT_NEAR(now.evidence()[0].level, 1.2, 1e-9);
}

TEST_F(KeptDriftTest, AQuietRunRefinesAndIsKeptAsEvidence) {
  CompetingLoad quiet;
  quiet.cores = 0.02;
  auto r = refine_cached_cost(path_, key_, run_at(1.2), 1, &quiet);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_TRUE((*r)->busy.empty());
  const CostModel now = kept();
  EXPECT_DOUBLE_EQ(now.cost_us(1), (100 * 1000 + 120 * 200) / 1200.0);
  ASSERT_EQ(now.evidence().size(), 1u);
  EXPECT_TRUE(now.evidence()[0].busy.empty());
  EXPECT_EQ(now.evidence()[0].at.size(), 24u);
}

TEST_F(KeptDriftTest, OneRunDoesNotMoveTheCostFarTheNextOnesFollow) {
  // The machine became 1.7x as slow: the first run moves the cost as a run
  // at 1.25x would; the evidence keeps what it saw.
  auto r = refine_cached_cost(path_, key_, run_at(1.7), 1);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_FALSE((*r)->held.empty());
  CostModel now = kept();
  EXPECT_DOUBLE_EQ(now.cost_us(1), (100 * 1000 + 125 * 200) / 1200.0);
  EXPECT_NEAR(now.evidence()[0].level, 1.7, 1e-9);
  // A 3.6x run is far: kept, labelled, nothing moved.
  auto far = refine_cached_cost(path_, key_, run_at(3.6), 1);
  ASSERT_TRUE(far.ok() && far->has_value());
  EXPECT_FALSE((*far)->busy.empty());
  EXPECT_DOUBLE_EQ(kept().cost_us(1), now.cost_us(1));
  // Runs at 1.7x again: the cost climbs towards them, one held step at a time.
  double last = now.cost_us(1);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(refine_cached_cost(path_, key_, run_at(1.7), 1).ok());
    const double c = kept().cost_us(1);
    EXPECT_GE(c, last);
    last = c;
  }
  EXPECT_GT(last, 140);
}

}  // namespace
}  // namespace batchscope

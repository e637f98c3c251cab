// SPDX-License-Identifier: GPL-3.0-or-later
// Lanes at once in the cost model (profile --lanes) and the predictor's use
// of them, calibration by live runs, and a generative model's step cost
// measured from step records. Worked out by hand; nothing is timed.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/tuning/cost_points.h"
#include "tuning/cost_model.h"
#include "tuning/predictor.h"
#include "tuning/step_cost.h"

namespace batchscope {
namespace {

using std::chrono::microseconds;

const char* kTwoLanes =
    R"({"points": [{"batch": 1, "median_us": 1000}, {"batch": 4, "median_us": 1600}],
  "lanes": [{"lanes": 2, "points": [{"batch": 1, "median_us": 3000, "throughput_ratio": 0.67},
                                    {"batch": 4, "median_us": 4000}]}]})";

TEST(LanesCostTest, ABatchIsPricedByTheLanesBusyWhenItStarts) {
  Expected<CostModel> m = CostModel::from_profile_json(kTwoLanes);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_DOUBLE_EQ(m->cost_us(1), 1000);
  EXPECT_DOUBLE_EQ(m->cost_us(1, 1), 1000);
  EXPECT_DOUBLE_EQ(m->cost_us(1, 2), 3000);
  EXPECT_DOUBLE_EQ(m->cost_us(2, 2), 3000 + 1000.0 / 3);  // interpolated along the 2-lane points
  EXPECT_DOUBLE_EQ(m->cost_us(4, 5), 4000);  // beyond the most lanes measured: that many's
  EXPECT_NE(m->describe().find("measured with 2 lanes at once"), std::string::npos);
  // Written and read back the same.
  Expected<CostModel> back = CostModel::from_profile_json(m->to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_DOUBLE_EQ(back->cost_us(4, 2), 4000);
  EXPECT_EQ(back->to_json(), m->to_json());
  // Without lanes measured, every busy count costs t(b).
  EXPECT_DOUBLE_EQ(test::linear(100, 10).cost_us(3, 4), 130);
}

TEST(LanesCostTest, BadLaneEntriesAreRefusedNamingTheEntryAndValue) {
  struct Case {
    const char* json;
    const char* message;
  };
  const std::vector<Case> cases = {
      {R"({"points": [{"batch": 1, "median_us": 5}], "lanes": 2})", "lanes = 2 must be an array"},
      {R"({"points": [{"batch": 1, "median_us": 5}], "lanes": [{"lanes": 1, "points": [{"batch": 1, "median_us": 5}]}]})",
       "lanes[0].lanes = 1 must be from 2 to 1024"},
      {R"({"points": [{"batch": 1, "median_us": 5}], "lanes": [{"lanes": 2.5, "points": []}]})",
       "lanes[0].lanes = 2.5 must be a whole number"},
      {R"({"points": [{"batch": 1, "median_us": 5}], "lanes": [{"lanes": 99999, "points": []}]})",
       "lanes[0].lanes = 99999 must be from 2 to 1024"},
      {R"({"points": [{"batch": 1, "median_us": 5}], "lanes": [{"lanes": 2}]})",
       "lanes[0].points = (missing) must be an array"},
      {R"({"points": [{"batch": 1, "median_us": 5}], "lanes": [{"lanes": 2, "points": [{"batch": 1, "median_us": -1}]}]})",
       "lanes[0].points[0].median_us = -1 must be from 0"},
      {R"({"points": [{"batch": 1, "median_us": 5}], "lanes": [{"lanes": 3, "points": [{"batch": 1, "median_us": 5}]}, {"lanes": 2, "points": [{"batch": 1, "median_us": 5}]}]})",
       "lanes[1].lanes = 2 must be above 3"},
      {R"({"points": [{"batch": 1, "median_us": 5}], "lanes": ["two"]})",
       "lanes[0] = \"two\" must be an object"},
  };
  for (const Case& c : cases) {
    Expected<CostModel> m = CostModel::from_profile_json(c.json);
    ASSERT_FALSE(m.ok()) << c.json;
    EXPECT_NE(m.error().message.find(c.message), std::string::npos)
        << "for " << c.json << "\n got: " << m.error().message;
  }
}

// Two requests 1 us apart, batches of one, no wait, two lanes: the first runs
// alone (1000 us), the second starts while the first runs, so two lanes are
// busy and it takes the 2-lane price (3000 us).
TEST(LanesCostTest, ThePredictorChargesTheSecondLaneItsSharedPrice) {
  Expected<CostModel> m = CostModel::from_profile_json(kTwoLanes);
  ASSERT_TRUE(m.ok()) << m.error().message;
  PredictSpec s;
  s.arrivals.pattern = Pattern::kConstant;
  s.arrivals.rate = 1e6;
  s.arrivals.duration_s = 100;
  s.arrivals.max_requests = 2;
  s.options.max_batch_size = 1;
  s.options.max_wait_us = 0;
  s.options.num_lanes = 2;
  s.cost = *m;
  auto run_times = [](const RunData& run) {
    std::vector<int64_t> us;
    for (const BatchRecord& b : run.batches) {
      us.push_back(std::chrono::duration_cast<microseconds>(b.run_end - b.run_start).count());
    }
    return us;
  };
  EXPECT_EQ(run_times(predict_run(s)), (std::vector<int64_t>{1000, 3000}));
  // Three lanes, two measured: the third, started beside two, costs what two
  // lanes at once cost.
  s.options.num_lanes = 3;
  s.arrivals.max_requests = 3;
  EXPECT_EQ(run_times(predict_run(s)), (std::vector<int64_t>{1000, 3000, 3000}));
  s.arrivals.max_requests = 2;
  // One lane: the second waits for the first and runs alone.
  s.options.num_lanes = 1;
  EXPECT_EQ(run_times(predict_run(s)), (std::vector<int64_t>{1000, 1000}));
  // Two lanes with no lanes measured: independent, as before.
  s.options.num_lanes = 2;
  s.cost = test::points({{1, 1000}, {4, 1600}});
  EXPECT_EQ(run_times(predict_run(s)), (std::vector<int64_t>{1000, 1000}));
}

// Profile 1:100 4:160 8:200 16:300; live 4:208 (x1.3) and 8:240 (x1.2).
TEST(CalibrationTest, ObservedSizesReplaceTheModelsAndTheRestScaleByTheNearestRatios) {
  const CostModel profile = test::points({{1, 100}, {4, 160}, {8, 200}, {16, 300}});
  const CostModel live = test::points({{4, 208, 0.1}, {8, 240, 0.2}});
  const CostModel m = profile.calibrated(live);
  ASSERT_EQ(m.points().size(), 4u);
  EXPECT_DOUBLE_EQ(m.cost_us(1), 130);  // held at 4's ratio below it
  EXPECT_DOUBLE_EQ(m.cost_us(4), 208);
  EXPECT_DOUBLE_EQ(m.spread(4), 0.1);
  EXPECT_DOUBLE_EQ(m.cost_us(8), 240);
  EXPECT_DOUBLE_EQ(m.cost_us(16), 360);  // held at 8's ratio above it
  // A size the profile lacks: modelled 180 at 6, seen 216 (x1.2) is inserted;
  // 1 and 4 scale by 1.2 too, 16 by 1.2.
  const CostModel six = profile.calibrated(test::points({{6, 216}}));
  ASSERT_EQ(six.points().size(), 5u);
  EXPECT_DOUBLE_EQ(six.cost_us(1), 120);
  EXPECT_DOUBLE_EQ(six.cost_us(4), 192);
  EXPECT_DOUBLE_EQ(six.cost_us(6), 216);
  EXPECT_DOUBLE_EQ(six.cost_us(16), 360);
  // Between two seen sizes the ratio is interpolated: 2 and 10 seen at x1.5
  // and x1.1 (modelled 120 and 225), so 4 (x1.4) and 8 (x1.2).
  const CostModel two = profile.calibrated(test::points({{2, 180}, {10, 247.5}}));
  EXPECT_NEAR(two.cost_us(4), 224, 1e-9);
  EXPECT_NEAR(two.cost_us(8), 240, 1e-9);
  EXPECT_NEAR(two.cost_us(1), 150, 1e-9);
}

TEST(CalibrationTest, ARunWithTwoLanesRefinesTheTwoLaneCurveAndTakesTheOverhead) {
  const CostModel profile = test::points({{1, 100}, {8, 200}});
  Expected<CostModel> live = test::points({{8, 300}}).with_overhead({10, 20, 40});
  ASSERT_TRUE(live.ok());
  const CostModel m = profile.calibrated(*live, 2);
  EXPECT_DOUBLE_EQ(m.cost_us(8), 200);     // one lane as profiled
  EXPECT_DOUBLE_EQ(m.cost_us(8, 2), 300);  // two lanes as seen
  EXPECT_DOUBLE_EQ(m.cost_us(1, 2), 150);  // scaled by x1.5
  ASSERT_EQ(m.lanes().size(), 1u);
  EXPECT_EQ(m.lanes()[0].lanes, 2u);
  // The overhead is the two-lane configurations': one lane keeps none.
  EXPECT_FALSE(m.has_overhead());
  EXPECT_EQ(m.overheads_us(2), (std::vector<double>{10, 20, 40}));
  EXPECT_EQ(m.overheads_us(3), (std::vector<double>{10, 20, 40}));
  EXPECT_TRUE(m.overheads_us(1).empty());
  EXPECT_DOUBLE_EQ(CostModel::quantile_of(m.overheads_us(2), 0.75), 30);
  // A second two-lane run refines that curve again rather than the profile.
  const CostModel again = m.calibrated(test::points({{8, 330}}), 2);
  EXPECT_DOUBLE_EQ(again.cost_us(1, 2), 165);
  EXPECT_DOUBLE_EQ(again.cost_us(8), 200);
  // What it writes, it reads back.
  Expected<CostModel> back = CostModel::from_profile_json(again.to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_DOUBLE_EQ(back->cost_us(1, 2), 165);
  EXPECT_EQ(back->overheads_us(2), (std::vector<double>{10, 20, 40}));
  // A one-lane run's overhead is the model's own, and two lanes keep theirs.
  const CostModel one = again.calibrated(*test::points({{8, 210}}).with_overhead({5, 6}), 1);
  EXPECT_EQ(one.overheads_us(1), (std::vector<double>{5, 6}));
  EXPECT_EQ(one.overheads_us(2), (std::vector<double>{10, 20, 40}));
}

TEST(CalibrationTest, ATwoLaneCurveTakesOnlyTheBatchesThatRanBesideAnother) {
  // Size 4: a batch alone takes 100 us; of a pair, the first (which starts
  // alone) 130 us and the second (which starts beside it) 160 us; five of
  // each.
  std::vector<BatchRecord> batches;
  const TimePoint t0(std::chrono::seconds(1));
  auto add = [&](int64_t start_us, int64_t us) {
    BatchRecord b;
    b.id = batches.size() + 1;
    b.size = 4;
    b.run_start = t0 + microseconds(start_us);
    b.run_end = b.run_start + microseconds(us);
    batches.push_back(b);
  };
  for (int k = 0; k < 5; ++k) {
    add(1000 * k, 100);        // alone
    add(1000 * k + 400, 130);  // the first of a pair: starts alone
    add(1000 * k + 410, 160);  // starts while the first runs
  }
  auto all = CostModel::from_batches(batches);
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_DOUBLE_EQ(all->cost_us(4), 130);  // the median of all fifteen
  auto beside = CostModel::from_batches(batches, 5, /*busy=*/2);
  ASSERT_TRUE(beside.ok()) << beside.error().message;
  EXPECT_DOUBLE_EQ(beside->cost_us(4), 160);
  // A batch that starts the moment another ends ran alone.
  batches.clear();
  for (int k = 0; k < 6; ++k) add(100 * k, 100);
  auto none = CostModel::from_batches(batches, 5, 2);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("counting those that started beside 1 running"),
            std::string::npos)
      << none.error().message;
  // Five that each start beside the one before do count.
  batches.clear();
  for (int k = 0; k < 6; ++k) add(50 * k, 100);
  auto chained = CostModel::from_batches(batches, 5, 2);
  ASSERT_TRUE(chained.ok()) << chained.error().message;
  EXPECT_DOUBLE_EQ(chained->cost_us(4), 100);
}

StepRecord step(int64_t start_us, int64_t us, uint32_t decodes, uint32_t prefill) {
  StepRecord s;
  s.start = TimePoint(microseconds(1'000'000 + start_us));
  s.end = s.start + microseconds(us);
  s.decodes = decodes;
  s.prefill_tokens = prefill;
  return s;
}

TEST(StepCostTest, FitsDecodeStepsThroughTheirMediansAndPricesPromptTokensBeyondThem) {
  // Decode steps cost 500 + 10 per sequence; one of them stalled (9000 us),
  // which the median of its count ignores. The prefilling step costs the line
  // for its 2 decodes plus 64 prompt tokens at 10 us.
  const std::vector<StepRecord> steps = {step(0, 510, 1, 0),     step(1000, 520, 2, 0),
                                         step(2000, 540, 4, 0),  step(3000, 1160, 2, 64),
                                         step(5000, 560, 6, 0),  step(6000, 520, 2, 0),
                                         step(7000, 9000, 2, 0), step(20000, 5000, 0, 0)};
  Expected<StepCost> c = measure_step_cost(steps);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->steps, 8u);
  EXPECT_EQ(c->decode_steps, 6u);
  EXPECT_NEAR(c->step_us, 500, 1e-6);
  EXPECT_NEAR(c->token_us, 10, 1e-9);
  EXPECT_NEAR(c->prefill_token_us, 10, 1e-9);
  ASSERT_EQ(c->rows.size(), 3u);  // 1, 2-3, 4-7
  EXPECT_EQ(c->rows[1].decodes_from, 2u);
  EXPECT_EQ(c->rows[1].decodes_to, 3u);
  EXPECT_EQ(c->rows[1].steps, 3u);
  EXPECT_DOUBLE_EQ(c->rows[1].median_us, 520);
  EXPECT_EQ(c->rows[2].steps, 2u);
  EXPECT_DOUBLE_EQ(c->rows[2].median_us, 560);
  const std::string json = step_cost_json(*c, "tiny_lm", "cuda:0");
  EXPECT_NE(json.find("\"synthetic_lm\": \"500.0,10.000\""), std::string::npos) << json;
  // Nothing that only decoded: an error, not a zero cost.
  EXPECT_FALSE(measure_step_cost({}).ok());
  EXPECT_FALSE(measure_step_cost(std::vector<StepRecord>{step(0, 900, 0, 64)}).ok());
}

// An engine of two lanes runs a lone batch on one lane's share of the
// threads: its own curve, apart from the batches that shared the machine
// and from a one-lane engine's.
TEST(LanesCostTest, AnEngineOfTwoLanesPricesALoneBatchWithItsOwnCurve) {
  RunData run;
  const TimePoint t0(std::chrono::seconds(3));
  uint64_t id = 1;
  auto batch = [&](uint16_t lane, int64_t start_us, int64_t us) {
    BatchRecord b;
    b.id = id++;
    b.size = 1;
    b.lane = lane;
    b.run_start = t0 + microseconds(start_us);
    b.run_end = b.run_start + microseconds(us);
    run.batches.push_back(b);
  };
  // Per period: three batches alone (300 us), then a pair, the second
  // started while the first (500 us, alone at its start) runs.
  for (int k = 0; k < 6; ++k) {
    for (int a = 0; a < 3; ++a) batch(0, 10000 * k + 1000 * a, 300);
    batch(0, 10000 * k + 5000, 500);
    batch(1, 10000 * k + 5100, 500);
  }
  run.config.options.num_lanes = 2;
  auto seen = CostModel::from_run(run, 5, 2);
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  EXPECT_DOUBLE_EQ(seen->cost_us(1), 500);  // the second of each pair
  ASSERT_EQ(seen->alone().size(), 1u);
  EXPECT_DOUBLE_EQ(seen->alone()[0].median_us, 300);  // 18 at 300, 6 at 500
  const CostModel m = test::points({{1, 200}}).calibrated(*seen, 2);
  EXPECT_DOUBLE_EQ(m.cost_us(1, 1), 200);     // a one-lane engine
  EXPECT_DOUBLE_EQ(m.cost_us(1, 2, 2), 500);  // two lanes running
  EXPECT_DOUBLE_EQ(m.cost_us(1, 1, 2), 300);  // alone in a two-lane engine
  EXPECT_DOUBLE_EQ(m.cost_us(1, 1, 3), 200);  // no three-lane entry: as before
  auto back = CostModel::from_profile_json(m.to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_DOUBLE_EQ(back->cost_us(1, 1, 2), 300);
  EXPECT_EQ(back->to_json(), m.to_json());
  // The predictor prices a lone batch of a two-lane engine so.
  PredictSpec s;
  s.arrivals.pattern = Pattern::kConstant;
  s.arrivals.rate = 100;
  s.arrivals.max_requests = 1;
  s.options.max_batch_size = 2;
  s.options.max_wait_us = 0;
  s.options.num_lanes = 2;
  s.cost = m;
  const RunData one = predict_run(s);
  ASSERT_EQ(one.batches.size(), 1u);
  EXPECT_EQ(
      std::chrono::duration_cast<microseconds>(one.batches[0].run_end - one.batches[0].run_start)
          .count(),
      300);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "common/clock.h"
#include "tuning/tune_space.h"
#include "tuning/tuner.h"

namespace batchscope {
namespace {

// ---- Pareto front and the choice ----

Evaluated point(double rps, double p99, uint64_t lost = 0, uint32_t lanes = 1) {
  Evaluated e;
  e.options.num_lanes = lanes;
  e.throughput_rps = rps;
  e.p50_ms = p99 / 2;
  e.p99_ms = p99;
  e.sent = 1000;
  e.rejected = lost;
  e.ok = e.sent - lost;
  return e;
}

TEST(TunerPareto, KeepsTheNonDominatedSortedByP99) {
  std::vector<Evaluated> points = {
      point(100, 5, 0, 1),     // A
      point(200, 10, 0, 1),    // B
      point(150, 12, 0, 1),    // C: B beats it
      point(300, 20, 100, 1),  // D: E beats it on losses
      point(300, 20, 0, 1),    // E
      point(100, 5, 0, 2),     // F: equal to A, kept
      point(50, 4, 500, 1),    // G: the lowest p99
      point(200, 10, 10, 1),   // H: B beats it on losses
  };
  const auto front = pareto_front(points);
  ASSERT_EQ(front.size(), 5u);
  EXPECT_EQ(front[0].p99_ms, 4);
  EXPECT_EQ(front[1].p99_ms, 5);
  EXPECT_EQ(front[1].options.num_lanes, 1u);  // equal points: the cheaper first
  EXPECT_EQ(front[2].p99_ms, 5);
  EXPECT_EQ(front[2].options.num_lanes, 2u);
  EXPECT_EQ(front[3].throughput_rps, 200);
  EXPECT_EQ(front[3].rejected, 0u);
  EXPECT_EQ(front[4].throughput_rps, 300);
  EXPECT_EQ(front[4].rejected, 0u);
  EXPECT_TRUE(pareto_front({}).empty());
}

bool dominates(const Evaluated& a, const Evaluated& b) {
  const bool no_worse = a.throughput_rps >= b.throughput_rps && a.p99_ms <= b.p99_ms &&
                        a.loss_rate() <= b.loss_rate();
  const bool better =
      a.throughput_rps > b.throughput_rps || a.p99_ms < b.p99_ms || a.loss_rate() < b.loss_rate();
  return no_worse && better;
}

TEST(TunerPareto, AgreesWithTheQuadraticDefinition) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(0, 12);
  std::vector<Evaluated> points;
  for (uint32_t i = 0; i < 1500; ++i) {  // few distinct values, so many ties
    Evaluated e = point(small(rng) * 10.0, small(rng) * 1.0, static_cast<uint64_t>(small(rng) % 4));
    e.options.queue_capacity = i + 1;  // identity
    points.push_back(e);
  }
  std::set<uint32_t> expected;
  for (const Evaluated& b : points) {
    const bool beaten = std::any_of(points.begin(), points.end(),
                                    [&](const Evaluated& a) { return dominates(a, b); });
    if (!beaten) expected.insert(b.options.queue_capacity);
  }
  std::set<uint32_t> got;
  for (const Evaluated& e : pareto_front(points)) got.insert(e.options.queue_capacity);
  EXPECT_EQ(got, expected);
}

TEST(TunerChooseBest, ThroughputWithinTheSloAndLossTolerance) {
  Evaluated e = point(1300, 9);
  e.rejected = 0;
  e.timed_out = 1;  // 0.1% of sent: within the tolerance
  const std::vector<Evaluated> points = {
      point(1000, 8),
      point(1200, 9.9),
      point(1500, 11),    // over the SLO
      point(1600, 5, 2),  // 0.2% rejected
      e,
  };
  auto best = choose_best(points, 10, TuneObjective::kThroughput);
  ASSERT_TRUE(best.ok()) << best.error().message;
  EXPECT_EQ(best->throughput_rps, 1300);
  EXPECT_EQ(best->timed_out, 1u);
  // A stricter tolerance refuses it.
  auto strict = choose_best(points, 10, TuneObjective::kThroughput, 0.0);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->throughput_rps, 1200);
}

Evaluated config(uint32_t lanes, int64_t wait_us, uint32_t batch, StrategyKind s, double rps,
                 double p99) {
  Evaluated e = point(rps, p99);
  e.options.num_lanes = lanes;
  e.options.max_wait_us = wait_us;
  e.options.max_batch_size = batch;
  e.options.strategy = s;
  return e;
}

TEST(TunerChooseBest, TiesGoToTheCheaperConfigurationWhateverTheOrder) {
  const auto F = StrategyKind::kFifo, A = StrategyKind::kAdaptive;
  std::vector<Evaluated> points = {
      config(2, 0, 8, F, 1000, 9),    config(1, 500, 8, F, 1000, 9),
      config(1, 100, 64, A, 1000, 9), config(1, 100, 128, F, 1000, 9),
      config(1, 100, 64, F, 1000, 9), config(1, 100, 64, F, 900, 1),
  };
  for (int round = 0; round < 6; ++round) {
    std::rotate(points.begin(), points.begin() + 1, points.end());
    auto best = choose_best(points, 10, TuneObjective::kThroughput);
    ASSERT_TRUE(best.ok());
    EXPECT_EQ(best->options.num_lanes, 1u);
    EXPECT_EQ(best->options.max_wait_us, 100);
    EXPECT_EQ(best->options.max_batch_size, 64u);
    EXPECT_EQ(best->options.strategy, F);
    EXPECT_EQ(best->throughput_rps, 1000);
  }
}

TEST(TunerChooseBest, ThroughputBandThenP99AndLatencyLowestP99) {
  const auto F = StrategyKind::kFifo;
  const std::vector<Evaluated> points = {
      config(1, 0, 8, F, 1000, 9),  config(2, 0, 8, F, 995, 6),
      config(1, 0, 32, F, 992, 5),   // within 1% of 1000, lowest p99 there; a tie...
      config(1, 0, 16, F, 993, 5),   // ...that the smaller batch wins (993 ~ 992)
      config(1, 0, 8, F, 985, 3),    // outside the 1% band; the lowest p99
      config(1, 0, 4, F, 1200, 11),  // over the SLO: not the reference
  };
  auto by_throughput = choose_best(points, 10, TuneObjective::kThroughput);
  ASSERT_TRUE(by_throughput.ok()) << by_throughput.error().message;
  EXPECT_EQ(by_throughput->p99_ms, 5);
  EXPECT_EQ(by_throughput->options.max_batch_size, 16u);
  auto by_latency = choose_best(points, 10, TuneObjective::kLatency);
  ASSERT_TRUE(by_latency.ok());
  EXPECT_EQ(by_latency->p99_ms, 3);
  EXPECT_EQ(by_latency->throughput_rps, 985);
}

TEST(TunerChooseBest, FailuresCountAsLossesAndNothingServedMeetsNothing) {
  Evaluated failing = point(0, 0);
  failing.ok = 0;
  failing.errors = failing.sent;  // every request failed: p99 over none is 0
  Evaluated some_errors = point(1000, 5);
  some_errors.errors = some_errors.sent / 100;  // 1%
  EXPECT_FALSE(meets_slo(failing, 10));
  EXPECT_FALSE(meets_slo(some_errors, 10));
  const std::vector<Evaluated> points = {failing, some_errors, point(900, 9)};
  auto best = choose_best(points, 10, TuneObjective::kLatency);
  ASSERT_TRUE(best.ok()) << best.error().message;
  EXPECT_EQ(best->throughput_rps, 900);
}

TEST(TunerChooseBest, NoSloMetNamesTheClosest) {
  Evaluated closest = point(900, 12, 0, 2);
  closest.options.max_batch_size = 48;
  const std::vector<Evaluated> points = {point(1000, 13), closest, point(1100, 11, 50)};
  auto best = choose_best(points, 10, TuneObjective::kThroughput);
  ASSERT_FALSE(best.ok());
  const std::string& m = best.error().message;
  EXPECT_NE(m.find("no configuration meets p99 <= 10 ms"), std::string::npos) << m;
  EXPECT_NE(
      m.find("closest: " + describe(closest.options) + " with p99 12 ms against the SLO of 10 ms"),
      std::string::npos)
      << m;
  // When every one loses requests, the least lossy is the closest.
  auto lossy = choose_best(std::vector<Evaluated>{point(1000, 3, 200), point(900, 30, 20, 3)}, 10,
                           TuneObjective::kLatency);
  ASSERT_FALSE(lossy.ok());
  EXPECT_NE(lossy.error().message.find("num_lanes=3 with p99 30 ms and 2% lost"), std::string::npos)
      << lossy.error().message;
  EXPECT_FALSE(choose_best({}, 10, TuneObjective::kThroughput).ok());
}

TEST(TunerEvaluated, FromARunSummary) {
  RunSummary s;
  s.sent = 100;
  s.ok = 90;
  s.rejected = 6;
  s.timed_out = 3;
  s.errors = 1;
  s.throughput_rps = 450;
  s.latency.p50_ms = 2;
  s.latency.p99_ms = 7;
  Options o;
  o.max_batch_size = 8;
  const Evaluated e = evaluator_from_runs([&](const Options&) { return s; })(o);
  EXPECT_EQ(e.options, o);
  EXPECT_EQ(e.throughput_rps, 450);
  EXPECT_EQ(e.p50_ms, 2);
  EXPECT_EQ(e.p99_ms, 7);
  EXPECT_EQ(e.ok, 90u);
  EXPECT_EQ(e.errors, 1u);
  EXPECT_DOUBLE_EQ(e.loss_rate(), 0.10);  // rejected, timed out and failed
}

// ---- the search, on a closed-form model ----
// A lane runs a batch of b in 1 + 0.05 b ms, so saturated throughput is
// lanes * 1000 b / (1 + 0.05 b); p99 is 2 + 0.1 b + max_wait_ms plus 0.5 ms per
// extra lane. Adaptive gives up 2% of throughput for 0.2 ms of p99.
Evaluated model(const Options& o) {
  const double b = o.max_batch_size, lanes = o.num_lanes, wait_ms = o.max_wait_us / 1000.0;
  const bool adaptive = o.strategy == StrategyKind::kAdaptive;
  Evaluated e;
  e.throughput_rps = lanes * 1000 * b / (1 + 0.05 * b) * (adaptive ? 0.98 : 1);
  e.p99_ms = 2 + 0.1 * b + wait_ms + 0.5 * (lanes - 1) - (adaptive ? 0.2 : 0);
  e.p50_ms = e.p99_ms / 2;
  e.sent = e.ok = 10000;
  return e;
}

TEST(TunerSearch, ExhaustiveFindsTheKnownOptimum) {
  auto space =
      TuneSpace::parse("max_batch_size=1..256,max_wait_ms=0..20,strategy=fifo|adaptive,lanes=1..4");
  ASSERT_TRUE(space.ok());
  TuneSettings settings;
  settings.slo_p99_ms = 10;
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  settings.progress = [&](uint64_t done, uint64_t total) { progress.emplace_back(done, total); };
  const TuneResult r = search(*space, Options{}, settings, model);
  EXPECT_EQ(r.method, TuneResult::Method::kExhaustive);
  EXPECT_EQ(r.space_size, 720u);
  EXPECT_EQ(r.evaluated.size(), 720u);
  EXPECT_FALSE(r.cancelled || r.out_of_time || r.out_of_budget);
  // Four lanes; 0.1 b <= 10 - 2 - 1.5 allows b = 64 (p99 9.9) at no wait.
  ASSERT_TRUE(r.best.ok()) << r.best.error().message;
  EXPECT_EQ(r.best->options.num_lanes, 4u);
  EXPECT_EQ(r.best->options.max_batch_size, 64u);
  EXPECT_EQ(r.best->options.max_wait_us, 0);
  EXPECT_EQ(r.best->options.strategy, StrategyKind::kFifo);
  EXPECT_NEAR(r.best->p99_ms, 9.9, 1e-9);
  ASSERT_EQ(progress.size(), 720u);
  EXPECT_EQ(progress.front(), (std::pair<uint64_t, uint64_t>{1, 720}));
  EXPECT_EQ(progress.back(), (std::pair<uint64_t, uint64_t>{720, 720}));
  // Adaptive combinations steered to the SLO.
  for (const Evaluated& e : r.evaluated) {
    if (e.options.strategy == StrategyKind::kAdaptive) EXPECT_EQ(e.options.target_p99_ms, 10);
  }
  EXPECT_FALSE(r.pareto.empty());
  for (const Evaluated& p : r.pareto) {
    for (const Evaluated& e : r.evaluated) EXPECT_FALSE(dominates(e, p));
  }
  // The latency objective: the lowest p99 is adaptive's on one lane, b = 1, no
  // wait (2 + 0.1 - 0.2 = 1.9 ms).
  settings.objective = TuneObjective::kLatency;
  settings.progress = nullptr;
  const TuneResult lat = search(*space, Options{}, settings, model);
  ASSERT_TRUE(lat.best.ok());
  EXPECT_EQ(lat.best->options.strategy, StrategyKind::kAdaptive);
  EXPECT_EQ(lat.best->options.num_lanes, 1u);
  EXPECT_EQ(lat.best->options.max_batch_size, 1u);
  EXPECT_EQ(lat.best->options.max_wait_us, 0);
  EXPECT_NEAR(lat.best->p99_ms, 1.9, 1e-9);
}

TEST(TunerSearch, LargeSpacesAreRefinedFromACoarseGrid) {
  // 512 x 101 x 4 = 206,848 combinations. With SLO 10.05 the highest
  // throughput is four lanes, no wait and b = 65 (p99 10.0), off the coarse
  // grid; within 1% of it, b = 63 and 64 have lower p99s.
  auto space = TuneSpace::parse("max_batch_size=2..513:1,max_wait_us=0..5000:50,lanes=1..4");
  ASSERT_TRUE(space.ok());
  TuneSettings settings;
  settings.slo_p99_ms = 10.05;
  settings.max_evaluations = 3000;
  uint64_t last_total = 0;
  settings.progress = [&](uint64_t, uint64_t total) { last_total = total; };
  const TuneResult r = search(*space, Options{}, settings, model);
  EXPECT_EQ(r.method, TuneResult::Method::kCoarseThenRefine);
  EXPECT_EQ(r.space_size, 206848u);
  EXPECT_LE(r.evaluated.size(), 3000u);
  EXPECT_GT(r.evaluated.size(), 100u);
  EXPECT_EQ(last_total, r.evaluated.size());  // ended early: (done, done)
  ASSERT_TRUE(r.best.ok()) << r.best.error().message;
  EXPECT_EQ(r.best->options.num_lanes, 4u);
  EXPECT_GE(r.best->options.max_batch_size, 63u);
  EXPECT_LE(r.best->options.max_batch_size, 64u);
  EXPECT_EQ(r.best->options.max_wait_us, 0);
  const bool climbed = std::any_of(r.evaluated.begin(), r.evaluated.end(), [](const Evaluated& e) {
    return e.options.num_lanes == 4 && e.options.max_batch_size == 65 && e.options.max_wait_us == 0;
  });
  EXPECT_TRUE(climbed);
}

TEST(TunerSearch, EvaluationBudgetBoundsTheSearch) {
  auto space = TuneSpace::parse("max_batch_size=2..513:1,max_wait_us=0..5000:50,lanes=1..4");
  ASSERT_TRUE(space.ok());
  TuneSettings settings;
  settings.slo_p99_ms = 10.05;
  settings.max_evaluations = 60;
  uint64_t last_total = 0;
  settings.progress = [&](uint64_t, uint64_t total) { last_total = total; };
  const TuneResult r = search(*space, Options{}, settings, model);
  EXPECT_LE(r.evaluated.size(), 60u);
  EXPECT_LE(last_total, 60u);
  EXPECT_TRUE(r.best.ok());
}

TEST(TunerSearch, CancelStopsEarly) {
  int calls = 0;
  TuneSettings settings;
  settings.slo_p99_ms = 10;
  settings.cancel = [&] { return calls >= 5; };
  std::pair<uint64_t, uint64_t> last;
  settings.progress = [&](uint64_t done, uint64_t total) { last = {done, total}; };
  const TuneResult r =
      search(TuneSpace::default_space(0), Options{}, settings, [&](const Options& o) {
        ++calls;
        return model(o);
      });
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(r.evaluated.size(), 5u);
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(last, (std::pair<uint64_t, uint64_t>{5, 5}));
}

TEST(TunerSearch, TimeBudgetStopsOnTheGivenClock) {
  ManualClock clock;
  TuneSettings settings;
  settings.slo_p99_ms = 10;
  settings.clock = &clock;
  settings.max_seconds = 3.5;
  const TuneResult r =
      search(TuneSpace::default_space(0), Options{}, settings, [&](const Options& o) {
        clock.advance(std::chrono::seconds(1));  // each evaluation takes a second
        return model(o);
      });
  EXPECT_EQ(r.evaluated.size(), 4u);  // started at 0, 1, 2 and 3 s
  EXPECT_TRUE(r.out_of_time);
  EXPECT_FALSE(r.cancelled);
}

TEST(TunerJson, WritesBestParetoAndCounts) {
  auto space = TuneSpace::parse("max_batch_size=32|64,lanes=1..2");
  ASSERT_TRUE(space.ok());
  TuneSettings settings;
  settings.slo_p99_ms = 11;  // b = 64 on two lanes with the base's 2 ms wait: p99 10.9
  const TuneResult r = search(*space, Options{}, settings, model);
  ASSERT_TRUE(r.best.ok());
  TuneJsonExtra extra;
  extra.measured = *r.best;
  extra.measured->throughput_rps = 1234.5;
  extra.members.emplace_back("model", "\"synthetic\"");
  const std::string json = tune_json(r, extra);
  EXPECT_EQ(json.rfind("{\"objective\":\"throughput\",\"slo_p99_ms\":11,", 0), 0u) << json;
  EXPECT_NE(json.find("\"space\":\"max_batch_size=32|64,num_lanes=1|2\",\"space_size\":4,"
                      "\"method\":\"exhaustive\",\"evaluated\":4,\"invalid\":0,\"stopped\":null"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"best\":{\"options\":{\"strategy\":\"fifo\",\"max_batch_size\":64,"
                      "\"max_wait_us\":2000,"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"predicted\":{\"throughput_rps\":"), std::string::npos) << json;
  EXPECT_NE(json.find("\"measured\":{\"throughput_rps\":1234.5,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"pareto\":[{\"options\":{"), std::string::npos) << json;
  EXPECT_EQ(json.substr(json.size() - 22), "],\"model\":\"synthetic\"}") << json;

  settings.slo_p99_ms = 1;  // out of reach
  const std::string none = tune_json(search(*space, Options{}, settings, model));
  EXPECT_NE(none.find("\"best\":null,\"error\":\"no configuration meets p99 <= 1 ms"),
            std::string::npos)
      << none;
  EXPECT_EQ(none.find("\"measured\""), std::string::npos);
}

// ---- the stability rule ----

TEST(Stability, AcceptsTheLastWindowsWithinTolerance) {
  const StabilityRule rule;
  const std::vector<WindowFigures> w = {{10, 100}, {100, 10}, {105, 10.5}, {95, 9.6}};
  EXPECT_TRUE(is_stable(rule, w));  // the early outlier is outside the last three
  EXPECT_FALSE(is_stable(rule, std::span(w).first(2)));  // too few
  EXPECT_TRUE(is_stable(rule, std::vector<WindowFigures>{{0, 0}, {0, 0}, {0, 0}}));
}

TEST(Stability, RejectsAWindowOutsideToleranceOnEitherFigure) {
  const StabilityRule rule;
  EXPECT_FALSE(is_stable(rule, std::vector<WindowFigures>{{100, 10}, {100, 10}, {125, 10}}));
  EXPECT_FALSE(is_stable(rule, std::vector<WindowFigures>{{100, 10}, {100, 10}, {100, 14}}));
  StabilityRule loose;
  loose.tolerance = 0.25;
  EXPECT_TRUE(is_stable(loose, std::vector<WindowFigures>{{100, 10}, {100, 10}, {100, 14}}));
}

TEST(Stability, ReadsRunWindows) {
  std::vector<RunWindow> w(3);
  for (RunWindow& x : w) {
    x.throughput_rps = 500;
    x.latency.p99_ms = 4;
  }
  EXPECT_TRUE(is_stable(StabilityRule{}, w));
  w[1].latency.p99_ms = 8;
  EXPECT_FALSE(is_stable(StabilityRule{}, w));
}

RunWindow window(double rps, double p99, uint64_t ok = 100) {
  RunWindow w;
  w.length_s = 1;
  w.throughput_rps = rps;
  w.latency.p99_ms = p99;
  w.latency.max_ms = p99 * 2;
  w.sent = w.ok = ok;
  return w;
}

TEST(Stability, DriverStopsOnceStable) {
  const std::vector<RunWindow> feed = {window(50, 20), window(100, 10), window(100, 10),
                                       window(100, 10), window(100, 10)};
  size_t calls = 0;
  const StableMeasurement m = measure_until_stable(StabilityRule{}, [&] { return feed[calls++]; });
  EXPECT_TRUE(m.stable);
  EXPECT_EQ(calls, 4u);
  EXPECT_EQ(m.windows.size(), 4u);
  EXPECT_EQ(m.combined.ok, 300u);
  EXPECT_EQ(m.combined.throughput_rps, 100);
  EXPECT_EQ(m.combined.latency.p99_ms, 10);
}

TEST(Stability, DriverGivesUpAtMaxTrials) {
  int calls = 0;
  StabilityRule rule;
  rule.max_trials = 7;
  const StableMeasurement m =
      measure_until_stable(rule, [&] { return window(++calls % 2 ? 50 : 150, 10); });
  EXPECT_FALSE(m.stable);
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(m.windows.size(), 7u);
  EXPECT_EQ(m.combined.length_s, 3);  // the last three
}

TEST(Stability, CombinedSumsCountsAndWeighsLatencyByOk) {
  const std::vector<RunWindow> w = {window(100, 10, 100), window(300, 20, 300)};
  const RunWindow c = combine_windows(w);
  EXPECT_EQ(c.ok, 400u);
  EXPECT_EQ(c.length_s, 2);
  EXPECT_EQ(c.throughput_rps, 200);
  EXPECT_DOUBLE_EQ(c.latency.p99_ms, 17.5);
  EXPECT_EQ(c.latency.max_ms, 40);
}

}  // namespace
}  // namespace batchscope

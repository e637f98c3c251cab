// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/arrivals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

namespace batchscope {
namespace {

using std::chrono::seconds;

std::vector<int64_t> generate(const ArrivalSpec& spec) {
  ArrivalSchedule s(spec);
  std::vector<int64_t> out;
  while (auto d = s.next()) out.push_back(d->count());
  return out;
}

std::vector<double> bin_counts(const std::vector<int64_t>& ns, double bin_s, double duration_s) {
  std::vector<double> bins(static_cast<size_t>(std::llround(duration_s / bin_s)), 0.0);
  for (int64_t t : ns) {
    const auto i = static_cast<size_t>(static_cast<double>(t) * 1e-9 / bin_s);
    if (i < bins.size()) bins[i] += 1;
  }
  return bins;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double variance_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}

// A Poisson count with this mean lies within 5 sigma (+1 for tiny means)
// except with probability ~1e-6; the seeds are fixed, so this never flakes.
void expect_poisson_count(double count, double expected, const std::string& where) {
  EXPECT_NEAR(count, expected, 5 * std::sqrt(expected) + 1) << where;
}

ArrivalSpec poisson(double rate, double duration_s, uint64_t seed = 1) {
  ArrivalSpec s;
  s.pattern = Pattern::kPoisson;
  s.rate = rate;
  s.duration_s = duration_s;
  s.seed = seed;
  return s;
}

ArrivalSpec step_spec() {
  ArrivalSpec s;
  s.pattern = Pattern::kStep;
  s.steps = {{1000, 2}, {5000, 1}, {0, 1}, {3000, 0.5}};  // cycle 4.5 s
  s.duration_s = 27;
  return s;
}

// Every random pattern with a small, valid configuration.
std::vector<ArrivalSpec> random_specs() {
  std::vector<ArrivalSpec> v;
  v.push_back(poisson(500, 5));
  ArrivalSpec b;
  b.pattern = Pattern::kBurst;
  b.rate = 800;
  b.rate_low = 50;
  b.on_s = 0.3;
  b.off_s = 0.7;
  b.duration_s = 5;
  v.push_back(b);
  ArrivalSpec r;
  r.pattern = Pattern::kRamp;
  r.rate_from = 0;
  r.rate_to = 1000;
  r.duration_s = 5;
  v.push_back(r);
  ArrivalSpec st = step_spec();
  st.duration_s = 5;
  v.push_back(st);
  ArrivalSpec sn;
  sn.pattern = Pattern::kSine;
  sn.rate_min = 0;
  sn.rate_max = 900;
  sn.period_s = 2;
  sn.duration_s = 5;
  v.push_back(sn);
  return v;
}

TEST(Arrivals, PatternNamesRoundTrip) {
  for (const char* name :
       {"constant", "poisson", "burst", "ramp", "step", "sine", "trace", "closed"}) {
    auto p = parse_pattern(name);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_STREQ(pattern_name(*p), name);
  }
  EXPECT_FALSE(parse_pattern("Poisson").has_value());
  EXPECT_FALSE(parse_pattern("").has_value());
}

TEST(Arrivals, SameSeedSameScheduleDifferentSeedDifferent) {
  for (ArrivalSpec spec : random_specs()) {
    SCOPED_TRACE(spec.describe());
    const auto a = generate(spec);
    const auto b = generate(spec);
    ASSERT_GT(a.size(), 100u);
    EXPECT_EQ(a, b);
    spec.seed = 2;
    EXPECT_NE(a, generate(spec));
  }
}

TEST(Arrivals, EveryPatternIsOrderedAndInsideTheRun) {
  auto specs = random_specs();
  ArrivalSpec c;
  c.pattern = Pattern::kConstant;
  c.rate = 333;
  c.duration_s = 3;
  specs.push_back(c);
  for (const ArrivalSpec& spec : specs) {
    SCOPED_TRACE(spec.describe());
    const auto ns = generate(spec);
    ASSERT_FALSE(ns.empty());
    EXPECT_GE(ns.front(), 0);
    EXPECT_LT(ns.back(), std::llround(spec.duration_s * 1e9));
    EXPECT_TRUE(std::is_sorted(ns.begin(), ns.end()));
  }
}

TEST(Arrivals, NextStaysNulloptOnceOver) {
  ArrivalSpec spec = poisson(100, 0.5);
  ArrivalSchedule s(spec);
  uint64_t n = 0;
  while (s.next()) ++n;
  EXPECT_EQ(s.emitted(), n);
  EXPECT_FALSE(s.next().has_value());
  EXPECT_FALSE(s.next().has_value());
}

TEST(Arrivals, PoissonCountsAndGapsHavePoissonStatistics) {
  const double rate = 2000, duration = 100, bin_s = 0.1;  // ~200k arrivals
  const auto ns = generate(poisson(rate, duration, 42));
  const auto n = static_cast<double>(ns.size());
  expect_poisson_count(n, rate * duration, "total");
  EXPECT_GT(ns.front(), 0) << "poisson's first arrival comes after one gap, not at 0";

  // Counts in fixed bins: mean and variance both equal rate * bin.
  const auto bins = bin_counts(ns, bin_s, duration);
  const double lambda = rate * bin_s, k = static_cast<double>(bins.size());
  EXPECT_NEAR(mean_of(bins), lambda, 5 * std::sqrt(lambda / k));
  // Var of the sample variance of Poisson(lambda) counts: (lambda + 2 lambda^2) / k.
  EXPECT_NEAR(variance_of(bins), lambda, 5 * std::sqrt((lambda + 2 * lambda * lambda) / k));

  // Gaps: mean 1/rate, coefficient of variation 1, P(gap < mean) = 1 - 1/e.
  std::vector<double> gaps;
  for (size_t i = 1; i < ns.size(); ++i) gaps.push_back(static_cast<double>(ns[i] - ns[i - 1]));
  const double g = static_cast<double>(gaps.size());
  const double mean_ns = 1e9 / rate;
  EXPECT_NEAR(mean_of(gaps), mean_ns, 5 * mean_ns / std::sqrt(g));
  const double cv = std::sqrt(variance_of(gaps)) / mean_of(gaps);
  EXPECT_NEAR(cv, 1.0, 5 * std::sqrt(2.0 / g) + 0.005);
  double below = 0;
  for (double x : gaps) below += x < mean_ns ? 1 : 0;
  const double p = 1 - std::exp(-1.0);
  EXPECT_NEAR(below / g, p, 5 * std::sqrt(p * (1 - p) / g));
}

TEST(Arrivals, ConstantIsExactlySpacedFromZero) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kConstant;
  spec.rate = 1000;
  spec.duration_s = 2;
  const auto ns = generate(spec);
  ASSERT_EQ(ns.size(), 2000u);  // 2 * 1000 is whole: the one at exactly 2 s is excluded
  for (size_t i = 0; i < ns.size(); ++i) ASSERT_EQ(ns[i], static_cast<int64_t>(i) * 1'000'000);

  spec.rate = 3;
  spec.duration_s = 1;
  EXPECT_EQ(generate(spec), (std::vector<int64_t>{0, 333'333'333, 666'666'666}));

  spec.rate = 7;
  spec.duration_s = 1.5;  // 10.5 arrivals' worth: 0/7 .. 10/7
  EXPECT_EQ(generate(spec).size(), 11u);
}

TEST(Arrivals, BurstCountsFollowOnAndOffWindows) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kBurst;
  spec.rate = 5000;
  spec.rate_low = 500;
  spec.on_s = 0.5;
  spec.off_s = 1.5;
  spec.duration_s = 40;
  spec.seed = 7;
  const auto bins = bin_counts(generate(spec), 0.5, spec.duration_s);
  ArrivalSchedule sched(spec);
  for (size_t i = 0; i < bins.size(); ++i) {
    const bool on = i % 4 == 0;  // 0.5 s on, then three 0.5 s bins off
    const double rate = on ? 5000 : 500;
    expect_poisson_count(bins[i], rate * 0.5, "bin " + std::to_string(i));
    const auto mid = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double>((static_cast<double>(i) + 0.5) * 0.5));
    EXPECT_EQ(sched.rate_at(mid), rate) << i;
  }
}

TEST(Arrivals, BurstWithSilentOffPeriodsSendsOnlyWhenOn) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kBurst;
  spec.rate = 2000;
  spec.rate_low = 0;
  spec.on_s = 0.25;
  spec.off_s = 0.75;
  spec.duration_s = 20;
  const auto ns = generate(spec);
  expect_poisson_count(static_cast<double>(ns.size()), 2000 * 0.25 * 20, "total");
  for (int64_t t : ns) ASSERT_LT(t % 1'000'000'000, 250'000'000) << t;
}

TEST(Arrivals, RampCountsFollowTheIntegratedRate) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kRamp;
  spec.rate_from = 500;
  spec.rate_to = 20000;
  spec.duration_s = 20;
  const double slope = (20000.0 - 500.0) / 20;
  const auto bins = bin_counts(generate(spec), 1, spec.duration_s);
  ArrivalSchedule sched(spec);
  for (size_t i = 0; i < bins.size(); ++i) {
    const double a = static_cast<double>(i), b = a + 1;
    const double expected = 500 * (b - a) + slope * (b * b - a * a) / 2;
    expect_poisson_count(bins[i], expected, "bin " + std::to_string(i));
    EXPECT_NEAR(sched.rate_at(seconds(i)), 500 + slope * a, 1e-6);
  }
  EXPECT_EQ(sched.rate_at(seconds(20)), 0) << "no rate at or after the duration";
}

TEST(Arrivals, FallingRampAndRampFromZero) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kRamp;
  spec.rate_from = 10000;
  spec.rate_to = 0;
  spec.duration_s = 10;
  auto bins = bin_counts(generate(spec), 1, 10);
  for (size_t i = 0; i < bins.size(); ++i) {
    const double a = static_cast<double>(i), b = a + 1;
    expect_poisson_count(bins[i], 10000 * (b - a) - 1000 * (b * b - a * a) / 2,
                         "falling bin " + std::to_string(i));
  }
  std::swap(spec.rate_from, spec.rate_to);
  bins = bin_counts(generate(spec), 1, 10);
  for (size_t i = 0; i < bins.size(); ++i) {
    const double a = static_cast<double>(i), b = a + 1;
    expect_poisson_count(bins[i], 1000 * (b * b - a * a) / 2, "rising bin " + std::to_string(i));
  }
}

TEST(Arrivals, SineCountsFollowTheIntegratedRate) {
  struct Case {
    double rate_min, rate_max, period_s, duration_s, bin_s;
  };
  for (const Case& c : {Case{200, 6000, 10, 30, 0.5}, Case{0, 20000, 0.8, 8, 0.05}}) {
    ArrivalSpec spec;
    spec.pattern = Pattern::kSine;
    spec.rate_min = c.rate_min;
    spec.rate_max = c.rate_max;
    spec.period_s = c.period_s;
    spec.duration_s = c.duration_s;
    SCOPED_TRACE(spec.describe());
    const double m = (c.rate_min + c.rate_max) / 2, amp = (c.rate_max - c.rate_min) / 2;
    const double w = 2 * std::numbers::pi / c.period_s;
    auto integral = [&](double t) { return m * t - amp * std::sin(w * t) / w; };
    const auto ns = generate(spec);
    expect_poisson_count(static_cast<double>(ns.size()), integral(c.duration_s), "total");
    const auto bins = bin_counts(ns, c.bin_s, c.duration_s);
    for (size_t i = 0; i < bins.size(); ++i) {
      const double a = static_cast<double>(i) * c.bin_s;
      expect_poisson_count(bins[i], integral(a + c.bin_s) - integral(a),
                           "bin " + std::to_string(i));
    }
  }
  ArrivalSpec spec;
  spec.pattern = Pattern::kSine;
  spec.rate_min = 200;
  spec.rate_max = 6000;
  spec.period_s = 10;
  spec.duration_s = 30;
  ArrivalSchedule sched(spec);
  EXPECT_NEAR(sched.rate_at(seconds(0)), 200, 1e-9);
  EXPECT_NEAR(sched.rate_at(seconds(5)), 6000, 1e-9);
  EXPECT_NEAR(sched.rate_at(std::chrono::milliseconds(2500)), 3100, 1e-6);
  EXPECT_NEAR(sched.rate_at(seconds(10)), 200, 1e-9);
}

TEST(Arrivals, StepCountsFollowEachLevelAndCycle) {
  const ArrivalSpec spec = step_spec();
  // The levels in 0.5 s bins: 1000 x 4 bins, 5000 x 2, 0 x 2, 3000 x 1 (4.5 s cycle).
  const std::vector<double> cycle = {1000, 1000, 1000, 1000, 5000, 5000, 0, 0, 3000};
  const auto bins = bin_counts(generate(spec), 0.5, spec.duration_s);
  ASSERT_EQ(bins.size(), 54u);
  ArrivalSchedule sched(spec);
  for (size_t i = 0; i < bins.size(); ++i) {
    const double rate = cycle[i % cycle.size()];
    if (rate == 0) {
      EXPECT_EQ(bins[i], 0) << "bin " << i;
    } else {
      expect_poisson_count(bins[i], rate * 0.5, "bin " + std::to_string(i));
    }
    const auto mid = std::chrono::milliseconds(static_cast<int64_t>(i) * 500 + 250);
    EXPECT_EQ(sched.rate_at(mid), rate) << i;
  }
}

TEST(Arrivals, StepStartingSilentWaitsForTheFirstNonzeroLevel) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kStep;
  spec.steps = {{0, 1}, {100, 1}};
  spec.duration_s = 2;
  const auto ns = generate(spec);
  ASSERT_FALSE(ns.empty());
  EXPECT_GE(ns.front(), 1'000'000'000);
}

TEST(Arrivals, TinyStepsAreSkippedWholeCyclesAtATime) {
  // 2e8 cycles of 2 us with 1e-6 expected arrivals each: ~200 arrivals. A
  // walk over every segment would take seconds; skipping cycles takes none.
  ArrivalSpec spec;
  spec.pattern = Pattern::kStep;
  spec.steps = {{0, 1e-6}, {1, 1e-6}};
  spec.duration_s = 400;
  const auto ns = generate(spec);
  expect_poisson_count(static_cast<double>(ns.size()), 200, "total");
  // The skip must keep the leftover mass: arrivals spread uniformly over the
  // live microsecond of each cycle, not piled up at its start.
  std::vector<double> phase;
  for (int64_t t : ns) phase.push_back(static_cast<double>(t % 2000));
  for (double p : phase) ASSERT_GE(p, 1000) << "an arrival in a silent step";
  const double n = static_cast<double>(phase.size());
  EXPECT_NEAR(mean_of(phase), 1500, 5 * 1000 / std::sqrt(12 * n));
}

TEST(Arrivals, MaxRequestsCapsEveryPattern) {
  auto specs = random_specs();
  ArrivalSpec c;
  c.pattern = Pattern::kConstant;
  specs.push_back(c);
  ArrivalSpec t;
  t.pattern = Pattern::kTrace;
  t.trace = {seconds(0), seconds(1), seconds(2), seconds(3)};
  specs.push_back(t);
  for (ArrivalSpec spec : specs) {
    SCOPED_TRACE(spec.describe());
    const auto full = generate(spec);
    spec.max_requests = 3;
    const auto capped = generate(spec);
    ASSERT_EQ(capped.size(), 3u);
    EXPECT_TRUE(std::equal(capped.begin(), capped.end(), full.begin()));
  }
}

TEST(Arrivals, TraceReplaysExactlyAndStopsAtTheDuration) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kTrace;
  spec.trace = {Duration(0), Duration(5), Duration(5), std::chrono::milliseconds(1500), seconds(3)};
  spec.duration_s = 10;
  EXPECT_EQ(generate(spec), (std::vector<int64_t>{0, 5, 5, 1'500'000'000, 3'000'000'000}));
  spec.duration_s = 3;  // the offset at exactly 3 s is excluded
  EXPECT_EQ(generate(spec), (std::vector<int64_t>{0, 5, 5, 1'500'000'000}));
  ArrivalSchedule sched(spec);
  EXPECT_EQ(sched.rate_at(seconds(0)), 3);  // three offsets within 0.5 s of 0
  EXPECT_EQ(sched.rate_at(std::chrono::milliseconds(1700)), 1);
  EXPECT_EQ(sched.rate_at(std::chrono::milliseconds(2200)), 0);
  EXPECT_EQ(sched.rate_at(std::chrono::milliseconds(2700)), 0) << "3 s is past the duration";
}

TEST(Arrivals, TraceSpeedScalesTheOffsetsAndTheDurationStillEndsTheRun) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kTrace;
  spec.trace = {Duration(0), Duration(3), seconds(2), seconds(8)};
  spec.duration_s = 3;
  spec.trace_speed = 2;
  EXPECT_EQ(generate(spec), (std::vector<int64_t>{0, 2, 1'000'000'000}))
      << "3 ns / 2 rounds to 2; 8 s / 2 = 4 s is past the 3 s run";
  EXPECT_NE(spec.describe().find("at 2x speed"), std::string::npos) << spec.describe();
  spec.trace_speed = 0.5;
  spec.duration_s = 100;
  EXPECT_EQ(generate(spec), (std::vector<int64_t>{0, 6, 4'000'000'000, 16'000'000'000}));
}

TEST(Arrivals, ClosedHasNoSchedule) {
  ArrivalSpec spec;
  spec.pattern = Pattern::kClosed;
  spec.concurrency = 8;
  ASSERT_TRUE(spec.validate().ok());
  ArrivalSchedule s(spec);
  EXPECT_FALSE(s.next().has_value());
  EXPECT_EQ(s.rate_at(seconds(1)), 0);
}

TEST(Arrivals, InvalidSpecGivesAnEmptySchedule) {
  ArrivalSpec spec = poisson(-5, 10);
  ASSERT_FALSE(spec.validate().ok());
  EXPECT_FALSE(ArrivalSchedule(spec).next().has_value());
}

struct BadSpec {
  const char* label;
  ArrivalSpec spec;
  const char* names;  // the message must contain this
};

ArrivalSpec with(Pattern p, void (*edit)(ArrivalSpec&)) {
  ArrivalSpec s;
  s.pattern = p;
  edit(s);
  return s;
}

TEST(Arrivals, ValidateNamesTheField) {
  const double nan = std::nan("");
  const std::vector<BadSpec> cases = {
      {"negative rate", poisson(-1, 10), "rate = -1"},
      {"zero poisson rate", poisson(0, 10), "rate = 0"},
      {"nan rate", poisson(nan, 10), "rate = nan"},
      {"inf rate", poisson(INFINITY, 10), "rate = inf"},
      {"zero duration", poisson(10, 0), "duration_s = 0"},
      {"inf duration", poisson(10, INFINITY), "duration_s = inf"},
      {"on_s", with(Pattern::kBurst, [](ArrivalSpec& s) { s.on_s = 0; }), "on_s = 0"},
      {"off_s", with(Pattern::kBurst, [](ArrivalSpec& s) { s.off_s = -1; }), "off_s = -1"},
      {"rate_low", with(Pattern::kBurst, [](ArrivalSpec& s) { s.rate_low = -2; }), "rate_low = -2"},
      {"silent burst", with(Pattern::kBurst, [](ArrivalSpec& s) { s.rate = 0; }),
       "rate and rate_low"},
      {"rate_to", with(Pattern::kRamp, [](ArrivalSpec& s) { s.rate_to = -3; }), "rate_to = -3"},
      {"rate_from", with(Pattern::kRamp, [](ArrivalSpec& s) { s.rate_from = std::nan(""); }),
       "rate_from = nan"},
      {"empty steps", with(Pattern::kStep, [](ArrivalSpec&) {}), "steps is empty"},
      {"step seconds",
       with(Pattern::kStep,
            [](ArrivalSpec& s) {
              s.steps = {{10, 1}, {20, 0}};
            }),
       "steps[1].seconds = 0"},
      {"step rate",
       with(Pattern::kStep,
            [](ArrivalSpec& s) {
              s.steps = {{-10, 1}};
            }),
       "steps[0].rate = -10"},
      {"silent steps",
       with(Pattern::kStep,
            [](ArrivalSpec& s) {
              s.steps = {{0, 1}, {0, 2}};
            }),
       "every rate is 0"},
      {"period", with(Pattern::kSine, [](ArrivalSpec& s) { s.period_s = 0; }), "period_s = 0"},
      {"sine order", with(Pattern::kSine, [](ArrivalSpec& s) { s.rate_min = 50, s.rate_max = 40; }),
       "rate_max = 40"},
      {"empty trace", with(Pattern::kTrace, [](ArrivalSpec&) {}), "trace is empty"},
      {"trace order",
       with(Pattern::kTrace,
            [](ArrivalSpec& s) {
              s.trace = {seconds(2), seconds(1)};
            }),
       "trace[1] = 1000000 us"},
      {"trace speed",
       with(Pattern::kTrace,
            [](ArrivalSpec& s) {
              s.trace = {seconds(1)};
              s.trace_speed = 0;
            }),
       "trace_speed = 0"},
      {"concurrency", with(Pattern::kClosed, [](ArrivalSpec& s) { s.concurrency = 0; }),
       "concurrency = 0"},
      {"pattern", with(static_cast<Pattern>(99), [](ArrivalSpec&) {}), "pattern = 99"},
  };
  for (const BadSpec& c : cases) {
    const Status s = c.spec.validate();
    ASSERT_FALSE(s.ok()) << c.label;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument) << c.label;
    EXPECT_NE(s.message().find(c.names), std::string::npos) << c.label << ": " << s.message();
  }
  // Fields of other patterns are not judged.
  ArrivalSpec ok = poisson(10, 1);
  ok.on_s = -1;
  ok.concurrency = 0;
  EXPECT_TRUE(ok.validate().ok());
  for (const ArrivalSpec& s : random_specs()) EXPECT_TRUE(s.validate().ok()) << s.describe();
}

TEST(Arrivals, DescribeIsReadable) {
  EXPECT_EQ(poisson(2000, 10).describe(), "poisson rate=2000/s for 10 s");
  ArrivalSpec c;
  c.pattern = Pattern::kConstant;
  c.rate = 0.5;
  c.max_requests = 7;
  EXPECT_EQ(c.describe(), "constant rate=0.5/s for 10 s, at most 7 requests");
  ArrivalSpec b;
  b.pattern = Pattern::kBurst;
  b.rate = 5000;
  b.on_s = 0.5;
  b.off_s = 1.5;
  b.duration_s = 60;
  EXPECT_EQ(b.describe(), "burst rate=5000/s for 0.5 s, rate_low=0/s for 1.5 s, for 60 s");
  ArrivalSpec r;
  r.pattern = Pattern::kRamp;
  EXPECT_EQ(r.describe(), "ramp 10/s to 100/s for 10 s");
  EXPECT_EQ(step_spec().describe(),
            "step 1000/s x 2 s, 5000/s x 1 s, 0/s x 1 s, 3000/s x 0.5 s (cycling) for 27 s");
  ArrivalSpec s;
  s.pattern = Pattern::kSine;
  EXPECT_EQ(s.describe(), "sine 10/s to 100/s, period 60 s, for 10 s");
  ArrivalSpec t;
  t.pattern = Pattern::kTrace;
  t.trace = {seconds(1), seconds(2)};
  EXPECT_EQ(t.describe(), "trace 2 offsets for 10 s");
  ArrivalSpec cl;
  cl.pattern = Pattern::kClosed;
  cl.concurrency = 16;
  EXPECT_EQ(cl.describe(), "closed concurrency=16 for 10 s");
}

// Generation speed, printed rather than asserted (DESIGN.md section 6):
// run with --gtest_also_run_disabled_tests --gtest_filter='*Speed*'.
TEST(Arrivals, DISABLED_GenerationSpeed) {
  auto specs = random_specs();
  ArrivalSpec c;
  c.pattern = Pattern::kConstant;
  specs.push_back(c);
  for (ArrivalSpec spec : specs) {
    spec.duration_s = 1e7;
    spec.max_requests = 20'000'000;
    ArrivalSchedule s(spec);
    uint64_t sink = 0;  // unsigned: the sum wraps
    const auto start = std::chrono::steady_clock::now();
    while (auto d = s.next()) sink += static_cast<uint64_t>(d->count());
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%-10s %12.0f arrivals/s (%llu arrivals, checksum %llu)\n",
                pattern_name(spec.pattern), static_cast<double>(s.emitted()) / secs,
                static_cast<unsigned long long>(s.emitted()),
                static_cast<unsigned long long>(sink));
  }
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace batchscope {
namespace {

// Nearest rank computed in integers, independent of the histogram's double
// arithmetic: rank = ceil(n * num / den), at least 1.
uint64_t exact_quantile(const std::vector<uint64_t>& sorted, uint64_t num, uint64_t den) {
  const uint64_t n = sorted.size();
  uint64_t rank = (n * num + den - 1) / den;
  rank = std::clamp<uint64_t>(rank, 1, n);
  return sorted[rank - 1];
}

double relative_error(uint64_t got, uint64_t want) {
  if (want == 0) return got == 0 ? 0.0 : 1.0;
  return std::fabs(static_cast<double>(got) - static_cast<double>(want)) /
         static_cast<double>(want);
}

using Buckets = std::vector<std::tuple<uint64_t, uint64_t, uint64_t>>;

Buckets buckets_of(const LogHistogram& h) {
  Buckets out;
  h.for_each_bucket([&](uint64_t lo, uint64_t hi, uint64_t n) { out.emplace_back(lo, hi, n); });
  return out;
}

// Checks every per-mille quantile (p0.1 .. p100, p50/p90/p99/p99.9 among
// them) and the exact statistics against the sorted data.
void expect_matches(const LogHistogram& h, std::vector<uint64_t> values, double tolerance) {
  std::sort(values.begin(), values.end());
  ASSERT_EQ(h.count(), values.size());
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.max(), values.back());
  uint64_t sum = 0;
  for (uint64_t v : values) sum += v;
  EXPECT_EQ(h.sum(), sum);
  EXPECT_DOUBLE_EQ(h.mean(), static_cast<double>(sum) / static_cast<double>(values.size()));
  EXPECT_EQ(h.quantile(0.0), values.front());
  EXPECT_EQ(h.quantile(1.0), values.back());
  double worst = 0;
  for (uint64_t i = 1; i <= 1000; ++i) {
    const uint64_t want = exact_quantile(values, i, 1000);
    const uint64_t got = h.quantile(static_cast<double>(i) / 1000.0);
    const double err = relative_error(got, want);
    worst = std::max(worst, err);
    EXPECT_LE(err, tolerance) << "q=" << i << "/1000 got " << got << " want " << want;
    if (err > tolerance) return;  // one report is enough
  }
  // p99.99 as well, finer than the sweep.
  EXPECT_LE(relative_error(h.quantile(0.9999), exact_quantile(values, 9999, 10000)), tolerance);
  ::testing::Test::RecordProperty("worst_relative_error", std::to_string(worst));
}

TEST(LogHistogramTest, EmptyHistogram) {
  LogHistogram h;
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.sum(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  for (double q : {0.0, 0.5, 0.99, 1.0}) EXPECT_EQ(h.quantile(q), 0u) << q;
  EXPECT_TRUE(buckets_of(h).empty());
  EXPECT_EQ(h.memory_bytes(), 0u);
}

TEST(LogHistogramTest, NearestRankOnExactValues) {
  LogHistogram h;
  for (uint64_t v = 100; v >= 1; --v) h.record(v);  // descending on purpose
  EXPECT_EQ(h.quantile(0.5), 50u);
  EXPECT_EQ(h.quantile(0.07), 7u);  // 0.07 * 100 is 7.000000000000001 in double
  EXPECT_EQ(h.quantile(0.071), 8u);
  EXPECT_EQ(h.quantile(0.01), 1u);
  EXPECT_EQ(h.quantile(0.001), 1u);
  EXPECT_EQ(h.quantile(0.99), 99u);
  EXPECT_EQ(h.quantile(0.991), 100u);
  EXPECT_EQ(h.quantile(-1.0), 1u);
  EXPECT_EQ(h.quantile(2.0), 100u);
  EXPECT_EQ(h.quantile(std::nan("")), 1u);
}

TEST(LogHistogramTest, UniformWithinHalfPercent) {
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<uint64_t> dist(0, 1'000'000'000);
  LogHistogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 100'003; ++i) {
    values.push_back(dist(rng));
    h.record(values.back());
  }
  expect_matches(h, values, 0.005);
}

TEST(LogHistogramTest, LognormalFromOneMicrosecondToTenSecondsWithinHalfPercent) {
  std::mt19937_64 rng(777);
  const double lo = std::log(1e3), hi = std::log(1e10);
  std::lognormal_distribution<double> dist((lo + hi) / 2, (hi - lo) / 6);
  LogHistogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    const double v = std::clamp(dist(rng), 1e3, 1e10);
    values.push_back(static_cast<uint64_t>(v));
    h.record(Duration(static_cast<int64_t>(values.back())));
  }
  // The data really spans the range.
  ASSERT_LT(*std::min_element(values.begin(), values.end()), 2'000u);
  ASSERT_GT(*std::max_element(values.begin(), values.end()), 5'000'000'000u);
  expect_matches(h, values, 0.005);
}

TEST(LogHistogramTest, SmallIntegersAreExact) {
  std::mt19937_64 rng(99);
  std::uniform_int_distribution<uint64_t> dist(0, 255);
  LogHistogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 50'000; ++i) {
    values.push_back(dist(rng));
    h.record(values.back());
  }
  expect_matches(h, values, 0.0);
  // One bucket per value below 256.
  for (const auto& [lo, hi, n] : buckets_of(h)) EXPECT_EQ(lo, hi);
}

TEST(LogHistogramTest, SmallIntegersWithRepeatCounts) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<uint64_t> value(1, 600), repeat(1, 9);
  LogHistogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 5'000; ++i) {
    const uint64_t v = value(rng), n = repeat(rng);
    h.record(v, n);
    values.insert(values.end(), n, v);
  }
  h.record(42, 0);  // a zero count records nothing
  expect_matches(h, values, 0.005);
}

TEST(LogHistogramTest, MergeOfHalvesEqualsWhole) {
  std::mt19937_64 rng(2024);
  std::lognormal_distribution<double> dist(std::log(2e5), 2.0);
  LogHistogram whole, first, second;
  for (int i = 0; i < 60'000; ++i) {
    const auto v = static_cast<uint64_t>(dist(rng));
    whole.record(v);
    // Halves by value so that each covers a different bucket range.
    (v < 200'000 ? first : second).record(v);
  }
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  LogHistogram merged = second;  // merging the lower range in grows the front
  merged.merge(first);
  EXPECT_EQ(merged.count(), whole.count());
  EXPECT_EQ(merged.sum(), whole.sum());
  EXPECT_EQ(merged.min(), whole.min());
  EXPECT_EQ(merged.max(), whole.max());
  EXPECT_EQ(buckets_of(merged), buckets_of(whole));
  for (int i = 0; i <= 1000; ++i) {
    EXPECT_EQ(merged.quantile(i / 1000.0), whole.quantile(i / 1000.0)) << i;
  }
  EXPECT_TRUE(merged == whole);
}

TEST(LogHistogramTest, MergeWithEmpty) {
  LogHistogram a, empty;
  a.record(10);
  a.record(5000);
  LogHistogram b = a;
  b.merge(empty);
  EXPECT_EQ(buckets_of(b), buckets_of(a));
  EXPECT_EQ(b.count(), 2u);
  LogHistogram c;
  c.merge(a);
  EXPECT_EQ(buckets_of(c), buckets_of(a));
  EXPECT_EQ(c.min(), 10u);
  EXPECT_EQ(c.max(), 5000u);
  EXPECT_EQ(c.sum(), 5010u);
}

TEST(LogHistogramTest, ZeroAndHugeValues) {
  LogHistogram h;
  h.record(0);
  EXPECT_EQ(h.quantile(0.5), 0u);
  EXPECT_EQ(h.min(), 0u);

  const uint64_t big = uint64_t{1} << 62;
  // Values inside wide buckets, so the reported midpoint is not the value.
  const std::vector<uint64_t> huge = {big, big + (uint64_t{3} << 55) + 17,
                                      big + (uint64_t{1} << 61) + 12345, 3 * big + 5};
  LogHistogram g;
  for (uint64_t v : huge) g.record(v);
  for (size_t i = 0; i < huge.size(); ++i) {
    const double q = static_cast<double>(i + 1) / static_cast<double>(huge.size());
    EXPECT_LE(relative_error(g.quantile(q), huge[i]), 0.005) << i;
  }
  EXPECT_EQ(g.max(), 3 * big + 5);

  LogHistogram top;
  top.record(UINT64_MAX);
  top.record(UINT64_MAX);  // the sum saturates instead of wrapping
  EXPECT_EQ(top.sum(), UINT64_MAX);
  EXPECT_EQ(top.quantile(0.5), UINT64_MAX);
  const Buckets b = buckets_of(top);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(std::get<1>(b[0]), UINT64_MAX);
}

TEST(LogHistogramTest, DurationsClampNegativeToZero) {
  LogHistogram h;
  h.record(Duration(-5));
  h.record(std::chrono::microseconds(5));
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 5000u);
  EXPECT_EQ(h.sum(), 5000u);
}

TEST(LogHistogramTest, BucketsHoldTheirValuesAndAreNarrow) {
  std::mt19937_64 rng(31337);
  for (int i = 0; i < 20'000; ++i) {
    // Random magnitudes: shift a random 64-bit value right by 0..63.
    const uint64_t v = rng() >> (rng() % 64);
    LogHistogram h;
    h.record(v);
    const Buckets b = buckets_of(h);
    ASSERT_EQ(b.size(), 1u);
    const auto [lo, hi, n] = b[0];
    ASSERT_LE(lo, v);
    ASSERT_GE(hi, v);
    ASSERT_EQ(n, 1u);
    if (v < 256) {
      ASSERT_EQ(lo, hi) << v;
    } else {
      // Width (hi - lo + 1) at most lo / 128.
      ASSERT_LE(hi - lo, lo / 128) << v;
    }
  }
}

TEST(LogHistogramTest, BucketsAscendAndCountsAddUp) {
  std::mt19937_64 rng(8);
  LogHistogram h;
  for (int i = 0; i < 10'000; ++i) h.record(rng() >> (rng() % 64));
  uint64_t total = 0, previous_hi = 0;
  bool first = true;
  for (const auto& [lo, hi, n] : buckets_of(h)) {
    if (!first) {
      EXPECT_GT(lo, previous_hi);
    }
    first = false;
    EXPECT_LE(lo, hi);
    EXPECT_GT(n, 0u);
    previous_hi = hi;
    total += n;
  }
  EXPECT_EQ(total, h.count());
}

TEST(LogHistogramTest, StorageCoversOnlyTheOccupiedRange) {
  LogHistogram h;
  // Within one power of two (2^20 ns .. 2^21 ns): 128 buckets, so at most
  // 256 slots after vector growth, against 7424 for a dense table.
  for (uint64_t v = 1'100'000; v < 2'000'000; v += 997) h.record(v);
  EXPECT_LE(h.memory_bytes(), 256 * sizeof(uint64_t));
}

TEST(LogHistogramTest, ClearEmpties) {
  LogHistogram h;
  h.record(123456);
  h.clear();
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.quantile(0.5), 0u);
  EXPECT_TRUE(buckets_of(h).empty());
  h.record(7);
  EXPECT_EQ(h.min(), 7u);
  EXPECT_EQ(h.max(), 7u);
  EXPECT_EQ(h.quantile(0.5), 7u);
}

TEST(MonotoneFit, PoolsAdjacentViolators) {
  // 1051 at b = 8 and 872 at 16 pool to 961.5, below 972 at b = 4, so all
  // three pool: (972 + 1051 + 872) / 3 = 965. An increasing run stays.
  EXPECT_EQ(monotone_fit({972, 1051, 872, 1300}), (std::vector<double>{965, 965, 965, 1300}));
  // A violation that reaches back pools three: (900 + 800 + 400) / 3 = 700.
  EXPECT_EQ(monotone_fit({500, 900, 800, 400}), (std::vector<double>{500, 700, 700, 700}));
  EXPECT_EQ(monotone_fit({1, 2, 3}), (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(monotone_fit({}).empty());
  // Weighted by runs: 100 runs at 3000 us outweigh 3 at 2000 us:
  // (3000 * 100 + 2000 * 3) / 103 = 2970.87.
  const std::vector<double> w = monotone_fit({1000, 3000, 2000}, {50, 100, 3});
  EXPECT_DOUBLE_EQ(w[0], 1000);
  EXPECT_DOUBLE_EQ(w[1], (3000.0 * 100 + 2000.0 * 3) / 103);
  EXPECT_DOUBLE_EQ(w[2], w[1]);
}

TEST(EvenQuantiles, InterpolatesBetweenRanks) {
  // 0, 10, ..., 40 at p0, p1/4, ..., p100; two values, interpolated.
  EXPECT_EQ(even_quantiles({40, 0, 20, 10, 30}, 4), (std::vector<double>{0, 10, 20, 30, 40}));
  EXPECT_EQ(even_quantiles({0, 10}, 4), (std::vector<double>{0, 2.5, 5, 7.5, 10}));
  EXPECT_EQ(even_quantiles({7}).size(), 65u);
  EXPECT_TRUE(even_quantiles({}).empty());
}

}  // namespace
}  // namespace batchscope

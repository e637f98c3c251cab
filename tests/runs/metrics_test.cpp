// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace batchscope {
namespace {

using std::chrono::seconds;

const TimePoint kT0 = TimePoint(seconds(1000));  // a window boundary for 1 s windows

TimePoint metric_ms(int64_t ms) { return kT0 + milliseconds(ms); }

// An ok request with the given stage gaps; completed = run_end + `after`.
RequestRecord ok_request(TimePoint arrival, Duration wait, Duration gap, Duration run,
                         Duration after) {
  RequestRecord r;
  r.outcome = Outcome::kOk;
  r.times.arrival = arrival;
  r.times.admitted = arrival;
  r.times.batched = arrival + wait;
  r.times.run_start = r.times.batched + gap;
  r.times.run_end = r.times.run_start + run;
  r.times.completed = r.times.run_end + after;
  return r;
}

RequestRecord ok_at(TimePoint completed) {
  return ok_request(completed - microseconds(500), microseconds(100), microseconds(50),
                    microseconds(300), microseconds(50));
}

RequestRecord failed_at(TimePoint completed, Outcome o) {
  RequestRecord r;
  r.outcome = o;
  r.times.arrival = completed - milliseconds(1);
  r.times.admitted = r.times.arrival;
  r.times.completed = completed;
  return r;
}

BatchRecord batch_at(TimePoint run_end, uint32_t size, BatchReason reason, bool failed = false) {
  BatchRecord b;
  b.size = size;
  b.reason = reason;
  b.failed = failed;
  b.batched = run_end - milliseconds(1);
  b.run_start = run_end - microseconds(500);
  b.run_end = run_end;
  return b;
}

DepthSample depth_at(TimePoint t, uint32_t depth, uint32_t peak) {
  return DepthSample{t, depth, peak};
}

RecordBatch one(RequestRecord r) {
  RecordBatch b;
  b.requests.push_back(r);
  return b;
}

TimePoint window(int64_t second) { return TimePoint(seconds(second)); }

std::vector<TimePoint> starts(const MetricsAggregator& m) {
  std::vector<TimePoint> out;
  for (const MetricsWindow& w : m.windows()) out.push_back(w.start);
  return out;
}

TEST(MetricsAggregatorTest, RecordsOnBoundariesLandInTheLaterWindow) {
  MetricsAggregator m;
  RecordBatch b;
  b.requests.push_back(ok_at(kT0));                          // exactly on 1000 s
  b.requests.push_back(ok_at(kT0 + Duration(999'999'999)));  // last ns of 1000 s
  b.requests.push_back(ok_at(kT0 + seconds(1)));             // exactly on 1001 s
  b.requests.push_back(ok_at(kT0 - Duration(1)));            // last ns of 999 s
  m.fold(b);
  ASSERT_EQ(starts(m), (std::vector<TimePoint>{window(999), window(1000), window(1001)}));
  EXPECT_EQ(m.windows()[0].count(Outcome::kOk), 1u);
  EXPECT_EQ(m.windows()[1].count(Outcome::kOk), 2u);
  EXPECT_EQ(m.windows()[2].count(Outcome::kOk), 1u);
  EXPECT_EQ(m.windows()[1].length, seconds(1));
  EXPECT_EQ(m.totals().count(Outcome::kOk), 4u);
  EXPECT_EQ(m.late_records(), 0u);
}

TEST(MetricsAggregatorTest, LatenciesComeFromStageTimesOfOkRequestsOnly) {
  MetricsAggregator m;
  RecordBatch b;
  b.requests.push_back(ok_request(metric_ms(100), microseconds(300), microseconds(100),
                                  microseconds(1000), microseconds(50)));
  b.requests.push_back(failed_at(metric_ms(200), Outcome::kTimedOut));
  m.fold(b);
  ASSERT_EQ(m.windows().size(), 1u);
  const MetricsWindow& w = m.windows()[0];
  EXPECT_EQ(w.count(Outcome::kOk), 1u);
  EXPECT_EQ(w.count(Outcome::kTimedOut), 1u);
  EXPECT_EQ(w.requests(), 2u);
  ASSERT_EQ(w.queue_wait_ns.count(), 1u);
  EXPECT_EQ(w.queue_wait_ns.max(), 300'000u);
  EXPECT_EQ(w.run_ns.max(), 1'000'000u);
  EXPECT_EQ(w.total_ns.max(), 1'450'000u);  // 300 + 100 + 1000 + 50 us
  const LatencySummary s = summarize(w.total_ns);
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.p50_us, 1450.0);
  EXPECT_DOUBLE_EQ(s.p99_us, 1450.0);
  EXPECT_DOUBLE_EQ(s.max_us, 1450.0);
  EXPECT_DOUBLE_EQ(s.mean_us, 1450.0);
}

TEST(MetricsAggregatorTest, PrepareAndPostprocessStagesOnlyWhereTheRecordsMarkThem) {
  MetricsAggregator m;
  RecordBatch b;
  // Prepared: 200 us waiting for a process, 700 us in it; 40 us postprocess.
  RequestRecord r = ok_request(metric_ms(100), microseconds(1000), microseconds(100),
                               microseconds(300), microseconds(50));
  r.times.prepare_start = r.times.arrival + microseconds(200);
  r.times.admitted = r.times.arrival + microseconds(900);
  r.times.post_start = r.times.run_end - microseconds(40);
  b.requests.push_back(r);
  // Neither: admitted late (a lock's wait) without a stage's start.
  RequestRecord plain = ok_request(metric_ms(150), microseconds(300), microseconds(100),
                                   microseconds(300), microseconds(50));
  plain.times.admitted = plain.times.arrival + microseconds(100);
  b.requests.push_back(plain);
  m.fold(b);
  ASSERT_EQ(m.windows().size(), 1u);
  const MetricsWindow& w = m.windows()[0];
  ASSERT_EQ(w.stages.of(RunStage::kPreprocessWait).count(), 1u);
  EXPECT_EQ(w.stages.of(RunStage::kPreprocessWait).max(), 200'000u);
  ASSERT_EQ(w.stages.of(RunStage::kPreprocess).count(), 1u);
  EXPECT_EQ(w.stages.of(RunStage::kPreprocess).max(), 700'000u);
  ASSERT_EQ(w.stages.of(RunStage::kPostprocess).count(), 1u);
  EXPECT_EQ(w.stages.of(RunStage::kPostprocess).max(), 40'000u);
  EXPECT_EQ(w.run_ns.count(), 2u);
}

TEST(MetricsAggregatorTest, SummarizeInMicroseconds) {
  LogHistogram h;
  for (uint64_t us = 1; us <= 100; ++us) h.record(microseconds(us));
  const LatencySummary s = summarize(h);
  EXPECT_EQ(s.count, 100u);
  // Nearest rank: p50 is the 50th value (50 us), p99 the 99th; within 0.5%.
  EXPECT_NEAR(s.p50_us, 50.0, 0.25);
  EXPECT_NEAR(s.p90_us, 90.0, 0.45);
  EXPECT_NEAR(s.p95_us, 95.0, 0.48);
  EXPECT_NEAR(s.p99_us, 99.0, 0.5);
  EXPECT_DOUBLE_EQ(s.max_us, 100.0);
  EXPECT_DOUBLE_EQ(s.mean_us, 50.5);
  EXPECT_EQ(summarize(LogHistogram{}).p99_us, 0.0);
}

TEST(MetricsAggregatorTest, CountsPerWindowAndTotalsMatchHandComputedValues) {
  MetricsAggregator m;
  RecordBatch b;
  // Window 1000 s.
  for (int i = 0; i < 3; ++i) b.requests.push_back(ok_at(metric_ms(100 + i)));
  b.requests.push_back(failed_at(metric_ms(200), Outcome::kRejected));
  b.requests.push_back(failed_at(metric_ms(300), Outcome::kTimedOut));
  b.requests.push_back(failed_at(metric_ms(999), Outcome::kTimedOut));
  b.batches.push_back(batch_at(metric_ms(100), 4, BatchReason::kFull));
  b.batches.push_back(batch_at(metric_ms(200), 2, BatchReason::kTimeout));
  b.batches.push_back(batch_at(metric_ms(300), 3, BatchReason::kTimeout, /*failed=*/true));
  b.depth.push_back(depth_at(metric_ms(10), 5, 7));
  b.depth.push_back(depth_at(metric_ms(20), 3, 3));
  b.depth.push_back(depth_at(metric_ms(30), 1, 9));
  // Window 1001 s.
  b.requests.push_back(failed_at(metric_ms(1500), Outcome::kCancelled));
  b.batches.push_back(batch_at(metric_ms(1600), 8, BatchReason::kDrain));
  b.depth.push_back(depth_at(metric_ms(1700), 10, 2));
  b.dropped = 4;
  m.fold(b);

  ASSERT_EQ(m.windows().size(), 2u);
  const MetricsWindow& a = m.windows()[0];
  EXPECT_EQ(a.count(Outcome::kOk), 3u);
  EXPECT_EQ(a.count(Outcome::kRejected), 1u);
  EXPECT_EQ(a.count(Outcome::kTimedOut), 2u);
  EXPECT_EQ(a.count(Outcome::kCancelled), 0u);
  EXPECT_EQ(a.batches, 3u);
  EXPECT_EQ(a.count(BatchReason::kFull), 1u);
  EXPECT_EQ(a.count(BatchReason::kTimeout), 2u);
  EXPECT_EQ(a.count(BatchReason::kDrain), 0u);
  EXPECT_EQ(a.failed_batches, 1u);
  EXPECT_DOUBLE_EQ(a.mean_batch_size(), 3.0);
  EXPECT_EQ(a.batch_sizes.count(), 3u);
  EXPECT_EQ(a.batch_sizes.min(), 2u);
  EXPECT_EQ(a.batch_sizes.max(), 4u);
  EXPECT_EQ(a.max_queue_depth, 9u);
  EXPECT_DOUBLE_EQ(a.mean_queue_depth(), 3.0);
  EXPECT_EQ(a.dropped, 0u);
  EXPECT_DOUBLE_EQ(a.throughput_per_s(), 3.0);

  const MetricsWindow& c = m.windows()[1];
  EXPECT_EQ(c.count(Outcome::kCancelled), 1u);
  EXPECT_EQ(c.requests(), 1u);
  EXPECT_EQ(c.batches, 1u);
  EXPECT_EQ(c.count(BatchReason::kDrain), 1u);
  EXPECT_DOUBLE_EQ(c.mean_batch_size(), 8.0);
  EXPECT_EQ(c.max_queue_depth, 10u);
  EXPECT_DOUBLE_EQ(c.mean_queue_depth(), 10.0);
  EXPECT_EQ(c.dropped, 4u);  // dropped records go to the newest window

  const MetricsWindow& t = m.totals();
  EXPECT_EQ(t.count(Outcome::kOk), 3u);
  EXPECT_EQ(t.count(Outcome::kTimedOut), 2u);
  EXPECT_EQ(t.requests(), 7u);
  EXPECT_EQ(t.batches, 4u);
  EXPECT_EQ(t.count(BatchReason::kFull), 1u);
  EXPECT_EQ(t.count(BatchReason::kTimeout), 2u);
  EXPECT_EQ(t.count(BatchReason::kDrain), 1u);
  EXPECT_EQ(t.failed_batches, 1u);
  EXPECT_DOUBLE_EQ(t.mean_batch_size(), 17.0 / 4.0);
  EXPECT_EQ(t.max_queue_depth, 10u);
  EXPECT_DOUBLE_EQ(t.mean_queue_depth(), 19.0 / 4.0);
  EXPECT_EQ(t.dropped, 4u);
  EXPECT_EQ(t.start, window(1000));
  EXPECT_EQ(t.length, seconds(2));
  EXPECT_EQ(t.total_ns.count(), 3u);
}

TEST(MetricsAggregatorTest, BatchWithoutRunEndUsesBatchedTime) {
  MetricsAggregator m;
  RecordBatch b;
  BatchRecord never_ran;
  never_ran.size = 5;
  never_ran.reason = BatchReason::kDrain;
  never_ran.failed = true;
  never_ran.batched = metric_ms(2500);
  b.batches.push_back(never_ran);
  m.fold(b);
  ASSERT_EQ(starts(m), std::vector<TimePoint>{window(1002)});
  EXPECT_EQ(m.windows()[0].batches, 1u);
}

TEST(MetricsAggregatorTest, RequestWithoutCompletionUsesItsLatestStage) {
  MetricsAggregator m;
  RequestRecord r;
  r.outcome = Outcome::kRejected;
  r.times.arrival = metric_ms(3200);
  m.fold(one(r));
  ASSERT_EQ(starts(m), std::vector<TimePoint>{window(1003)});
  EXPECT_EQ(m.windows()[0].count(Outcome::kRejected), 1u);
}

TEST(MetricsAggregatorTest, EvictsBeyondHistoryButKeepsTotals) {
  MetricsAggregator m(seconds(1), 3);
  for (int s = 0; s < 5; ++s) m.fold(one(ok_at(metric_ms(s * 1000 + 500))));
  EXPECT_EQ(starts(m), (std::vector<TimePoint>{window(1002), window(1003), window(1004)}));
  for (const MetricsWindow& w : m.windows()) EXPECT_EQ(w.count(Outcome::kOk), 1u);
  EXPECT_EQ(m.totals().count(Outcome::kOk), 5u);
  EXPECT_EQ(m.late_records(), 0u);

  // Window 1001 was evicted: the late record counts in totals only.
  m.fold(one(ok_at(metric_ms(1500))));
  EXPECT_EQ(m.windows().size(), 3u);
  EXPECT_EQ(m.windows()[0].start, window(1002));
  EXPECT_EQ(m.windows()[0].count(Outcome::kOk), 1u);
  EXPECT_EQ(m.totals().count(Outcome::kOk), 6u);
  EXPECT_EQ(m.late_records(), 1u);
}

TEST(MetricsAggregatorTest, OutOfOrderAcrossFolds) {
  MetricsAggregator m(seconds(1), 5);
  m.fold(one(ok_at(metric_ms(3100))));  // 1003
  m.fold(one(ok_at(metric_ms(1100))));  // 1001, before anything kept: opened in front
  EXPECT_EQ(starts(m), (std::vector<TimePoint>{window(1001), window(1002), window(1003)}));
  EXPECT_EQ(m.windows()[0].count(Outcome::kOk), 1u);
  EXPECT_EQ(m.windows()[1].count(Outcome::kOk), 0u);
  m.fold(one(ok_at(metric_ms(2900))));  // 1002, in the middle
  EXPECT_EQ(m.windows()[1].count(Outcome::kOk), 1u);

  m.fold(one(ok_at(metric_ms(5000))));  // 1005: windows 1001..1005
  EXPECT_EQ(m.windows().size(), 5u);
  m.fold(one(ok_at(metric_ms(0))));  // 1000 is 5 windows older than 1005: gone
  EXPECT_EQ(m.late_records(), 1u);
  EXPECT_EQ(m.windows().front().start, window(1001));
  m.fold(one(ok_at(metric_ms(4999))));  // 1004, still kept
  EXPECT_EQ(m.windows()[3].count(Outcome::kOk), 1u);
  m.fold(one(ok_at(metric_ms(6000))));  // 1006 evicts 1001
  EXPECT_EQ(starts(m), (std::vector<TimePoint>{window(1002), window(1003), window(1004),
                                               window(1005), window(1006)}));
  EXPECT_EQ(m.windows()[0].count(Outcome::kOk), 1u);
  EXPECT_EQ(m.totals().count(Outcome::kOk), 7u);
  EXPECT_EQ(m.late_records(), 1u);
}

TEST(MetricsAggregatorTest, OrderWithinOneFoldDoesNotMatter) {
  // Requests are placed before depth samples. A record 10 windows later in
  // the same fold evicts the early record's window whichever kind it is.
  for (bool early_is_request : {true, false}) {
    MetricsAggregator m(seconds(1), 3);
    RecordBatch b;
    if (early_is_request) {
      b.requests.push_back(ok_at(metric_ms(100)));
      b.depth.push_back(depth_at(metric_ms(10'100), 4, 4));
    } else {
      b.requests.push_back(ok_at(metric_ms(10'100)));
      b.depth.push_back(depth_at(metric_ms(100), 4, 4));
    }
    m.fold(b);
    EXPECT_EQ(m.late_records(), 1u) << early_is_request;
    ASSERT_EQ(m.windows().size(), 1u);
    EXPECT_EQ(m.windows()[0].start, window(1010));
    EXPECT_EQ(m.windows()[0].requests(), early_is_request ? 0u : 1u);
    EXPECT_EQ(m.windows()[0].depth_samples, early_is_request ? 1u : 0u);
    EXPECT_EQ(m.totals().requests(), 1u);
    EXPECT_EQ(m.totals().depth_samples, 1u);
  }
}

TEST(MetricsAggregatorTest, IdleGapsAreEmptyWindowsAndLongJumpsRestart) {
  MetricsAggregator m(seconds(1), 4);
  m.fold(one(ok_at(metric_ms(0))));
  m.fold(one(ok_at(metric_ms(2000))));
  EXPECT_EQ(starts(m), (std::vector<TimePoint>{window(1000), window(1001), window(1002)}));
  EXPECT_EQ(m.windows()[1].requests(), 0u);

  m.fold(one(ok_at(metric_ms(100'000))));  // 1100: far beyond history
  EXPECT_EQ(starts(m), std::vector<TimePoint>{window(1100)});
  m.fold(one(ok_at(metric_ms(98'000))));  // 1098: within history of 1100
  EXPECT_EQ(starts(m), (std::vector<TimePoint>{window(1098), window(1099), window(1100)}));
  EXPECT_EQ(m.windows()[0].requests(), 1u);
  EXPECT_EQ(m.late_records(), 0u);

  EXPECT_EQ(m.totals().start, window(1000));
  EXPECT_EQ(m.totals().length, seconds(101));
  EXPECT_DOUBLE_EQ(m.totals().throughput_per_s(), 4.0 / 101.0);
}

TEST(MetricsAggregatorTest, MergedCoversWindowsStartingInRange) {
  MetricsAggregator m;
  RecordBatch b;
  const int ok_per_window[] = {2, 3, 1, 4};
  for (int w = 0; w < 4; ++w) {
    for (int i = 0; i < ok_per_window[w]; ++i)
      b.requests.push_back(ok_at(metric_ms(w * 1000 + 10 * i + 1)));
  }
  b.requests.push_back(failed_at(metric_ms(2500), Outcome::kRejected));
  b.batches.push_back(batch_at(metric_ms(1200), 3, BatchReason::kFull));
  b.batches.push_back(batch_at(metric_ms(2200), 1, BatchReason::kTimeout));
  m.fold(b);

  const MetricsWindow mid = m.merged(kT0 + seconds(1), kT0 + seconds(3));  // 1001, 1002
  EXPECT_EQ(mid.start, window(1001));
  EXPECT_EQ(mid.length, seconds(2));
  EXPECT_EQ(mid.count(Outcome::kOk), 4u);
  EXPECT_EQ(mid.count(Outcome::kRejected), 1u);
  EXPECT_EQ(mid.batches, 2u);
  EXPECT_DOUBLE_EQ(mid.mean_batch_size(), 2.0);
  EXPECT_EQ(mid.total_ns.count(), 4u);
  EXPECT_DOUBLE_EQ(mid.throughput_per_s(), 2.0);

  // Only the start decides: [1000.5 s, 1001.5 s) holds window 1001 alone.
  const MetricsWindow one_window = m.merged(metric_ms(500), metric_ms(1500));
  EXPECT_EQ(one_window.count(Outcome::kOk), 3u);
  EXPECT_EQ(one_window.length, seconds(1));

  const MetricsWindow all = m.merged(TimePoint{}, kNever);
  EXPECT_EQ(all.count(Outcome::kOk), 10u);
  EXPECT_EQ(all.length, seconds(4));

  const MetricsWindow none = m.merged(metric_ms(10'000), metric_ms(20'000));
  EXPECT_EQ(none.requests(), 0u);
  EXPECT_EQ(none.start, metric_ms(10'000));
  EXPECT_EQ(none.length, Duration::zero());
  EXPECT_EQ(none.throughput_per_s(), 0.0);
}

TEST(MetricsAggregatorTest, WindowKeysFloorBeforeTheEpoch) {
  MetricsAggregator m(milliseconds(250), 10);
  EXPECT_EQ(m.window_key(TimePoint{}), 0);
  EXPECT_EQ(m.window_key(TimePoint(Duration(-1))), -1);
  EXPECT_EQ(m.window_key(TimePoint(milliseconds(-250))), -1);
  EXPECT_EQ(m.window_key(TimePoint(milliseconds(-250) - Duration(1))), -2);
  EXPECT_EQ(m.window_key(TimePoint(milliseconds(250))), 1);
  RecordBatch b;
  b.depth.push_back(depth_at(TimePoint(Duration(-1)), 2, 2));
  b.depth.push_back(depth_at(TimePoint(milliseconds(300)), 6, 6));
  m.fold(b);
  EXPECT_EQ(starts(m), (std::vector<TimePoint>{TimePoint(milliseconds(-250)), TimePoint{},
                                               TimePoint(milliseconds(250))}));
  EXPECT_EQ(m.windows()[0].max_queue_depth, 2u);
  EXPECT_EQ(m.windows()[2].max_queue_depth, 6u);
}

TEST(MetricsAggregatorTest, DroppedWithoutRecordsGoesToTotalsAndNewestWindow) {
  MetricsAggregator m;
  RecordBatch b;
  b.dropped = 3;
  m.fold(b);  // no window yet
  EXPECT_EQ(m.totals().dropped, 3u);
  EXPECT_TRUE(m.windows().empty());
  m.fold(one(ok_at(metric_ms(100))));
  b.dropped = 2;
  m.fold(b);
  EXPECT_EQ(m.windows().back().dropped, 2u);
  EXPECT_EQ(m.totals().dropped, 5u);
}

TEST(MetricsAggregatorTest, ResetForgetsEverything) {
  MetricsAggregator m;
  m.fold(one(ok_at(metric_ms(100))));
  m.reset();
  EXPECT_TRUE(m.windows().empty());
  EXPECT_EQ(m.totals().requests(), 0u);
  EXPECT_EQ(m.totals().length, Duration::zero());
  m.fold(one(ok_at(metric_ms(5100))));
  EXPECT_EQ(starts(m), std::vector<TimePoint>{window(1005)});
}

// Seeded random traffic folded in ragged, locally shuffled chunks must agree
// with a per-window tally computed straight from the timestamps.
TEST(MetricsAggregatorTest, RandomTrafficAgreesWithGroundTruth) {
  const Duration len = milliseconds(100);
  const int64_t len_ns = len.count();
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> when(0, 3'000'000'000);  // 3 s of traffic
  std::uniform_int_distribution<int> outcome(0, kOutcomeCount - 1),
      reason(0, kBatchReasonCount - 1);
  std::uniform_int_distribution<uint32_t> size(1, 400), depth(0, 5000);
  std::uniform_int_distribution<int64_t> stage(0, 2'000'000);

  struct Truth {
    uint64_t outcomes[kOutcomeCount] = {};
    uint64_t batches = 0, reasons[kBatchReasonCount] = {}, failed = 0, size_sum = 0;
    uint64_t depth_samples = 0, depth_sum = 0, depth_max = 0;
    uint64_t latency_count = 0, total_max = 0, wait_sum = 0;
  };
  std::map<int64_t, Truth> truth;  // key: whole windows since the epoch
  Truth all;
  auto key = [&](TimePoint t) { return t.time_since_epoch().count() / len_ns; };  // t > 0

  std::vector<RequestRecord> requests(6000);
  for (RequestRecord& r : requests) {
    r.outcome = static_cast<Outcome>(outcome(rng));
    const int64_t wait = stage(rng), gap = stage(rng), run = stage(rng), after = stage(rng);
    r.times.completed = kT0 + Duration(when(rng));
    r.times.run_end = r.times.completed - Duration(after);
    r.times.run_start = r.times.run_end - Duration(run);
    r.times.batched = r.times.run_start - Duration(gap);
    r.times.arrival = r.times.admitted = r.times.batched - Duration(wait);
    for (Truth* t : {&truth[key(r.times.completed)], &all}) {
      ++t->outcomes[static_cast<int>(r.outcome)];
      if (r.outcome == Outcome::kOk) {
        ++t->latency_count;
        t->total_max = std::max<uint64_t>(t->total_max, wait + gap + run + after);
        t->wait_sum += wait;
      }
    }
  }
  std::vector<BatchRecord> batches(900);
  for (BatchRecord& b : batches) {
    b.size = size(rng);
    b.reason = static_cast<BatchReason>(reason(rng));
    b.failed = rng() % 10 == 0;
    b.run_end = kT0 + Duration(when(rng));
    b.batched = b.run_end - milliseconds(2);
    for (Truth* t : {&truth[key(b.run_end)], &all}) {
      ++t->batches;
      ++t->reasons[static_cast<int>(b.reason)];
      t->failed += b.failed ? 1 : 0;
      t->size_sum += b.size;
    }
  }
  std::vector<DepthSample> samples(700);
  for (DepthSample& d : samples) {
    d.time = kT0 + Duration(when(rng));
    d.depth = depth(rng);
    d.peak = d.depth + depth(rng) % 7;
    for (Truth* t : {&truth[key(d.time)], &all}) {
      ++t->depth_samples;
      t->depth_sum += d.depth;
      t->depth_max = std::max<uint64_t>(t->depth_max, d.peak);
    }
  }

  // Time order, then swaps up to 40 places apart so records cross chunks.
  auto jumble = [&](auto& v, auto time_of) {
    std::sort(v.begin(), v.end(),
              [&](const auto& a, const auto& b) { return time_of(a) < time_of(b); });
    for (size_t i = 0; i + 40 < v.size(); ++i) std::swap(v[i], v[i + rng() % 40]);
  };
  jumble(requests, [](const RequestRecord& r) { return r.times.completed; });
  jumble(batches, [](const BatchRecord& b) { return b.run_end; });
  jumble(samples, [](const DepthSample& d) { return d.time; });

  MetricsAggregator m(len, 1000);
  size_t ri = 0, bi = 0, di = 0;
  while (ri < requests.size() || bi < batches.size() || di < samples.size()) {
    RecordBatch chunk;
    for (size_t n = rng() % 150; n > 0 && ri < requests.size(); --n)
      chunk.requests.push_back(requests[ri++]);
    for (size_t n = rng() % 25; n > 0 && bi < batches.size(); --n)
      chunk.batches.push_back(batches[bi++]);
    for (size_t n = rng() % 20; n > 0 && di < samples.size(); --n)
      chunk.depth.push_back(samples[di++]);
    m.fold(chunk);
  }

  EXPECT_EQ(m.late_records(), 0u);
  const int64_t first = truth.begin()->first, last = truth.rbegin()->first;
  ASSERT_EQ(m.windows().size(), static_cast<size_t>(last - first + 1));
  for (size_t i = 0; i < m.windows().size(); ++i) {
    const MetricsWindow& w = m.windows()[i];
    const int64_t k = first + static_cast<int64_t>(i);
    ASSERT_EQ(w.start, TimePoint(Duration(k * len_ns)));
    const Truth t = truth.count(k) ? truth[k] : Truth{};
    for (int o = 0; o < kOutcomeCount; ++o)
      EXPECT_EQ(w.outcomes[o], t.outcomes[o]) << k << " " << o;
    EXPECT_EQ(w.batches, t.batches) << k;
    for (int r = 0; r < kBatchReasonCount; ++r) EXPECT_EQ(w.batch_reasons[r], t.reasons[r]) << k;
    EXPECT_EQ(w.failed_batches, t.failed) << k;
    EXPECT_EQ(w.batch_size_sum, t.size_sum) << k;
    EXPECT_EQ(w.batch_sizes.count(), t.batches) << k;
    EXPECT_EQ(w.depth_samples, t.depth_samples) << k;
    EXPECT_EQ(w.depth_sum, t.depth_sum) << k;
    EXPECT_EQ(w.max_queue_depth, t.depth_max) << k;
    EXPECT_EQ(w.total_ns.count(), t.latency_count) << k;
    EXPECT_EQ(w.total_ns.max(), t.total_max) << k;
    EXPECT_EQ(w.queue_wait_ns.sum(), t.wait_sum) << k;
  }
  const MetricsWindow& tot = m.totals();
  for (int o = 0; o < kOutcomeCount; ++o) EXPECT_EQ(tot.outcomes[o], all.outcomes[o]);
  EXPECT_EQ(tot.batches, all.batches);
  EXPECT_EQ(tot.batch_size_sum, all.size_sum);
  EXPECT_EQ(tot.max_queue_depth, all.depth_max);
  EXPECT_EQ(tot.depth_sum, all.depth_sum);
  EXPECT_EQ(tot.total_ns.count(), all.latency_count);
  EXPECT_EQ(tot.total_ns.max(), all.total_max);
  EXPECT_EQ(tot.queue_wait_ns.sum(), all.wait_sum);
  EXPECT_EQ(tot.length, len * (last - first + 1));
}

}  // namespace
}  // namespace batchscope

namespace batchscope {
namespace {

TEST(MetricsArrivals, CountInTheWindowTheRequestArrivedInWhateverItsOutcome) {
  MetricsAggregator agg(std::chrono::seconds(1), 10);
  const TimePoint t0 = TimePoint(std::chrono::seconds(1000));
  RecordBatch b;
  // Arrived in window 0, finished in window 1.
  RequestRecord slow;
  slow.outcome = Outcome::kOk;
  slow.times.arrival = t0 + std::chrono::milliseconds(900);
  slow.times.batched = slow.times.run_start = slow.times.arrival;
  slow.times.run_end = slow.times.completed = t0 + std::chrono::milliseconds(1200);
  b.requests.push_back(slow);
  RequestRecord rejected;
  rejected.outcome = Outcome::kRejected;
  rejected.times.arrival = rejected.times.completed = t0 + std::chrono::milliseconds(100);
  b.requests.push_back(rejected);
  agg.fold(b);
  ASSERT_EQ(agg.windows().size(), 2u);
  EXPECT_EQ(agg.windows()[0].arrivals, 2u);  // offered: both arrived in window 0
  EXPECT_EQ(agg.windows()[1].arrivals, 0u);
  EXPECT_EQ(agg.windows()[0].count(Outcome::kOk), 0u);  // the ok one finished in window 1
  EXPECT_EQ(agg.windows()[1].count(Outcome::kOk), 1u);
  EXPECT_EQ(agg.totals().arrivals, 2u);
  EXPECT_EQ(agg.merged(t0, t0 + std::chrono::seconds(2)).arrivals, 2u);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for RunRecorder: hand-built engine records with explicit TimePoints,
// so that what summarize_run() makes of the recorded run can be worked out on
// paper. No engine and no threads: the recorder is a pure fold.

#include "runs/run_recorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace batchscope {
namespace {

using std::chrono::seconds;

const TimePoint kRecStart = TimePoint(seconds(5000));

TimePoint rec_us(int64_t us) { return kRecStart + microseconds(us); }
TimePoint rec_ms(int64_t ms) { return kRecStart + milliseconds(ms); }

RequestRecord served(RequestId id, uint64_t batch_id, uint32_t batch_size, TimePoint arrival,
                     TimePoint batched, TimePoint run_end) {
  RequestRecord r;
  r.id = id;
  r.batch_id = batch_id;
  r.batch_size = batch_size;
  r.times.arrival = arrival;
  r.times.admitted = arrival;
  r.times.batched = batched;
  r.times.run_start = batched;
  r.times.run_end = run_end;
  r.times.completed = run_end;
  return r;
}

RequestRecord rejected(TimePoint arrival) {
  RequestRecord r;
  r.times.arrival = r.times.admitted = r.times.completed = arrival;
  r.outcome = Outcome::kRejected;
  return r;
}

BatchRecord batch_of(uint64_t id, uint32_t size, TimePoint oldest, TimePoint batched,
                     TimePoint run_end) {
  BatchRecord b;
  b.id = id;
  b.size = size;
  b.reason = BatchReason::kFull;
  b.oldest_arrival = oldest;
  b.batched = batched;
  b.run_start = batched;
  b.run_end = run_end;
  return b;
}

// Pairs of requests 10 ms apart, the second 0.5 ms after the first; each
// pair is cut as a full batch of 2 when the second arrives and runs for
// `run_us`. Records come in the order the engine reports them: a batch's
// requests and the batch together, when the batch finishes.
void add_pairs(RecordBatch& out, int first_pair, int pairs, int64_t run_us) {
  for (int p = first_pair; p < first_pair + pairs; ++p) {
    const TimePoint a = rec_ms(10 * p);
    const TimePoint cut = a + microseconds(500);
    const TimePoint end = cut + microseconds(run_us);
    const auto id = static_cast<uint64_t>(p + 1);
    out.requests.push_back(served(2 * id, id, 2, a, cut, end));
    out.requests.push_back(served(2 * id + 1, id, 2, cut, cut, end));
    out.batches.push_back(batch_of(id, 2, a, cut, end));
  }
}

TEST(RunRecorderTest, AnEngineRecordBecomesARunRequest) {
  RequestRecord r = served(7, 3, 5, rec_us(100), rec_us(900), rec_us(1500));
  r.times.completed = rec_us(1510);
  const RunRequest q = run_request_of(r);
  EXPECT_EQ(q.intended, rec_us(100));
  EXPECT_EQ(q.sent, rec_us(100));
  EXPECT_EQ(q.done, rec_us(1510));
  EXPECT_EQ(q.outcome, Outcome::kOk);
  EXPECT_EQ(q.batch_id, 3u);
  EXPECT_EQ(q.batch_size, 5u);
  EXPECT_EQ(q.http_status, 0);

  // Without a completion stamp the latest stage reached stands in.
  r.times.completed = TimePoint{};
  EXPECT_EQ(run_request_of(r).done, rec_us(1500));
  RequestRecord queued_only;
  queued_only.times.arrival = queued_only.times.admitted = rec_us(40);
  queued_only.outcome = Outcome::kTimedOut;
  EXPECT_EQ(run_request_of(queued_only).done, rec_us(40));
}

TEST(RunRecorderTest, TheSummaryOfARecordedRunIsWhatTheRecordsImply) {
  RunRecorder rec;
  RunConfig cfg;
  cfg.pattern = "pairs every 10 ms";
  cfg.target = "inproc";
  cfg.options.max_batch_size = 2;
  rec.start(cfg, kRecStart);
  ASSERT_TRUE(rec.recording());

  // First second: runs of 1 ms, so latencies 1.5 ms and 1.0 ms; one request
  // rejected. Second second: runs of 3 ms, latencies 3.5 and 3.0 ms.
  RecordBatch first;
  add_pairs(first, 0, 100, 1000);
  first.requests.push_back(rejected(rec_us(500'250)));
  for (int k = 0; k < 10; ++k) first.depth.push_back({rec_ms(100 * k), 1, 2});
  RecordBatch second;
  add_pairs(second, 100, 100, 3000);
  for (int k = 10; k < 20; ++k) second.depth.push_back({rec_ms(100 * k), 1, 2});
  rec.add(first);
  rec.add(second);
  EXPECT_EQ(rec.requests(), 401u);
  EXPECT_EQ(rec.batches(), 200u);

  const RunData run = rec.finish(rec_ms(2000));
  EXPECT_FALSE(rec.recording());
  EXPECT_EQ(run.start, kRecStart);
  EXPECT_EQ(run.config.pattern, "pairs every 10 ms");
  EXPECT_EQ(run.config.options.max_batch_size, 2u);
  EXPECT_DOUBLE_EQ(run.config.duration_s, 2.0);
  ASSERT_EQ(run.requests.size(), 401u);
  ASSERT_EQ(run.batches.size(), 200u);
  ASSERT_EQ(run.depth.size(), 20u);

  const RunSummary s = summarize_run(run, seconds(1));
  EXPECT_EQ(s.sent, 401u);
  EXPECT_EQ(s.ok, 400u);
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.timed_out + s.errors, 0u);
  // First arrival at 0, last answer at 1990.5 + 3 ms.
  EXPECT_NEAR(s.duration_s, 1.9935, 1e-9);
  EXPECT_NEAR(s.throughput_rps, 400 / 1.9935, 1e-6);
  // 100 each at 1.0, 1.5, 3.0 and 3.5 ms; nearest rank, within 0.5%.
  EXPECT_NEAR(s.latency.p50_ms, 1.5, 1.5 * 0.005);
  EXPECT_NEAR(s.latency.p99_ms, 3.5, 3.5 * 0.005);
  EXPECT_NEAR(s.latency.max_ms, 3.5, 3.5 * 0.005);
  EXPECT_NEAR(s.latency.mean_ms, 2.25, 2.25 * 0.005);
  EXPECT_DOUBLE_EQ(s.lag_max_ms, 0.0);  // the engine sends when it is meant to
  EXPECT_DOUBLE_EQ(s.batch_mean, 2.0);
  EXPECT_EQ(s.batch_histogram.at(2), 200u);
  EXPECT_DOUBLE_EQ(s.depth_mean, 1.0);
  EXPECT_EQ(s.depth_max, 2u);

  ASSERT_EQ(s.windows.size(), 2u);
  const RunWindow& w0 = s.windows[0];
  EXPECT_EQ(w0.sent, 201u);
  EXPECT_EQ(w0.ok, 200u);
  EXPECT_EQ(w0.rejected, 1u);
  EXPECT_DOUBLE_EQ(w0.throughput_rps, 200.0);
  EXPECT_NEAR(w0.latency.p50_ms, 1.0, 1.0 * 0.005);
  EXPECT_NEAR(w0.latency.p99_ms, 1.5, 1.5 * 0.005);
  EXPECT_DOUBLE_EQ(w0.batch_mean, 2.0);
  const RunWindow& w1 = s.windows[1];
  EXPECT_EQ(w1.sent, 200u);
  EXPECT_EQ(w1.ok, 200u);
  EXPECT_NEAR(w1.length_s, 0.9935, 1e-9);
  EXPECT_NEAR(w1.throughput_rps, 200 / 0.9935, 1e-6);
  EXPECT_NEAR(w1.latency.p50_ms, 3.0, 3.0 * 0.005);
  EXPECT_NEAR(w1.latency.p99_ms, 3.5, 3.5 * 0.005);
}

TEST(RunRecorderTest, RecordsOutsideTheSpanAreLeftOut) {
  RunRecorder rec;
  rec.start(RunConfig{}, kRecStart);
  RecordBatch in;
  // Arrived before the start, answered inside: not part of the run, nor is
  // the batch it was cut into before the start.
  in.requests.push_back(served(1, 1, 1, rec_us(-1000), rec_us(-200), rec_us(300)));
  in.batches.push_back(batch_of(1, 1, rec_us(-1000), rec_us(-200), rec_us(300)));
  // Exactly at the start: in. Just before the end: in.
  in.requests.push_back(served(2, 2, 1, rec_us(0), rec_us(400), rec_us(900)));
  in.batches.push_back(batch_of(2, 1, rec_us(0), rec_us(400), rec_us(900)));
  in.requests.push_back(served(3, 3, 1, rec_us(9999), rec_us(9999), rec_us(10'500)));
  in.batches.push_back(batch_of(3, 1, rec_us(9999), rec_us(9999), rec_us(10'500)));
  // Exactly at the end and later: out.
  in.requests.push_back(served(4, 4, 1, rec_us(10'000), rec_us(10'000), rec_us(10'600)));
  in.batches.push_back(batch_of(4, 1, rec_us(10'000), rec_us(10'000), rec_us(10'600)));
  in.requests.push_back(rejected(rec_us(12'000)));
  in.depth = {{rec_us(-50), 5, 5}, {rec_us(0), 1, 1}, {rec_us(5000), 2, 3}, {rec_us(10'000), 7, 7}};
  in.dropped = 3;
  rec.add(in);
  EXPECT_EQ(rec.dropped(), 3u);

  const RunData run = rec.finish(rec_us(10'000));
  ASSERT_EQ(run.requests.size(), 2u);
  EXPECT_EQ(run.requests[0].intended, rec_us(0));
  EXPECT_EQ(run.requests[1].intended, rec_us(9999));
  ASSERT_EQ(run.batches.size(), 2u);
  EXPECT_EQ(run.batches[0].id, 2u);
  EXPECT_EQ(run.batches[1].id, 3u);
  ASSERT_EQ(run.depth.size(), 2u);
  EXPECT_EQ(run.depth[0].time, rec_us(0));
  EXPECT_EQ(run.depth[1].time, rec_us(5000));
}

TEST(RunRecorderTest, RequestsAreIndexedInArrivalOrder) {
  RunRecorder rec;
  rec.start(RunConfig{}, kRecStart);
  // Two lanes finish out of order: batch 2 (arrivals 3 and 4 ms) is reported
  // before batch 1 (arrivals 1 and 2 ms), across two polls; a rejection at
  // 2.5 ms comes first of all. Two arrivals share 4 ms: reported order holds.
  RecordBatch poll1;
  poll1.requests.push_back(rejected(rec_us(2500)));
  poll1.requests.push_back(served(40, 2, 3, rec_us(4000), rec_us(4100), rec_us(5000)));
  poll1.requests.push_back(served(30, 2, 3, rec_us(3000), rec_us(4100), rec_us(5000)));
  poll1.requests.push_back(served(41, 2, 3, rec_us(4000), rec_us(4100), rec_us(5000)));
  poll1.batches.push_back(batch_of(2, 3, rec_us(3000), rec_us(4100), rec_us(5000)));
  RecordBatch poll2;
  poll2.requests.push_back(served(10, 1, 2, rec_us(1000), rec_us(2100), rec_us(6000)));
  poll2.requests.push_back(served(20, 1, 2, rec_us(2000), rec_us(2100), rec_us(6000)));
  poll2.batches.push_back(batch_of(1, 2, rec_us(1000), rec_us(2100), rec_us(6000)));
  poll2.depth = {{rec_us(6000), 0, 1}, {rec_us(5000), 1, 3}};
  rec.add(poll1);
  rec.add(poll2);

  const RunData run = rec.finish(rec_ms(10));
  ASSERT_EQ(run.requests.size(), 6u);
  const std::vector<int64_t> arrivals_us = {1000, 2000, 2500, 3000, 4000, 4000};
  const std::vector<uint64_t> batch_ids = {1, 1, 0, 2, 2, 2};
  const std::vector<uint32_t> sizes = {2, 2, 0, 3, 3, 3};
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RunRequest& r = run.requests[i];
    EXPECT_EQ(r.index, i);
    EXPECT_EQ(r.intended, rec_us(arrivals_us[i])) << i;
    EXPECT_EQ(r.batch_id, batch_ids[i]) << i;
    EXPECT_EQ(r.batch_size, sizes[i]) << i;
  }
  EXPECT_EQ(run.requests[2].outcome, Outcome::kRejected);
  EXPECT_EQ(run.requests[2].done, rec_us(2500));
  // The tie at 4 ms keeps the reported order: id 40 before 41. Both rode in
  // batch 2 and finished at 5 ms.
  EXPECT_EQ(run.requests[4].done, rec_us(5000));
  ASSERT_EQ(run.batches.size(), 2u);
  EXPECT_EQ(run.batches[0].id, 1u);
  EXPECT_EQ(run.batches[1].id, 2u);
  ASSERT_EQ(run.depth.size(), 2u);
  EXPECT_LT(run.depth[0].time, run.depth[1].time);
}

TEST(RunRecorderTest, NothingIsKeptOutsideARun) {
  RunRecorder rec;
  EXPECT_FALSE(rec.recording());
  RecordBatch records;
  add_pairs(records, 0, 5, 1000);
  rec.add(records);  // no run under way
  const RunData none = rec.finish(rec_ms(100));
  EXPECT_TRUE(none.requests.empty());
  EXPECT_EQ(none.start, rec_ms(100));

  rec.start(RunConfig{}, kRecStart);
  rec.add(records);
  EXPECT_EQ(rec.requests(), 10u);
  // Starting again drops the run under way.
  rec.start(RunConfig{}, rec_ms(20));
  EXPECT_EQ(rec.requests(), 0u);
  EXPECT_EQ(rec.start_time(), rec_ms(20));
  rec.add(records);  // pairs at 20, 30 and 40 ms fall in the new run
  const RunData run = rec.finish(rec_ms(100));
  EXPECT_EQ(run.requests.size(), 6u);
  EXPECT_EQ(run.batches.size(), 3u);
  // After finish() the recorder is idle again.
  rec.add(records);
  EXPECT_EQ(rec.requests(), 0u);
}

TEST(RunRecorderTest, AnEmptyRunSummarizesToNothing) {
  RunRecorder rec;
  rec.start(RunConfig{}, kRecStart);
  const RunData run = rec.finish(rec_ms(500));
  EXPECT_TRUE(run.requests.empty());
  EXPECT_DOUBLE_EQ(run.config.duration_s, 0.5);
  const RunSummary s = summarize_run(run);
  EXPECT_EQ(s.sent, 0u);
  EXPECT_TRUE(s.windows.empty());
}

}  // namespace
}  // namespace batchscope

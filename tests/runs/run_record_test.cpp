// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for summarize_run() and the run exports. Runs are built by hand with
// explicit TimePoints so every expected figure can be worked out on paper;
// the exports are parsed back with nlohmann/json (test-only dependency).

#include "runs/run_record.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace batchscope {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

const TimePoint kStart = TimePoint(seconds(1000));

TimePoint at_us(int64_t us) { return kStart + microseconds(us); }
TimePoint at_ms(int64_t ms) { return kStart + milliseconds(ms); }

RunRequest request(uint64_t index, TimePoint intended, TimePoint sent, TimePoint done,
                   Outcome outcome = Outcome::kOk) {
  RunRequest r;
  r.index = index;
  r.intended = intended;
  r.sent = sent;
  r.done = done;
  r.outcome = outcome;
  return r;
}

BatchRecord batch(uint64_t id, uint32_t size, uint16_t lane, TimePoint run_start,
                  TimePoint run_end) {
  BatchRecord b;
  b.id = id;
  b.size = size;
  b.lane = lane;
  b.reason = BatchReason::kTimeout;
  b.queue_depth_after = 3;
  b.batched = run_start - microseconds(10);
  b.run_start = run_start;
  b.run_end = run_end;
  return b;
}

RunData empty_run() {
  RunData run;
  run.start = kStart;
  return run;
}

// Nearest-rank quantile of exact values, for comparison with LogHistogram.
double nearest_rank(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()) - 1e-9));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

void expect_within(double actual, double expected, double rel) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * rel) << "expected " << expected;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.push_back("");
  return fields;
}

// ---- summarize_run ----

TEST(RunSummaryTest, CountsEachOutcome) {
  RunData run = empty_run();
  const Outcome outcomes[] = {Outcome::kOk,         Outcome::kOk,           Outcome::kRejected,
                              Outcome::kTimedOut,   Outcome::kTimedOut,     Outcome::kCancelled,
                              Outcome::kModelError, Outcome::kShuttingDown, Outcome::kInvalid};
  uint64_t i = 0;
  for (Outcome o : outcomes) {
    run.requests.push_back(request(i, at_ms(i), at_ms(i), at_ms(i + 5), o));
    ++i;
  }
  const RunSummary s = summarize_run(run);
  EXPECT_EQ(s.sent, 9u);
  EXPECT_EQ(s.ok, 2u);
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.timed_out, 2u);
  EXPECT_EQ(s.errors, 4u);
}

TEST(RunSummaryTest, LatencyQuantilesAreNearestRankOfOkRequestsFromIntendedSend) {
  RunData run = empty_run();
  std::vector<double> latencies_ms;
  // Skewed latencies: 1 ms plus a quadratic tail up to about 70 ms.
  for (uint64_t i = 0; i < 1000; ++i) {
    const int64_t latency_us = 1000 + static_cast<int64_t>(i * i / 14);
    const TimePoint intended = at_us(static_cast<int64_t>(i) * 100);
    // Sent late: latency still counts from the intended time.
    run.requests.push_back(
        request(i, intended, intended + microseconds(400), intended + microseconds(latency_us)));
    latencies_ms.push_back(static_cast<double>(latency_us) / 1000.0);
  }
  // Failed requests with huge latencies must not count.
  run.requests.push_back(request(1000, at_ms(0), at_ms(0), at_ms(5000), Outcome::kTimedOut));
  run.requests.push_back(request(1001, at_ms(0), at_ms(0), at_ms(6000), Outcome::kModelError));

  const RunSummary s = summarize_run(run);
  expect_within(s.latency.p50_ms, nearest_rank(latencies_ms, 0.50), 0.005);
  expect_within(s.latency.p90_ms, nearest_rank(latencies_ms, 0.90), 0.005);
  expect_within(s.latency.p95_ms, nearest_rank(latencies_ms, 0.95), 0.005);
  expect_within(s.latency.p99_ms, nearest_rank(latencies_ms, 0.99), 0.005);
  expect_within(s.latency.p999_ms, nearest_rank(latencies_ms, 0.999), 0.005);
  // The largest ok latency, exact: 1 ms + 999^2/14 us.
  EXPECT_DOUBLE_EQ(s.latency.max_ms, (1000 + 999 * 999 / 14) / 1000.0);
  double sum = 0;
  for (double v : latencies_ms) sum += v;
  expect_within(s.latency.mean_ms, sum / 1000.0, 1e-9);
}

TEST(RunSummaryTest, SendLagCoversAllRequests) {
  RunData run = empty_run();
  // Lags 0, 10, ..., 990 us; the rejected ones count too.
  for (uint64_t i = 0; i < 100; ++i) {
    const TimePoint intended = at_ms(static_cast<int64_t>(i));
    run.requests.push_back(request(i, intended, intended + microseconds(10 * i),
                                   intended + milliseconds(2),
                                   i % 2 ? Outcome::kRejected : Outcome::kOk));
  }
  const RunSummary s = summarize_run(run);
  expect_within(s.lag_p50_ms, 0.490, 0.005);  // rank 50
  expect_within(s.lag_p99_ms, 0.980, 0.005);  // rank 99
  EXPECT_DOUBLE_EQ(s.lag_max_ms, 0.990);
}

TEST(RunSummaryTest, DurationRunsFromFirstIntendedSendToLastAnswer) {
  RunData run = empty_run();
  for (uint64_t i = 0; i < 10; ++i) {
    const TimePoint intended = at_ms(static_cast<int64_t>(i) * 200);
    run.requests.push_back(request(i, intended, intended, intended + milliseconds(700)));
  }
  run.requests.push_back(request(10, at_ms(100), at_ms(100), at_ms(150), Outcome::kRejected));
  // Last answer at 1800 + 700 = 2500 ms: 10 ok over 2.5 s.
  RunSummary s = summarize_run(run);
  EXPECT_DOUBLE_EQ(s.duration_s, 2.5);
  EXPECT_DOUBLE_EQ(s.throughput_rps, 4.0);

  // A schedule that starts before run.start stretches the duration back.
  run.requests.push_back(request(11, at_ms(-500), at_ms(-500), at_ms(-400), Outcome::kRejected));
  s = summarize_run(run);
  EXPECT_DOUBLE_EQ(s.duration_s, 3.0);
}

TEST(RunSummaryTest, ZeroDurationGivesZeroThroughput) {
  RunData run = empty_run();
  run.requests.push_back(request(0, kStart, kStart, kStart));
  const RunSummary s = summarize_run(run);
  EXPECT_EQ(s.ok, 1u);
  EXPECT_EQ(s.duration_s, 0.0);
  EXPECT_EQ(s.throughput_rps, 0.0);
  ASSERT_EQ(s.windows.size(), 1u);
  EXPECT_EQ(s.windows[0].throughput_rps, 0.0);
}

TEST(RunSummaryTest, BatchHistogramAndMeanAreExact) {
  RunData run = empty_run();
  const uint32_t sizes[] = {1, 8, 32, 8};
  uint64_t id = 1;
  for (uint32_t size : sizes) {
    run.batches.push_back(batch(id, size, 0, at_ms(10 * id), at_ms(10 * id + 5)));
    ++id;
  }
  const RunSummary s = summarize_run(run);
  const std::map<uint32_t, uint64_t> expected = {{1, 1}, {8, 2}, {32, 1}};
  EXPECT_EQ(s.batch_histogram, expected);
  EXPECT_DOUBLE_EQ(s.batch_mean, 12.25);
}

TEST(RunSummaryTest, DepthMeanOfDepthsAndMaxOfDepthsAndPeaks) {
  RunData run = empty_run();
  run.depth = {{at_ms(100), 2, 3}, {at_ms(200), 4, 10}, {at_ms(300), 6, 6}};
  const RunSummary s = summarize_run(run);
  EXPECT_DOUBLE_EQ(s.depth_mean, 4.0);
  EXPECT_EQ(s.depth_max, 10u);
}

TEST(RunSummaryTest, WindowsFileSendsByIntendedAndAnswersByDone) {
  RunData run = empty_run();
  // Meant for window 0, actually sent and answered in window 1: it counts as
  // sent in window 0 (its intended time) and as ok in window 1.
  run.requests.push_back(request(0, at_ms(900), at_ms(1050), at_ms(1200)));
  // Entirely in window 1, rejected.
  run.requests.push_back(request(1, at_ms(1100), at_ms(1100), at_ms(1101), Outcome::kRejected));
  // Entirely in window 0.
  run.requests.push_back(request(2, at_ms(100), at_ms(100), at_ms(150)));
  // Ends the span at 1.5 s; a model error answered in window 1.
  run.requests.push_back(request(3, at_ms(1400), at_ms(1400), at_ms(1500), Outcome::kModelError));
  run.batches.push_back(batch(7, 4, 0, at_ms(990), at_ms(1010)));  // filed by run_end
  run.batches.push_back(batch(8, 2, 0, at_ms(120), at_ms(140)));
  run.depth = {{at_ms(500), 3, 5}, {at_ms(1300), 1, 1}};

  const RunSummary s = summarize_run(run, seconds(1));
  ASSERT_EQ(s.windows.size(), 2u);
  const RunWindow& w0 = s.windows[0];
  const RunWindow& w1 = s.windows[1];
  EXPECT_EQ(w0.start_s, 0.0);
  EXPECT_EQ(w0.length_s, 1.0);
  EXPECT_EQ(w0.sent, 2u);
  EXPECT_EQ(w0.ok, 1u);
  EXPECT_EQ(w0.rejected + w0.timed_out + w0.errors, 0u);
  EXPECT_DOUBLE_EQ(w0.latency.max_ms, 50.0);
  EXPECT_DOUBLE_EQ(w0.throughput_rps, 1.0);
  EXPECT_EQ(w0.batch_max, 2u);
  EXPECT_DOUBLE_EQ(w0.batch_mean, 2.0);
  EXPECT_EQ(w0.depth_max, 5u);
  EXPECT_DOUBLE_EQ(w0.depth_mean, 3.0);

  EXPECT_EQ(w1.start_s, 1.0);
  EXPECT_DOUBLE_EQ(w1.length_s, 0.5);  // clipped at the last answer
  EXPECT_EQ(w1.sent, 2u);
  EXPECT_EQ(w1.ok, 1u);
  EXPECT_EQ(w1.rejected, 1u);
  EXPECT_EQ(w1.errors, 1u);
  EXPECT_DOUBLE_EQ(w1.latency.p50_ms, 300.0);  // intended 0.9 s -> done 1.2 s
  EXPECT_DOUBLE_EQ(w1.latency.max_ms, 300.0);
  EXPECT_DOUBLE_EQ(w1.throughput_rps, 2.0);  // 1 ok over 0.5 s
  EXPECT_EQ(w1.batch_max, 4u);
  EXPECT_EQ(w1.depth_max, 1u);
}

TEST(RunSummaryTest, WindowsAreContiguousWithEmptyOnes) {
  RunData run = empty_run();
  run.requests.push_back(request(0, at_ms(100), at_ms(100), at_ms(200)));
  run.requests.push_back(request(1, at_ms(4500), at_ms(4500), at_ms(4600)));
  const RunSummary s = summarize_run(run, milliseconds(1000));
  ASSERT_EQ(s.windows.size(), 5u);
  uint64_t sent = 0, ok = 0;
  for (size_t k = 0; k < s.windows.size(); ++k) {
    EXPECT_DOUBLE_EQ(s.windows[k].start_s, static_cast<double>(k));
    sent += s.windows[k].sent;
    ok += s.windows[k].ok;
  }
  for (size_t k = 1; k <= 3; ++k) {
    EXPECT_EQ(s.windows[k].sent, 0u);
    EXPECT_EQ(s.windows[k].ok, 0u);
    EXPECT_EQ(s.windows[k].throughput_rps, 0.0);
    EXPECT_EQ(s.windows[k].latency.max_ms, 0.0);
    EXPECT_EQ(s.windows[k].length_s, 1.0);
  }
  EXPECT_DOUBLE_EQ(s.windows[4].length_s, 0.6);
  EXPECT_EQ(sent, 2u);
  EXPECT_EQ(ok, 2u);
}

TEST(RunSummaryTest, WindowBoundariesAreHalfOpenExceptTheLast) {
  RunData run = empty_run();
  // Done exactly on the 1 s boundary: window 1. The span ends exactly at 2 s,
  // which belongs to the last window instead of opening a third.
  run.requests.push_back(request(0, at_ms(500), at_ms(500), at_ms(1000)));
  run.requests.push_back(request(1, at_ms(1500), at_ms(1500), at_ms(2000)));
  // A depth sample after the last answer lands in the last window too.
  run.depth = {{at_ms(2700), 9, 9}};
  const RunSummary s = summarize_run(run, seconds(1));
  ASSERT_EQ(s.windows.size(), 2u);
  EXPECT_EQ(s.windows[0].ok, 0u);
  EXPECT_EQ(s.windows[1].ok, 2u);
  EXPECT_EQ(s.windows[1].length_s, 1.0);
  EXPECT_EQ(s.windows[1].depth_max, 9u);
}

// 1,000 req/s for 2 s, answered 1 ms later, and 40 requests sent in the
// last 10 ms whose answers come back together 5 ms after the end: the last
// window, 5 ms long, holds 8,000 answers/s. Rates are drawn without it; a
// last window of half the others or more stays.
TEST(RunSummaryTest, RatesAreDrawnWithoutAShortLastWindow) {
  RunData run = empty_run();
  uint64_t i = 0;
  for (int64_t ms = 0; ms < 1990; ++ms, ++i) {
    run.requests.push_back(request(i, at_ms(ms), at_ms(ms), at_ms(ms + 1)));
  }
  for (int64_t k = 0; k < 40; ++k, ++i) {
    const TimePoint sent = at_us(1990000 + k * 250);
    run.requests.push_back(request(i, sent, sent, at_ms(2005)));
  }
  const RunSummary s = summarize_run(run, seconds(1));
  ASSERT_EQ(s.windows.size(), 3u);
  EXPECT_NEAR(s.windows[2].length_s, 0.005, 1e-9);
  EXPECT_NEAR(s.windows[2].throughput_rps, 8000, 1e-6);
  const auto drawn = rate_windows(s);
  ASSERT_EQ(drawn.size(), 2u);
  EXPECT_EQ(drawn.data(), s.windows.data());
  for (const RunWindow& w : drawn) EXPECT_NEAR(w.throughput_rps, 1000, 10);
  EXPECT_EQ(s.ok, 2030u);  // still counted in the totals

  // 2.6 s: the last window is 0.6 s long, and its rate is drawn.
  run.requests.push_back(request(i, at_ms(2599), at_ms(2599), at_ms(2600)));
  EXPECT_EQ(rate_windows(summarize_run(run, seconds(1))).size(), 3u);
  // One window, however short, is all there is.
  RunData one = empty_run();
  one.requests.push_back(request(0, at_ms(0), at_ms(0), at_ms(3)));
  EXPECT_EQ(rate_windows(summarize_run(one, seconds(1))).size(), 1u);
  EXPECT_TRUE(rate_windows(summarize_run(empty_run())).empty());
}

TEST(RunSummaryTest, EmptyRunHasNoWindowsAndZeros) {
  const RunSummary s = summarize_run(empty_run());
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.duration_s, 0.0);
  EXPECT_EQ(s.latency.p99_ms, 0.0);
  EXPECT_TRUE(s.windows.empty());
  EXPECT_TRUE(s.batch_histogram.empty());
}

// ---- exports ----

RunData recorded_run() {
  RunData run = empty_run();
  run.config.pattern = "poisson rate=2000 \"quoted\"\n\x01 caf\xc3\xa9 bad\xff";
  run.config.target = "inproc";
  run.config.model = "synthetic";
  run.config.duration_s = 2.0;
  run.config.seed = 42;
  run.config.options.strategy = StrategyKind::kAdaptive;
  run.config.options.max_batch_size = 16;
  run.config.options.max_wait_us = 1500;
  run.config.options.num_lanes = 2;
  run.config.options.target_p99_ms = 12.5;
  run.requests.push_back(request(0, at_us(0), at_us(3), at_us(2500)));
  run.requests.push_back(request(1, at_us(500), at_us(500), at_us(2500)));
  run.requests.push_back(request(2, at_us(900), at_us(901), at_us(1000), Outcome::kRejected));
  run.requests.push_back(request(3, at_ms(1200), at_ms(1200), at_ms(1300), Outcome::kTimedOut));
  run.requests[0].batch_id = 1;
  run.requests[0].batch_size = 2;
  run.requests[1].batch_id = 1;
  run.requests[1].batch_size = 2;
  run.requests[2].http_status = 503;
  BatchRecord b = batch(1, 2, 1, kStart + Duration(1'000'250), kStart + Duration(2'400'001));
  run.batches.push_back(b);
  run.depth = {{at_us(700), 1, 2}};
  return run;
}

TEST(RunExportTest, SummaryJsonHasEveryKeyWithTheSummaryValues) {
  const RunData run = recorded_run();
  const RunSummary s = summarize_run(run, milliseconds(500));
  const Json j = Json::parse(run_summary_json(run, s));

  EXPECT_EQ(j.at("sent"), 4);
  EXPECT_EQ(j.at("ok"), 2);
  EXPECT_EQ(j.at("rejected"), 1);
  EXPECT_EQ(j.at("timed_out"), 1);
  EXPECT_EQ(j.at("errors"), 0);
  EXPECT_DOUBLE_EQ(j.at("duration_s").get<double>(), s.duration_s);
  EXPECT_DOUBLE_EQ(j.at("throughput_rps").get<double>(), s.throughput_rps);
  for (const char* k : {"p50", "p90", "p95", "p99", "p999", "max", "mean"}) {
    EXPECT_TRUE(j.at("latency_ms").at(k).is_number()) << k;
  }
  EXPECT_DOUBLE_EQ(j.at("latency_ms").at("max").get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(j.at("latency_ms").at("p99").get<double>(), s.latency.p99_ms);
  EXPECT_DOUBLE_EQ(j.at("send_lag_ms").at("max").get<double>(), 0.003);
  EXPECT_DOUBLE_EQ(j.at("send_lag_ms").at("p50").get<double>(), s.lag_p50_ms);
  EXPECT_DOUBLE_EQ(j.at("send_lag_ms").at("p99").get<double>(), s.lag_p99_ms);
  EXPECT_DOUBLE_EQ(j.at("batch_size").at("mean").get<double>(), 2.0);
  EXPECT_EQ(j.at("batch_size").at("histogram"), Json::parse(R"({"2": 1})"));
  EXPECT_DOUBLE_EQ(j.at("queue_depth").at("mean").get<double>(), 1.0);
  EXPECT_EQ(j.at("queue_depth").at("max"), 2);

  const Json& c = j.at("config");
  EXPECT_EQ(c.at("target"), "inproc");
  EXPECT_EQ(c.at("model"), "synthetic");
  EXPECT_EQ(c.at("duration_s"), 2.0);
  EXPECT_EQ(c.at("seed"), 42);
  EXPECT_EQ(c.at("strategy"), "adaptive");
  EXPECT_EQ(c.at("max_batch_size"), 16);
  EXPECT_EQ(c.at("max_wait_us"), 1500);
  EXPECT_EQ(c.at("queue_capacity"), 1024);
  EXPECT_EQ(c.at("request_timeout_ms"), 30000);
  EXPECT_EQ(c.at("num_lanes"), 2);
  EXPECT_EQ(c.at("target_p99_ms"), 12.5);
  // Escapes survive the round trip; the malformed byte becomes U+FFFD.
  EXPECT_EQ(j.at("pattern"), "poisson rate=2000 \"quoted\"\n\x01 caf\xc3\xa9 bad\xef\xbf\xbd");

  const Json& windows = j.at("windows");
  ASSERT_EQ(windows.size(), s.windows.size());
  ASSERT_EQ(windows.size(), 3u);  // 0..1.3 s in 0.5 s windows
  for (size_t k = 0; k < windows.size(); ++k) {
    const Json& w = windows[k];
    for (const char* key :
         {"start_s", "length_s", "sent", "ok", "rejected", "timed_out", "errors", "throughput_rps",
          "batch_mean", "batch_max", "depth_mean", "depth_max"}) {
      EXPECT_TRUE(w.at(key).is_number()) << key;
    }
    for (const char* key : {"p50", "p90", "p99", "max", "mean"}) {
      EXPECT_TRUE(w.at("latency_ms").at(key).is_number()) << key;
    }
    EXPECT_DOUBLE_EQ(w.at("start_s").get<double>(), s.windows[k].start_s);
    EXPECT_EQ(w.at("sent"), s.windows[k].sent);
    EXPECT_EQ(w.at("ok"), s.windows[k].ok);
  }
  EXPECT_EQ(windows[0].at("ok"), 2);
  EXPECT_EQ(windows[2].at("timed_out"), 1);
}

TEST(RunExportTest, SummaryJsonWritesNullForNonFiniteNumbers) {
  RunSummary s;
  s.latency.p99_ms = std::numeric_limits<double>::quiet_NaN();
  s.throughput_rps = std::numeric_limits<double>::infinity();
  s.windows.push_back(RunWindow{});
  s.windows[0].depth_mean = -std::numeric_limits<double>::infinity();
  const Json j = Json::parse(run_summary_json(empty_run(), s));
  EXPECT_TRUE(j.at("latency_ms").at("p99").is_null());
  EXPECT_TRUE(j.at("throughput_rps").is_null());
  EXPECT_TRUE(j.at("windows")[0].at("depth_mean").is_null());
  EXPECT_EQ(j.at("latency_ms").at("p50"), 0);
}

TEST(RunExportTest, RequestsCsvHasOneParsableLinePerRequest) {
  const RunData run = recorded_run();
  const std::vector<std::string> lines = lines_of(run_requests_csv(run));
  ASSERT_EQ(lines.size(), run.requests.size() + 1);
  EXPECT_EQ(lines[0],
            "index,intended_us,sent_us,done_us,latency_ms,outcome,http_status,batch_id,batch_size");
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RunRequest& r = run.requests[i];
    const std::vector<std::string> f = fields_of(lines[i + 1]);
    ASSERT_EQ(f.size(), 9u) << lines[i + 1];
    EXPECT_EQ(std::stoull(f[0]), r.index);
    EXPECT_DOUBLE_EQ(std::stod(f[1]), to_us(r.intended - run.start));
    EXPECT_DOUBLE_EQ(std::stod(f[2]), to_us(r.sent - run.start));
    EXPECT_DOUBLE_EQ(std::stod(f[3]), to_us(r.done - run.start));
    EXPECT_DOUBLE_EQ(std::stod(f[4]), to_ms(r.done - r.intended));
    EXPECT_EQ(f[5], outcome_name(r.outcome));
    EXPECT_EQ(std::stoi(f[6]), r.http_status);
    EXPECT_EQ(std::stoull(f[7]), r.batch_id);
    EXPECT_EQ(std::stoull(f[8]), r.batch_size);
  }
  EXPECT_EQ(lines[3], "2,900,901,1000,0.1,rejected,503,0,0");
}

TEST(RunExportTest, WindowsCsvHasOneParsableLinePerWindow) {
  const RunData run = recorded_run();
  const RunSummary s = summarize_run(run, milliseconds(500));
  const std::vector<std::string> lines = lines_of(run_windows_csv(s));
  ASSERT_EQ(lines.size(), s.windows.size() + 1);
  EXPECT_EQ(lines[0],
            "start_s,length_s,sent,ok,rejected,timed_out,errors,throughput_rps,p50_ms,p90_ms,"
            "p99_ms,max_ms,mean_ms,batch_mean,batch_max,depth_mean,depth_max");
  for (size_t k = 0; k < s.windows.size(); ++k) {
    const RunWindow& w = s.windows[k];
    const std::vector<std::string> f = fields_of(lines[k + 1]);
    ASSERT_EQ(f.size(), 17u) << lines[k + 1];
    for (const std::string& field : f) EXPECT_NO_THROW((void)std::stod(field)) << lines[k + 1];
    EXPECT_DOUBLE_EQ(std::stod(f[0]), w.start_s);
    EXPECT_DOUBLE_EQ(std::stod(f[1]), w.length_s);
    EXPECT_EQ(std::stoull(f[2]), w.sent);
    EXPECT_EQ(std::stoull(f[3]), w.ok);
    EXPECT_EQ(std::stoull(f[5]), w.timed_out);
    EXPECT_DOUBLE_EQ(std::stod(f[7]), w.throughput_rps);
    EXPECT_DOUBLE_EQ(std::stod(f[10]), w.latency.p99_ms);
    EXPECT_DOUBLE_EQ(std::stod(f[13]), w.batch_mean);
    EXPECT_EQ(std::stoul(f[14]), w.batch_max);
    EXPECT_EQ(std::stoul(f[16]), w.depth_max);
  }
}

TEST(RunExportTest, TraceIsValidChromeTraceFormat) {
  const RunData run = recorded_run();
  const Json j = Json::parse(run_trace_json(run));
  EXPECT_EQ(j.at("displayTimeUnit"), "ms");
  const Json& events = j.at("traceEvents");
  ASSERT_TRUE(events.is_array());

  bool process_named = false;
  std::map<int, std::string> thread_names;
  int batches = 0, requests = 0;
  for (const Json& e : events) {
    for (const char* key : {"ph", "ts", "pid", "tid", "name"}) {
      ASSERT_TRUE(e.contains(key)) << key << " missing in " << e.dump();
    }
    EXPECT_EQ(e.at("pid"), 1);
    const std::string ph = e.at("ph");
    if (ph == "M") {
      if (e.at("name") == "process_name") {
        process_named = e.at("args").at("name") == "batchscope run";
      } else if (e.at("name") == "thread_name") {
        thread_names[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
      }
      continue;
    }
    ASSERT_EQ(ph, "X") << e.dump();
    ASSERT_TRUE(e.at("dur").is_number());
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    if (e.at("cat") == "batch") {
      ++batches;
      const BatchRecord& b = run.batches[0];
      EXPECT_EQ(e.at("name"), "batch 1");
      EXPECT_EQ(e.at("tid"), b.lane + 1);
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 1000.25);  // run_start - start in us
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), to_us(b.run_end - b.run_start));
      EXPECT_EQ(e.at("args").at("size"), 2);
      EXPECT_EQ(e.at("args").at("reason"), "timeout");
      EXPECT_EQ(e.at("args").at("queue_depth_after"), 3);
    } else {
      const RunRequest& r = run.requests.at(requests++);
      EXPECT_EQ(e.at("name"), "request " + std::to_string(r.index));
      EXPECT_EQ(e.at("tid"), 1000 + r.index % 16);
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), to_us(r.intended - run.start));
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), to_us(r.done - r.intended));
      EXPECT_EQ(e.at("args").at("outcome"), outcome_name(r.outcome));
      EXPECT_EQ(e.at("args").at("batch_id"), r.batch_id);
      EXPECT_DOUBLE_EQ(e.at("args").at("lag_us").get<double>(), to_us(r.sent - r.intended));
    }
  }
  EXPECT_TRUE(process_named);
  EXPECT_EQ(batches, 1);
  EXPECT_EQ(requests, 4);
  EXPECT_EQ(thread_names[1], "lane 0");
  EXPECT_EQ(thread_names[2], "lane 1");
  EXPECT_EQ(thread_names[1000], "requests");
  EXPECT_EQ(thread_names[1003], "requests");
}

TEST(RunExportTest, TraceClampsNegativeSpansAndStaysValidForManyRequests) {
  RunData run = empty_run();
  const uint64_t n = 200'000;
  run.requests.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const TimePoint intended = kStart + Duration(static_cast<int64_t>(i) * 4999);
    run.requests.push_back(
        request(i, intended, intended + Duration(7), intended + Duration(123457)));
  }
  // Answer stamped before the intended send (clock trouble): dur must not go negative.
  run.requests[5].done = run.requests[5].intended - microseconds(3);
  const Json j = Json::parse(run_trace_json(run));
  const Json& events = j.at("traceEvents");
  size_t x = 0;
  for (const Json& e : events) {
    if (e.at("ph") != "X") continue;
    ++x;
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
  }
  EXPECT_EQ(x, n);
  EXPECT_EQ(events.back().at("name"), "request " + std::to_string(n - 1));
  EXPECT_DOUBLE_EQ(events.back().at("ts").get<double>(), to_us(Duration((n - 1) * 4999)));
}

}  // namespace
}  // namespace batchscope

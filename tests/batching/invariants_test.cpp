// SPDX-License-Identifier: GPL-3.0-or-later
// Seeded random traffic on a manual clock, with retuning, cancellation and
// timeouts mixed in, checked against invariants that must hold whatever the
// seed: exactly one response per request, each its own result, FIFO cuts, no
// batch over the cap in force, no dispatch later than the deadline plus one
// clock step, nothing expired or cancelled reaches the model, every request
// (some with a deadline of their own, out of queue order) timed out on the
// first clock step at or after its deadline, and metrics that equal the
// ground truth.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "runs/metrics.h"
#include "tests/batching/test_support.h"
#include "tuning/adaptive_planner.h"

namespace batchscope::test {
namespace {

struct Params {
  uint32_t lanes;
  uint64_t seed;
  StrategyKind strategy;
};

class Invariants : public ::testing::TestWithParam<Params> {};

struct Sent {
  float value;
  TimePoint arrival;
  TimePoint expires;  // the timeout in force at admission, or its own earlier deadline
};

// Quantile by nearest rank, the histogram's definition.
uint64_t exact_quantile(std::vector<uint64_t> v, double q) {
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

TEST_P(Invariants, HoldUnderRandomTraffic) {
  const Params p = GetParam();
  std::mt19937_64 rng(p.seed);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto random_options = [&] {
    Options o;
    o.max_batch_size = static_cast<uint32_t>(uni(1, 16));
    o.max_wait_us = uni(0, 3) == 0 ? 0 : uni(1, 3000);
    o.queue_capacity = static_cast<uint32_t>(uni(8, 64));
    o.request_timeout_ms = uni(0, 4) == 0 ? uni(1, 2) : 30000;
    o.num_lanes = p.lanes;
    o.strategy = p.strategy;
    o.target_p99_ms = static_cast<double>(uni(1, 5));
    return o;
  };

  auto clock = std::make_shared<ManualClock>();
  auto control = std::make_shared<TestRunner::Control>();
  Collector got;
  Options opts = random_options();
  std::vector<std::pair<TimePoint, Options>> history{{clock->now(), opts}};
  Engine engine(TestRunner::factory(control), opts, clock);
  engine.set_adaptive_planner(make_adaptive_plan);
  ASSERT_TRUE(engine.start().ok());
  settle(engine);

  std::map<RequestId, Sent> sent;
  std::set<RequestId> cancelled;
  std::vector<TimePoint> steps{clock->now()};
  size_t rejected = 0;
  MetricsAggregator agg(milliseconds(5), 100000);
  RecordBatch records;
  float next_value = 1;

  for (int step = 0; step < 400; ++step) {
    const int arrivals = static_cast<int>(uni(0, 3) == 0 ? uni(0, 40) : uni(0, 4));
    for (int i = 0; i < arrivals; ++i) {
      const float v = next_value++;
      SubmitOptions so;
      if (uni(0, 3) == 0) so.deadline = clock->now() + microseconds(uni(0, 3000));
      TimePoint expires = clock->now() + milliseconds(opts.request_timeout_ms);
      if (so.deadline) expires = std::min(expires, *so.deadline);
      auto id = engine.submit(input_of(v), got.callback(), so);
      if (id.ok()) {
        sent[*id] = {v, clock->now(), expires};
      } else {
        ASSERT_EQ(id.error().code, ErrorCode::kQueueFull);
        ++rejected;
      }
    }
    if (uni(0, 19) == 0) {
      opts = random_options();
      ASSERT_TRUE(engine.set_options(opts).ok());
      history.emplace_back(clock->now(), opts);
    }
    if (uni(0, 29) == 0 && !sent.empty()) {
      const RequestId victim =
          static_cast<RequestId>(uni(1, static_cast<int64_t>(sent.rbegin()->first)));
      if (engine.cancel(victim)) cancelled.insert(victim);
    }
    settle(engine);
    clock->advance(microseconds(uni(0, 1500)));
    steps.push_back(clock->now());
    settle(engine);
    if (step % 50 == 0) {
      engine.drain_records(records);
      agg.fold(records);
    }
  }
  engine.stop(StopMode::kDrain);
  engine.drain_records(records);
  agg.fold(records);

  // Exactly once, and every admitted request answered.
  ASSERT_TRUE(got.wait_for(sent.size() + rejected));
  EXPECT_EQ(got.size(), sent.size());
  EXPECT_EQ(got.rejected().size(), rejected);
  for (auto [id, n] : got.calls()) ASSERT_EQ(n, 1) << "request " << id;

  // What reached the model, by input value.
  std::multiset<float> ran;
  for (const auto& b : control->log.snapshot()) ran.insert(b.begin(), b.end());

  auto max_in_force = [&](TimePoint from, TimePoint to, auto field) {
    int64_t m = 0;
    for (size_t i = 0; i < history.size(); ++i) {
      const TimePoint start = history[i].first;
      const TimePoint end = i + 1 < history.size() ? history[i + 1].first : kNever;
      if (start <= to && end >= from) m = std::max<int64_t>(m, field(history[i].second));
    }
    return m;
  };

  std::map<uint64_t, std::vector<RequestId>> by_batch;
  std::vector<uint64_t> totals_ns;
  size_t ok = 0, timed_out = 0, cancelled_seen = 0;
  got.for_each([&](const TensorResponse& r) {
    const Sent& s = sent.at(r.id);
    if (r.result.ok()) {
      ++ok;
      EXPECT_EQ(r.result.value().at(0), SyntheticRunner::expected_output(input_of(s.value)[0]))
          << "request " << r.id << " got another request's result";
      EXPECT_EQ(ran.count(s.value), 1u);
      by_batch[r.batch_id].push_back(r.id);
      const int64_t cap = max_in_force(s.arrival, r.times.batched,
                                       [](const Options& o) { return o.max_batch_size; });
      EXPECT_LE(r.batch_size, cap) << "batch " << r.batch_id;
      // No later than the first clock step at or after its deadline.
      const int64_t wait =
          max_in_force(s.arrival, r.times.batched, [](const Options& o) { return o.max_wait_us; });
      const TimePoint deadline = s.arrival + microseconds(wait);
      const auto first_step = std::lower_bound(steps.begin(), steps.end(), deadline);
      if (first_step != steps.end()) EXPECT_LE(r.times.batched, *first_step) << "request " << r.id;
      EXPECT_LT(r.times.batched, s.expires) << "request " << r.id << " ran past its deadline";
      totals_ns.push_back(static_cast<uint64_t>((r.times.completed - r.times.arrival).count()));
    } else if (r.result.error().code == ErrorCode::kTimedOut) {
      ++timed_out;
      EXPECT_EQ(ran.count(s.value), 0u) << "a timed-out request reached the model";
      EXPECT_GE(r.times.completed, s.expires) << "request " << r.id << " timed out early";
      const auto due = std::lower_bound(steps.begin(), steps.end(), s.expires);
      if (due != steps.end())
        EXPECT_LE(r.times.completed, *due) << "request " << r.id << " timed out late";
    } else {
      ASSERT_EQ(r.result.error().code, ErrorCode::kCancelled) << r.result.error().message;
      ++cancelled_seen;
      EXPECT_EQ(ran.count(s.value), 0u) << "a cancelled request reached the model";
    }
  });
  EXPECT_EQ(cancelled_seen, cancelled.size());
  EXPECT_EQ(ran.size(), ok);

  // FIFO: batches in id order hold strictly increasing request ids.
  RequestId last = 0;
  for (auto& [batch, ids] : by_batch) {
    std::sort(ids.begin(), ids.end());
    EXPECT_GT(ids.front(), last) << "batch " << batch << " overtook an earlier one";
    last = ids.back();
  }

  // Metrics agree with what the test saw.
  const MetricsWindow& t = agg.totals();
  EXPECT_EQ(t.count(Outcome::kOk), ok);
  EXPECT_EQ(t.count(Outcome::kTimedOut), timed_out);
  EXPECT_EQ(t.count(Outcome::kCancelled), cancelled_seen);
  EXPECT_EQ(t.count(Outcome::kRejected), rejected);
  EXPECT_EQ(t.batches, by_batch.size());
  EXPECT_EQ(t.batch_size_sum, ok);
  EXPECT_EQ(t.dropped, 0u);
  const EngineCounters c = engine.status().counters;
  EXPECT_EQ(c.ok, ok);
  EXPECT_EQ(c.timed_out, timed_out);
  EXPECT_EQ(c.rejected, rejected);
  EXPECT_EQ(c.batches, by_batch.size());
  if (!totals_ns.empty()) {
    for (double q : {0.5, 0.9, 0.99, 1.0}) {
      const double exact = static_cast<double>(exact_quantile(totals_ns, q));
      const double est = static_cast<double>(t.total_ns.quantile(q));
      EXPECT_LE(std::abs(est - exact), 0.01 * exact + 1) << "q=" << q;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Seeds, Invariants,
    ::testing::Values(Params{1, 1, StrategyKind::kFifo}, Params{1, 2, StrategyKind::kFifo},
                      Params{2, 3, StrategyKind::kFifo}, Params{4, 4, StrategyKind::kFifo},
                      Params{1, 5, StrategyKind::kAdaptive}, Params{3, 6, StrategyKind::kAdaptive}),
    [](const auto& info) {
      return std::string(strategy_name(info.param.strategy)) + "_lanes" +
             std::to_string(info.param.lanes) + "_seed" + std::to_string(info.param.seed);
    });

}  // namespace
}  // namespace batchscope::test

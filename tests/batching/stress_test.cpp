// SPDX-License-Identifier: GPL-3.0-or-later
// Real threads and the real clock: producers, a canceller and a retuner hammer
// one engine at once. Checks only what must hold whatever the interleaving;
// also the suite that ThreadSanitizer is most likely to catch races in.

#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "tests/batching/test_support.h"
#include "tuning/adaptive_planner.h"

namespace batchscope::test {
namespace {

TEST(Stress, ConcurrentSubmitCancelRetuneAndStop) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 2000;
  Engine engine(
      SyntheticRunner::factory({.fixed_us = 20, .per_item_us = 1}),
      Options{.max_batch_size = 16, .max_wait_us = 200, .queue_capacity = 256, .num_lanes = 2});
  engine.set_adaptive_planner(make_adaptive_plan);
  ASSERT_TRUE(engine.start().ok());
  Collector got;
  std::atomic<uint64_t> admitted{0}, refused{0};
  std::atomic<RequestId> newest{0};
  std::atomic<bool> done{false};

  std::vector<std::vector<std::pair<RequestId, float>>> sent(kProducers);
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        const float v = static_cast<float>(p * kPerProducer + i);
        auto id = engine.submit(input_of(v), got.callback());
        if (id.ok()) {
          ++admitted;
          newest = *id;
          sent[static_cast<size_t>(p)].emplace_back(*id, v);
        } else {
          ++refused;
        }
        if (i % 64 == 0) std::this_thread::yield();
      }
    });
  }
  std::thread canceller([&] {
    std::mt19937_64 rng(7);
    while (!done) {
      const RequestId n = newest.load();
      if (n > 0) engine.cancel(std::uniform_int_distribution<RequestId>(1, n)(rng));
      std::this_thread::yield();
    }
  });
  std::thread retuner([&] {
    std::mt19937_64 rng(8);
    while (!done) {
      Options o{.max_batch_size = static_cast<uint32_t>(1 + rng() % 32),
                .max_wait_us = static_cast<int64_t>(rng() % 500),
                .queue_capacity = 256,
                .num_lanes = static_cast<uint32_t>(1 + rng() % 3),
                .strategy = rng() % 2 ? StrategyKind::kFifo : StrategyKind::kAdaptive};
      EXPECT_TRUE(engine.set_options(o).ok());
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  canceller.join();
  retuner.join();
  engine.stop(StopMode::kDrain);

  ASSERT_TRUE(got.wait_for(kProducers * kPerProducer));
  EXPECT_EQ(got.size(), admitted.load());
  EXPECT_EQ(got.rejected().size(), refused.load());
  for (auto [id, n] : got.calls()) ASSERT_EQ(n, 1) << "request " << id;
  std::map<RequestId, float> value_of;
  for (const auto& list : sent) value_of.insert(list.begin(), list.end());
  size_t ok = 0;
  got.for_each([&](const TensorResponse& r) {
    if (!r.result.ok()) {
      EXPECT_EQ(r.result.error().code, ErrorCode::kCancelled) << r.result.error().message;
      return;
    }
    ++ok;
    EXPECT_LE(r.batch_size, 32u);
    EXPECT_EQ(r.result.value()[0], SyntheticRunner::expected_output(input_of(value_of.at(r.id))[0]))
        << "request " << r.id << " got another request's result";
  });
  const EngineCounters c = engine.status().counters;
  EXPECT_EQ(c.ok, ok);
  EXPECT_EQ(c.submitted, static_cast<uint64_t>(kProducers * kPerProducer));
  EXPECT_EQ(c.completed() + c.rejected, c.submitted);
}

// The adaptive strategy's plans are made on the engine's planner thread while
// the lanes serve: traffic of varying batch sizes gets them asked for and
// made, every request is answered once, and stopping joins the planner.
TEST(Stress, AdaptivePlansAreMadeOffTheLanesAndEveryRequestIsAnswered) {
  Options o{.max_batch_size = 32, .max_wait_us = 500, .num_lanes = 2};
  o.strategy = StrategyKind::kAdaptive;
  o.target_p99_ms = 5;
  Engine engine(SyntheticRunner::factory({.fixed_us = 200, .per_item_us = 10}), o);
  engine.set_adaptive_planner(make_adaptive_plan);
  ASSERT_TRUE(engine.start().ok());
  Collector got;
  std::mt19937_64 rng(5);
  size_t sent = 0;
  // Rounds of 1 to 48 requests at once, each round answered before the next:
  // batch sizes that vary, so the fit separates a from c and plans are asked for.
  for (int round = 0; round < 400 && engine.status().counters.plans == 0; ++round) {
    const size_t k = 1 + rng() % 48;
    for (size_t i = 0; i < k; ++i) ASSERT_TRUE(engine.submit(input_of(1.0f), got.callback()).ok());
    sent += k;
    ASSERT_TRUE(got.wait_for(sent));
  }
  EXPECT_GT(engine.status().counters.plans, 0u);
  engine.stop(StopMode::kDrain);
  EXPECT_EQ(got.size(), sent);
  for (auto [id, n] : got.calls()) ASSERT_EQ(n, 1) << "request " << id;
}

}  // namespace
}  // namespace batchscope::test

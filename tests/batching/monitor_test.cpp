// SPDX-License-Identifier: GPL-3.0-or-later
// EngineMonitor on a manual clock: its snapshots carry the options in force
// and agree with the engine's own counters.

#include "batching/monitor.h"

#include <gtest/gtest.h>

#include "tests/batching/test_support.h"

namespace batchscope::test {
namespace {

TEST(EngineMonitor, SnapshotsCarryTheOptionsInForceAndAgreeWithTheCounters) {
  auto clock = std::make_shared<ManualClock>();
  Engine engine(SyntheticRunner::factory({}), Options{.max_batch_size = 16, .max_wait_us = 1000},
                clock);
  ASSERT_TRUE(engine.start().ok());
  Collector got;
  EngineMonitor monitor(milliseconds(1), 1000);
  for (int i = 0; i < 10; ++i) engine.submit(input_of(float(i)), got.callback());
  settle(engine);  // ten wait: fewer than a batch, deadline not reached
  MetricsSnapshot s = monitor.poll(engine);
  EXPECT_EQ(s.engine.options_version, 1u);
  EXPECT_EQ(s.engine.queue_depth, 10u);
  EXPECT_EQ(s.totals.count(Outcome::kOk), 0u);
  EXPECT_EQ(s.totals.max_queue_depth, 10u);

  ASSERT_TRUE(engine.set_options(Options{.max_batch_size = 16, .max_wait_us = 500}).ok());
  clock->advance(microseconds(500));  // the new, shorter wait cuts them
  settle(engine);
  s = monitor.poll(engine, 1);
  EXPECT_EQ(s.engine.options_version, 2u);
  EXPECT_EQ(s.engine.options.max_wait_us, 500);
  EXPECT_EQ(s.engine.queue_depth, 0u);
  EXPECT_EQ(s.windows.size(), 1u);
  EXPECT_EQ(s.window_length, milliseconds(1));
  EXPECT_EQ(s.totals.count(Outcome::kOk), 10u);
  EXPECT_EQ(s.totals.count(Outcome::kOk), engine.status().counters.ok);
  EXPECT_EQ(s.totals.count(BatchReason::kTimeout), 1u);
  EXPECT_EQ(s.totals.batch_size_sum, 10u);
  EXPECT_EQ(s.totals.run_ns.count(), 10u);
  EXPECT_EQ(s.totals.max_queue_depth, 10u);
}

}  // namespace
}  // namespace batchscope::test

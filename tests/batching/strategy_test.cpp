// SPDX-License-Identifier: GPL-3.0-or-later
// decide_fifo as a table: explicit timestamps, exact boundaries.
#include <gtest/gtest.h>

#include "batching/strategy.h"

namespace batchscope {
namespace {

using K = Decision::Kind;
const TimePoint T0 = TimePoint(std::chrono::seconds(100));
constexpr auto us = [](int64_t n) { return std::chrono::microseconds(n); };

struct Row {
  const char* name;
  size_t queued;
  Duration head_age;  // now - oldest arrival
  size_t max_batch;
  int64_t max_wait_us;
  K kind;
  size_t count;  // dispatch count
  BatchReason reason;
  Duration until_from_now;  // wait: until - now
};

class FifoTable : public ::testing::TestWithParam<Row> {};

TEST_P(FifoTable, Decides) {
  const Row& r = GetParam();
  const TimePoint now = T0 + r.head_age;
  QueueView q{.size = r.queued, .oldest_arrival = T0};
  Decision d = decide_fifo(q, now, Limits{r.max_batch, us(r.max_wait_us)});
  ASSERT_EQ(d.kind, r.kind) << r.name;
  if (r.kind == K::kDispatch) {
    EXPECT_EQ(d.count, r.count) << r.name;
    EXPECT_EQ(d.reason, r.reason) << r.name;
  }
  if (r.kind == K::kWait) {
    EXPECT_EQ(d.until - now, r.until_from_now) << r.name;
    EXPECT_EQ(d.wake_at_size, r.max_batch) << r.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Boundaries, FifoTable,
    ::testing::Values(
        Row{"empty queue idles", 0, us(0), 8, 1000, K::kIdle, 0, {}, {}},
        Row{"empty queue idles even past any wait", 0, us(99999), 8, 0, K::kIdle, 0, {}, {}},
        Row{"one request waits the full max_wait", 1, us(0), 8, 1000, K::kWait, 0, {}, us(1000)},
        Row{"one microsecond early still waits", 3, us(999), 8, 1000, K::kWait, 0, {}, us(1)},
        Row{"exactly at the deadline dispatches",
            3,
            us(1000),
            8,
            1000,
            K::kDispatch,
            3,
            BatchReason::kTimeout,
            {}},
        Row{"past the deadline dispatches all",
            5,
            us(5000),
            8,
            1000,
            K::kDispatch,
            5,
            BatchReason::kTimeout,
            {}},
        Row{"full batch dispatches before the deadline",
            8,
            us(0),
            8,
            1000,
            K::kDispatch,
            8,
            BatchReason::kFull,
            {}},
        Row{"more than full cuts max_batch",
            20,
            us(0),
            8,
            1000,
            K::kDispatch,
            8,
            BatchReason::kFull,
            {}},
        Row{"more than full past deadline is still full",
            20,
            us(5000),
            8,
            1000,
            K::kDispatch,
            8,
            BatchReason::kFull,
            {}},
        Row{"max_wait zero dispatches at once",
            1,
            us(0),
            8,
            0,
            K::kDispatch,
            1,
            BatchReason::kTimeout,
            {}},
        Row{"batch size one always full",
            1,
            us(0),
            1,
            1000,
            K::kDispatch,
            1,
            BatchReason::kFull,
            {}}),
    [](const auto& info) { return "row" + std::to_string(info.index); });

TEST(FifoStrategy, UsesTheOptionsLimits) {
  FifoStrategy f;
  Options o{.max_batch_size = 4, .max_wait_us = 250};
  QueueView q{.size = 2, .oldest_arrival = T0};
  Decision d = f.decide(q, T0 + us(100), o);
  ASSERT_EQ(d.kind, K::kWait);
  EXPECT_EQ(d.until, T0 + us(250));
  EXPECT_EQ(d.wake_at_size, 4u);
  // Options changed mid-wait: the same queue decides anew.
  o.max_wait_us = 100;
  EXPECT_EQ(f.decide(q, T0 + us(100), o).kind, K::kDispatch);
  o.max_batch_size = 2;
  o.max_wait_us = 10000;
  EXPECT_EQ(f.decide(q, T0, o).reason, BatchReason::kFull);
}

}  // namespace
}  // namespace batchscope

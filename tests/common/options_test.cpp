// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include "common/options.h"

namespace batchscope {
namespace {

TEST(Options, DefaultsAreTheDocumentedOnes) {
  Options o;
  EXPECT_EQ(o.max_batch_size, 32u);
  EXPECT_EQ(o.max_wait_us, 2000);
  EXPECT_EQ(o.queue_capacity, 1024u);
  EXPECT_EQ(o.request_timeout_ms, 30000);
  EXPECT_EQ(o.num_lanes, 1u);
  EXPECT_EQ(o.strategy, StrategyKind::kFifo);
  EXPECT_TRUE(o.validate().ok());
}

struct BadCase {
  Options options;
  const char* names;  // the message must contain this
};

class OptionsInvalid : public ::testing::TestWithParam<BadCase> {};

TEST_P(OptionsInvalid, NamesTheFieldAndValue) {
  Status s = GetParam().options.validate();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find(GetParam().names), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, OptionsInvalid,
    ::testing::Values(BadCase{Options{.max_batch_size = 0}, "max_batch_size = 0"},
                      BadCase{Options{.max_batch_size = 5000}, "max_batch_size = 5000"},
                      BadCase{Options{.max_wait_us = -1}, "max_wait_us = -1"},
                      BadCase{Options{.max_wait_us = 10'000'001}, "max_wait_us"},
                      BadCase{Options{.queue_capacity = 0}, "queue_capacity = 0"},
                      BadCase{Options{.request_timeout_ms = 0}, "request_timeout_ms = 0"},
                      BadCase{Options{.num_lanes = 0}, "num_lanes = 0"},
                      BadCase{Options{.num_lanes = 65}, "num_lanes = 65"},
                      BadCase{Options{.target_p99_ms = 0}, "target_p99_ms"},
                      BadCase{Options{.target_p99_ms = -3}, "target_p99_ms"},
                      BadCase{Options{.strategy = static_cast<StrategyKind>(9)}, "strategy"}));

TEST(Options, RangeEndsAreAccepted) {
  EXPECT_TRUE((Options{.max_batch_size = 1, .max_wait_us = 0}).validate().ok());
  EXPECT_TRUE(
      (Options{.max_batch_size = kMaxBatchSize, .max_wait_us = 10'000'000}).validate().ok());
}

TEST(Options, StrategyNamesRoundTrip) {
  for (StrategyKind k : {StrategyKind::kFifo, StrategyKind::kAdaptive}) {
    EXPECT_EQ(parse_strategy(strategy_name(k)), k);
  }
  EXPECT_FALSE(parse_strategy("lifo").has_value());
}

}  // namespace
}  // namespace batchscope

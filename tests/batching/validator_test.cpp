// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's validator: a request that does not fit the model is refused
// before admission, on its own, and counted.
#include <gtest/gtest.h>

#include "batching/engine.h"
#include "common/model_metadata.h"
#include "tests/batching/test_support.h"

namespace batchscope {
namespace {

Status wants_four_values(const Tensors& in) {
  return in[0].numel() == 4 ? Status::Ok() : invalid_argument("want 4 values");
}

TEST(EngineValidator, RefusesBeforeAdmissionAndCountsIt) {
  Engine engine(SyntheticRunner::factory({}), Options{.max_batch_size = 2, .max_wait_us = 0},
                std::make_shared<ManualClock>());
  ASSERT_TRUE(engine.set_validator(wants_four_values).ok());
  ASSERT_TRUE(engine.start().ok());
  EXPECT_FALSE(engine.set_validator(nullptr).ok());  // fixed once started
  test::Collector got;
  auto r = engine.submit(test::input_of(1, 3), got.callback());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(got.rejected().size(), 1u);
  ASSERT_TRUE(engine.submit(test::input_of(1, 4), got.callback()).ok());
  test::settle(engine);
  const EngineCounters c = engine.status().counters;
  EXPECT_EQ(c.invalid, 1u);
  EXPECT_EQ(c.admitted, 1u);
  EXPECT_EQ(c.ok, 1u);
  RecordBatch records;
  engine.drain_records(records);
  ASSERT_EQ(records.requests.size(), 2u);
  EXPECT_EQ(records.requests[0].outcome, Outcome::kInvalid);
}

TEST(EngineValidator, SubmitManyRefusesOnlyTheBadInputs) {
  Engine engine(SyntheticRunner::factory({}), Options{.max_batch_size = 2, .max_wait_us = 0},
                std::make_shared<ManualClock>());
  ASSERT_TRUE(engine.set_validator(wants_four_values).ok());
  ASSERT_TRUE(engine.start().ok());
  test::Collector got;
  std::vector<Tensors> in;
  std::vector<Engine::Done> dones;
  for (int n : {4, 3, 4}) {
    in.push_back(test::input_of(float(n), n));
    dones.push_back(got.callback());
  }
  EXPECT_EQ(engine.submit_many(in, dones), (std::vector<RequestId>{1, 2}));
  ASSERT_TRUE(got.wait_for(3));
  ASSERT_EQ(got.rejected().size(), 1u);
  EXPECT_NE(got.rejected()[0].message.find("want 4 values"), std::string::npos);
  EXPECT_TRUE(got.at(1).result.ok());
  EXPECT_TRUE(got.at(2).result.ok());
  EXPECT_EQ(engine.status().counters.invalid, 1u);
}

}  // namespace
}  // namespace batchscope

#include "common/model_metadata.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/batching/test_support.h"

namespace batchscope {
namespace {

ModelMetadata two_inputs() {
  ModelMetadata m;
  m.name = "m";
  m.max_batch_size = 8;
  m.inputs = {TensorSpec{"image", DType::kFloat32, {-1, 2, 3}, true},
              TensorSpec{"ids", DType::kInt64, {-1, 4}, false}};
  m.outputs = {TensorSpec{"y", DType::kFloat32, {-1, 5}, false}};
  return m;
}

TEST(ModelMetadata, RandomInputsFitTheModel) {
  const ModelMetadata m = two_inputs();
  ASSERT_TRUE(m.validate().ok());
  Tensors in = random_inputs(m, 7);
  EXPECT_TRUE(check_inputs(m, in).ok());
  EXPECT_EQ(in[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(in[1].shape(), (Shape{4}));
  EXPECT_TRUE(random_inputs(m, 7)[0] == in[0]);   // same seed, same inputs
  EXPECT_FALSE(random_inputs(m, 8)[0] == in[0]);  // another seed, others
}

TEST(ModelMetadata, CheckInputsNamesWhatIsWrong) {
  const ModelMetadata m = two_inputs();
  Tensors in = random_inputs(m, 1);
  in.pop_back();
  Status s = check_inputs(m, in);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("takes 2 input(s) (image, ids), got 1"), std::string::npos)
      << s.message();

  in = random_inputs(m, 1);
  in[0] = Tensor(DType::kFloat32, {3, 2});
  s = check_inputs(m, in);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("input 'image' has shape [3, 2], expected [2, 3]"), std::string::npos)
      << s.message();

  in = random_inputs(m, 1);
  in[1] = Tensor(DType::kInt32, {4});
  s = check_inputs(m, in);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("input 'ids' has datatype INT32, expected INT64"), std::string::npos)
      << s.message();

  in = random_inputs(m, 1);
  in[0].as<float>()[4] = INFINITY;
  s = check_inputs(m, in);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'image' holds a NaN or infinite value"), std::string::npos);
}

TEST(ModelMetadata, ValidateRefusesMalformedDeclarations) {
  ModelMetadata m = two_inputs();
  m.inputs[1].name = "image";
  EXPECT_NE(m.validate().message().find("appears twice"), std::string::npos);
  m = two_inputs();
  m.outputs[0].shape = {5};
  EXPECT_NE(m.validate().message().find("must be -1"), std::string::npos);
  m = two_inputs();
  m.max_batch_size = 0;
  EXPECT_FALSE(m.validate().ok());
}

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

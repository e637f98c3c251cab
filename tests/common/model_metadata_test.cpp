// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/model_metadata.h"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/model_metadata.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string_view>

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

ModelMetadata variable() {
  ModelMetadata m;
  m.name = "v";
  m.max_batch_size = 8;
  TensorSpec ids{"ids", DType::kInt64, {-1, -1, 2}, false};
  ids.max_shape = {-1, 10, 2};
  ids.value_range = std::pair<int64_t, int64_t>{3, 5};
  m.inputs = {ids};
  m.outputs = {TensorSpec{"y", DType::kFloat32, {-1, -1}, false}};
  return m;
}

TEST(ModelMetadata, AVariableDimensionTakesAnySizeUpToItsLargest) {
  const ModelMetadata m = variable();
  ASSERT_TRUE(m.validate().ok()) << m.validate().message();
  EXPECT_TRUE(m.inputs[0].variable());
  EXPECT_EQ(m.inputs[0].item_numel(), -1);
  EXPECT_EQ(m.inputs[0].sample_item_shape(50), (Shape{10, 2}));  // cut to its largest
  for (int64_t len : {1, 7, 10}) {
    Tensors in = random_inputs(m, 1, len);
    EXPECT_EQ(in[0].shape(), (Shape{len, 2}));
    EXPECT_TRUE(check_inputs(m, in).ok());
    EXPECT_EQ(request_length(m, in), static_cast<uint32_t>(len));
    for (int64_t v : in[0].as<int64_t>()) EXPECT_TRUE(v >= 3 && v <= 5) << v;
  }
  Tensors over{Tensor(DType::kInt64, {11, 2})};
  EXPECT_NE(check_inputs(m, over).message().find("dimension 1 is 11, over its largest 10"),
            std::string::npos)
      << check_inputs(m, over).message();
  Tensors fixed_wrong{Tensor(DType::kInt64, {4, 3})};
  EXPECT_NE(check_inputs(m, fixed_wrong).message().find("has shape [4, 3], expected [-1, 2]"),
            std::string::npos)
      << check_inputs(m, fixed_wrong).message();
  EXPECT_EQ(request_length(two_inputs(), random_inputs(two_inputs(), 1)), 0u);
}

TEST(ModelMetadata, AMaxShapeMustAgreeWithItsShape) {
  ModelMetadata m = variable();
  m.inputs[0].max_shape = {-1, 10, 3};  // the fixed size differs
  EXPECT_NE(m.validate().message().find("max_shape [-1, 10, 3] against shape [-1, -1, 2]"),
            std::string::npos);
  m.inputs[0].max_shape = {-1, 10};
  EXPECT_FALSE(m.validate().ok());
  m = variable();
  m.inputs[0].shape = {-1, -2, 2};
  EXPECT_NE(m.validate().message().find("-1 where it varies"), std::string::npos);
  m = variable();
  m.inputs[0].value_range = std::pair<int64_t, int64_t>{5, 3};
  EXPECT_FALSE(m.validate().ok());
}

ModelMetadata with_text(Shape text_shape) {
  ModelMetadata m;
  m.name = "t";
  m.max_batch_size = 8;
  TensorSpec ids{"ids", DType::kInt64, {-1, -1}, false};
  ids.max_shape = {-1, 32};
  m.inputs = {TensorSpec{"text", DType::kBytes, std::move(text_shape), false}, ids};
  m.outputs = {TensorSpec{"label", DType::kBytes, {-1}, false}};
  return m;
}

TEST(ModelMetadata, ABytesTensorIsOneStringPerRequest) {
  for (const Shape& ok : {Shape{-1}, Shape{-1, 1}}) {
    const ModelMetadata m = with_text(ok);
    ASSERT_TRUE(m.validate().ok()) << m.validate().message();
    EXPECT_FALSE(m.inputs[0].variable());
  }
  for (const Shape& bad : {Shape{-1, 4}, Shape{-1, -1}, Shape{-1, 1, 1}}) {
    const Status s = with_text(bad).validate();
    ASSERT_FALSE(s.ok()) << shape_string(bad);
    EXPECT_NE(s.message().find("input 'text' is BYTES with shape " + shape_string(bad) +
                               "; a BYTES tensor is one byte string per request, so its shape "
                               "is [-1] or [-1, 1]"),
              std::string::npos)
        << s.message();
  }
  ModelMetadata out = with_text({-1});
  out.outputs[0].shape = {-1, 2};
  EXPECT_NE(out.validate().message().find("output 'label' is BYTES with shape [-1, 2]"),
            std::string::npos)
      << out.validate().message();
}

TEST(ModelMetadata, CheckInputsTakesAStringOfAnyLengthAndItIsNoRequestLength) {
  for (const Shape& declared : {Shape{-1}, Shape{-1, 1}}) {
    const ModelMetadata m = with_text(declared);
    for (std::string_view text : {std::string_view(""), std::string_view("a cat on a mat")}) {
      Tensors in{Tensor::from_bytes(text), Tensor(DType::kInt64, {5})};
      EXPECT_TRUE(check_inputs(m, in).ok()) << check_inputs(m, in).message();
      EXPECT_EQ(request_length(m, in), 5u);  // the tokens', not the string's
    }
  }
  ModelMetadata only_text = with_text({-1});
  only_text.inputs.pop_back();
  EXPECT_EQ(request_length(only_text, Tensors{Tensor::from_bytes("some text")}), 0u);
  EXPECT_FALSE(has_variable_inputs(only_text));

  const ModelMetadata m = with_text({-1, 1});
  Tensors rank2{Tensor(DType::kBytes, {1, 3}), Tensor(DType::kInt64, {5})};
  EXPECT_NE(check_inputs(m, rank2).message().find("input 'text' is BYTES with shape [1, 3]"),
            std::string::npos)
      << check_inputs(m, rank2).message();
  Tensors numbers{Tensor(DType::kUInt8, {3}), Tensor(DType::kInt64, {5})};
  EXPECT_NE(check_inputs(m, numbers).message().find("has datatype UINT8, expected BYTES"),
            std::string::npos);
}

TEST(ModelMetadata, RandomBytesArePrintableAscii) {
  const ModelMetadata m = with_text({-1});
  Tensors in = random_inputs(m, 3, 7);
  ASSERT_TRUE(check_inputs(m, in).ok()) << check_inputs(m, in).message();
  ASSERT_EQ(in[0].shape(), Shape{16});
  for (char c : in[0].byte_string()) EXPECT_TRUE(c >= 0x20 && c <= 0x7e) << int(c);
  EXPECT_EQ(in[1].shape(), Shape{7});
  EXPECT_TRUE(random_inputs(m, 3, 7)[0] == in[0]);
  EXPECT_FALSE(random_inputs(m, 4, 7)[0] == in[0]);
}

TEST(ModelMetadata, ParseInputSpecTakesBytes) {
  auto t = parse_input_spec("text:bytes:1");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->dtype, DType::kBytes);
  EXPECT_EQ(t->shape, (Shape{-1, 1}));
  auto bad = parse_input_spec("text:STRING:1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("BOOL or BYTES"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The payload decoders on their own: sizes and numbers from the client are
// checked before anything is allocated or converted.

#include <gtest/gtest.h>

#include <cmath>

#include "api/infer_json.h"

namespace batchscope {
namespace {

ModelMetadata model_of(DType dtype) {
  ModelMetadata m;
  m.name = "m";
  m.max_batch_size = 8;
  m.inputs = {TensorSpec{"x", dtype, {-1, 2}, false}};
  m.outputs = {TensorSpec{"y", DType::kFloat32, {-1, 1}, false}};
  return m;
}

std::string v2(const char* dtype, const char* shape, const char* data) {
  return std::string(R"({"inputs": [{"name": "x", "datatype": ")") + dtype + R"(", "shape": )" +
         shape + R"(, "data": )" + data + "}]}";
}

const HttpError* error_of(const HttpExpected<V2Request>& r) { return std::get_if<HttpError>(&r); }

TEST(InferJson, WholeNumbersOutsideTheirTypeAreRefusedNotConverted) {
  auto i64 = parse_v2_request(v2("INT64", "[1, 2]", "[1e300, 2]"), model_of(DType::kInt64));
  ASSERT_TRUE(error_of(i64));
  EXPECT_EQ(error_of(i64)->status, 422);
  EXPECT_NE(error_of(i64)->message.find("element 0 is not a whole number within INT64's range"),
            std::string::npos);
  auto i32 = parse_v2_request(v2("INT32", "[1, 2]", "[2147483648, 2]"), model_of(DType::kInt32));
  ASSERT_TRUE(error_of(i32));
  EXPECT_NE(error_of(i32)->message.find("INT32's range"), std::string::npos);
  auto fits =
      parse_v2_request(v2("INT32", "[1, 2]", "[-2147483648, 2147483647]"), model_of(DType::kInt32));
  ASSERT_FALSE(error_of(fits));
  EXPECT_EQ(std::get<V2Request>(fits).inputs[0].tensor.as<int32_t>()[1], 2147483647);
}

TEST(InferJson, FloatsBeyondFp32BecomeInfinityAndFp32MaxAsPrintedFits) {
  auto r =
      parse_v2_request(v2("FP32", "[1, 2]", "[3.4028235e+38, 1e39]"), model_of(DType::kFloat32));
  ASSERT_FALSE(error_of(r));
  auto v = std::get<V2Request>(r).inputs[0].tensor.as<float>();
  EXPECT_EQ(v[0], std::numeric_limits<float>::max());
  EXPECT_TRUE(std::isinf(v[1]));
}

TEST(InferJson, AShapeIsCheckedAgainstTheDataBeforeAllocation) {
  auto r =
      parse_v2_request(v2("FP32", "[4611686018427387904, 2]", "[1, 2]"), model_of(DType::kFloat32));
  ASSERT_TRUE(error_of(r));
  EXPECT_NE(error_of(r)->message.find("a dimension of 4611686018427387904"), std::string::npos)
      << error_of(r)->message;
  auto big =
      parse_v2_request(v2("FP32", "[9007199254740992, 2]", "[1, 2]"), model_of(DType::kFloat32));
  ASSERT_TRUE(error_of(big));
  EXPECT_NE(error_of(big)->message.find("has 2 values; shape [9007199254740992, 2] needs "
                                        "18014398509481984"),
            std::string::npos)
      << error_of(big)->message;
  auto dup = parse_v2_request(
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}],
          "outputs": [{"name": "y"}, {"name": "y"}]})",
      model_of(DType::kFloat32));
  ASSERT_TRUE(error_of(dup));
  EXPECT_NE(error_of(dup)->message.find("requested twice"), std::string::npos);
}

TEST(InferJson, TheSimpleRouteCountsValuesWithoutStoringThemAll) {
  std::string many = "{\"data\": [";
  for (int i = 0; i < 100000; ++i) many += i ? ",1" : "1";
  many += "]}";
  auto r = parse_simple_infer(many, model_of(DType::kFloat32));
  ASSERT_TRUE(std::holds_alternative<HttpError>(r));
  EXPECT_NE(std::get<HttpError>(r).message.find("'data' has 100000 values, expected 2"),
            std::string::npos);
}

ModelMetadata varied_model() {
  ModelMetadata m;
  m.name = "v";
  m.max_batch_size = 8;
  TensorSpec x{"x", DType::kFloat32, {-1, -1, 2}, false};
  x.max_shape = {-1, 16, 2};
  m.inputs = {x};
  m.outputs = {TensorSpec{"y", DType::kFloat32, {-1, -1, 2}, false}};
  return m;
}

TEST(InferJson, AVariableDimensionTakesTheSizeSentUpToItsLargest) {
  auto ok = parse_v2_request(v2("FP32", "[2, 3, 2]", "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]"),
                             varied_model());
  ASSERT_FALSE(error_of(ok)) << error_of(ok)->message;
  EXPECT_EQ(std::get<V2Request>(ok).inputs[0].tensor.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(v2_row(std::get<V2Request>(ok), 1)[0].shape(), (Shape{3, 2}));

  auto over = parse_v2_request(v2("FP32", "[1, 17, 2]", "[]"), varied_model());
  ASSERT_TRUE(error_of(over));
  EXPECT_EQ(error_of(over)->status, 422);
  EXPECT_NE(error_of(over)->message.find("input 'x' has shape [1, 17, 2]: dimension 1 is 17, "
                                         "over its largest 16 (max_shape [-1, 16, 2])"),
            std::string::npos)
      << error_of(over)->message;
  auto fixed =
      parse_v2_request(v2("FP32", "[1, 3, 3]", "[1, 2, 3, 4, 5, 6, 7, 8, 9]"), varied_model());
  ASSERT_TRUE(error_of(fixed));
  EXPECT_NE(error_of(fixed)->message.find("expected [-1, -1, 2]"), std::string::npos)
      << error_of(fixed)->message;
  auto empty = parse_v2_request(v2("FP32", "[1, 0, 2]", "[]"), varied_model());
  ASSERT_TRUE(error_of(empty));
}

TEST(InferJson, TheSimpleRouteTellsAVariableLengthFromTheValuesCount) {
  auto ok = parse_simple_infer(R"({"data": [1, 2, 3, 4, 5, 6]})", varied_model());
  ASSERT_FALSE(std::get_if<HttpError>(&ok)) << std::get<HttpError>(ok).message;
  EXPECT_EQ(std::get<Tensors>(ok)[0].shape(), (Shape{3, 2}));
  auto odd = parse_simple_infer(R"({"data": [1, 2, 3]})", varied_model());
  ASSERT_TRUE(std::get_if<HttpError>(&odd));
  EXPECT_NE(std::get<HttpError>(odd).message.find("not a whole number of 2"), std::string::npos);
  std::string long_body = R"({"data": [0)";
  for (int i = 1; i < 34; ++i) long_body += ",0";
  auto over = parse_simple_infer(long_body + "]}", varied_model());
  ASSERT_TRUE(std::get_if<HttpError>(&over));
  EXPECT_NE(std::get<HttpError>(over).message.find("a length of 17, over input 'x''s largest 16"),
            std::string::npos)
      << std::get<HttpError>(over).message;
}

}  // namespace
}  // namespace batchscope

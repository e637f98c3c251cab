// SPDX-License-Identifier: GPL-3.0-or-later
// The payload decoders on their own: sizes and numbers from the client are
// checked before anything is allocated or converted.

#include <gtest/gtest.h>

#include <cmath>

#include "net/infer_json.h"

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

}  // namespace
}  // namespace batchscope

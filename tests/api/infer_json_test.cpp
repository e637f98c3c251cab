// SPDX-License-Identifier: GPL-3.0-or-later
// The payload decoders on their own: sizes and numbers from the client are
// checked before anything is allocated or converted.

#include <gtest/gtest.h>

#include <cmath>

#include "api/http_target.h"
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

ModelMetadata text_model(Shape text_shape = {-1}, Shape label_shape = {-1}) {
  ModelMetadata m;
  m.name = "t";
  m.max_batch_size = 8;
  m.inputs = {TensorSpec{"text", DType::kBytes, std::move(text_shape), false},
              TensorSpec{"n", DType::kInt32, {-1, 1}, false}};
  m.outputs = {TensorSpec{"label", DType::kBytes, std::move(label_shape), false},
               TensorSpec{"score", DType::kFloat32, {-1, 1}, false}};
  return m;
}

std::string text_body(const char* shape, const char* data, const char* n = "[1, 2]") {
  return std::string(R"({"inputs": [{"name": "text", "datatype": "BYTES", "shape": )") + shape +
         R"(, "data": )" + data + R"(}, {"name": "n", "datatype": "INT32", "shape": [2, 1],
         "data": )" +
         n + "}]}";
}

TEST(InferJson, ABytesInputIsOneStringARow) {
  for (const Shape& declared : {Shape{-1}, Shape{-1, 1}}) {
    for (const char* shape : {"[2]", "[2, 1]"}) {
      for (const char* data :
           {R"(["caf\u00e9 \"quoted\"\n", ""])", R"([["caf\u00e9 \"quoted\"\n"], [""]])"}) {
        auto r = parse_v2_request(text_body(shape, data), text_model(declared));
        ASSERT_FALSE(error_of(r)) << error_of(r)->message;
        const V2Request& req = std::get<V2Request>(r);
        EXPECT_EQ(req.inputs[0].rows(), 2);
        ASSERT_EQ(req.inputs[0].strings.size(), 2u);
        const Tensors row0 = v2_row(req, 0), row1 = v2_row(req, 1);
        EXPECT_EQ(row0[0].dtype(), DType::kBytes);
        EXPECT_EQ(row0[0].byte_string(), "caf\xc3\xa9 \"quoted\"\n");  // UTF-8 bytes
        EXPECT_EQ(row0[0].shape(), Shape{15});
        EXPECT_EQ(row1[0].shape(), Shape{0});
        EXPECT_EQ(row1[1].as<int32_t>()[0], 2);
        EXPECT_TRUE(check_inputs(text_model(declared), row0).ok());
      }
    }
  }
}

TEST(InferJson, ABytesInputsErrorsNameItAndQuoteTheValue) {
  const auto message = [](const std::string& body) {
    auto r = parse_v2_request(body, text_model());
    EXPECT_TRUE(error_of(r));
    if (!error_of(r)) return std::string();
    EXPECT_EQ(error_of(r)->status, 422);
    return error_of(r)->message;
  };
  std::string m = message(text_body("[2]", R"(["one", 42])"));
  EXPECT_NE(m.find("input 'text' element 1 is '42', not a string"), std::string::npos) << m;
  m = message(text_body("[2]", R"(["one", {"a": true}])"));
  EXPECT_NE(m.find(R"(input 'text' element 1 is '{"a":true}', not a string)"), std::string::npos)
      << m;
  m = message(text_body("[2]", R"([null, "two"])"));
  EXPECT_NE(m.find("input 'text' element 0 is 'null', not a string"), std::string::npos) << m;
  m = message(text_body("[2]", R"(["one", "two", "three"])"));
  EXPECT_NE(m.find("input 'text' has 3 values in 'data'; shape [2] needs 2 strings, one a row"),
            std::string::npos)
      << m;
  m = message(text_body("[2, 2]", R"(["a", "b", "c", "d"])"));
  EXPECT_NE(m.find("input 'text' has shape [2, 2], expected [rows] or [rows, 1]"),
            std::string::npos)
      << m;
  m = message(text_body("[3]", R"(["a", "b", "c"])"));
  EXPECT_NE(m.find("input 'n' has 2 rows; the other inputs have 3"), std::string::npos) << m;
  m = message(R"({"inputs": [{"name": "text", "datatype": "FP32", "shape": [1], "data": [1]}]})");
  EXPECT_NE(m.find("input 'text' has datatype 'FP32', expected BYTES"), std::string::npos) << m;
}

TEST(InferJson, TheSimpleRouteRefusesBytes) {
  ModelMetadata m = text_model();
  m.inputs.pop_back();
  auto r = parse_simple_infer(R"({"data": ["a cat"]})", m);
  ASSERT_TRUE(std::get_if<HttpError>(&r));
  EXPECT_EQ(std::get<HttpError>(r).status, 422);
  EXPECT_NE(std::get<HttpError>(r).message.find("input 'text' is BYTES"), std::string::npos)
      << std::get<HttpError>(r).message;
  EXPECT_NE(std::get<HttpError>(r).message.find("/v2/models/t/infer"), std::string::npos);
}

TEST(InferJson, ABytesOutputIsOneJsonStringARow) {
  std::vector<Tensors> rows;
  rows.push_back(
      {Tensor::from_bytes("cat \"tabby\"\n"), Tensor::from_floats(std::vector<float>{0.5f}, {1})});
  rows.push_back({Tensor::from_bytes(""), Tensor::from_floats(std::vector<float>{2}, {1})});
  // Not UTF-8: a stray continuation byte, a cut-off three-byte character, a
  // surrogate's encoding and a byte no UTF-8 has; U+FFFD for each sequence.
  rows.push_back({Tensor::from_bytes("a\x80"
                                     "b\xe2\x82"
                                     "c\xed\xa0\x80"
                                     "d\xff"
                                     "\xc3\xa9"),
                  Tensor::from_floats(std::vector<float>{1}, {1})});
  const ModelMetadata m = text_model();
  std::string out;
  append_v2_output(out, m.outputs[0], rows, 0);
  EXPECT_EQ(out, R"({"name":"label","datatype":"BYTES","shape":[3],"data":["cat \"tabby\"\n","",)"
                 R"("a\ufffdb\ufffdc\ufffd\ufffd\ufffdd\ufffd)"
                 "\xc3\xa9"
                 R"("]})");
  out.clear();
  append_v2_output(out, text_model({-1}, {-1, 1}).outputs[0], rows, 0);
  EXPECT_NE(out.find(R"("shape":[3,1],"data":["cat \"tabby\"\n","",)"), std::string::npos) << out;
  out.clear();
  append_v2_output(out, m.outputs[1], rows, 1);
  EXPECT_EQ(out, R"({"name":"score","datatype":"FP32","shape":[3,1],"data":[0.5,2,1]})");
  std::string simple;
  append_json_values(simple, rows[0][0]);
  EXPECT_EQ(simple, R"(["cat \"tabby\"\n"])");
}

TEST(InferJson, BytesRoundTripThroughARequestAndAResponse) {
  const std::string body =
      text_body("[2, 1]", R"([["\u00e9t\u00e9 \ud83d\ude00"], ["tab\there"]])", "[[7], [8]]");
  auto r = parse_v2_request(body, text_model({-1, 1}, {-1, 1}));
  ASSERT_FALSE(error_of(r)) << error_of(r)->message;
  const V2Request& req = std::get<V2Request>(r);
  std::vector<Tensors> rows;
  for (int64_t i = 0; i < req.inputs[0].rows(); ++i) rows.push_back(v2_row(req, i));
  std::string out;
  append_v2_output(out, text_model({-1, 1}, {-1, 1}).outputs[0], rows, 0);
  EXPECT_EQ(out,
            "{\"name\":\"label\",\"datatype\":\"BYTES\",\"shape\":[2,1],\"data\":[\""
            "\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80\",\"tab\\there\"]}");
}

TEST(InferJson, ALoadRunsSeededBytesGoOutAsAV2BodyTheServerReads) {
  for (const Shape& declared : {Shape{-1}, Shape{-1, 1}}) {
    const ModelMetadata m = text_model(declared);
    Url url;
    url.path = "/v2/models/t/infer";
    const std::string body = infer_body(url, m, random_inputs(m, 5));
    EXPECT_NE(
        body.find(declared.size() == 1 ? R"("shape":[1],"data":[")" : R"("shape":[1,1],"data":[")"),
        std::string::npos)
        << body;
    auto r = parse_v2_request(body, m);
    ASSERT_FALSE(error_of(r)) << error_of(r)->message;
    const Tensors row = v2_row(std::get<V2Request>(r), 0);
    EXPECT_TRUE(row[0] == random_inputs(m, 5)[0]);
  }
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/metadata_json.h"

#include <gtest/gtest.h>

namespace batchscope {
namespace {

const char* kGood = R"({"name": "m", "max_batch_size": 8,
  "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3], "finite_only": true}],
  "outputs": [{"name": "y", "datatype": "INT64", "shape": [-1]}]})";

TEST(MetadataJson, ParsesAWellFormedSidecar) {
  auto m = parse_metadata(kGood, "m.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->name, "m");
  EXPECT_EQ(m->max_batch_size, 8u);
  EXPECT_EQ(m->inputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(m->inputs[0].item_shape(), Shape{3});
  EXPECT_TRUE(m->inputs[0].finite_only);
  EXPECT_EQ(m->outputs[0].dtype, DType::kInt64);
  EXPECT_EQ(m->outputs[0].item_shape(), Shape{});
}

struct Bad {
  const char* json;
  const char* names;
};

class MetadataJsonBad : public ::testing::TestWithParam<Bad> {};

TEST_P(MetadataJsonBad, NamesTheFileAndField) {
  auto m = parse_metadata(GetParam().json, "m.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("m.json"), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find(GetParam().names), std::string::npos) << m.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, MetadataJsonBad,
    ::testing::Values(
        Bad{"{not json", "not valid JSON"},
        Bad{R"({"max_batch_size": 1, "inputs": [], "outputs": []})", "'name' is missing"},
        Bad{R"({"name": "m", "max_batch_size": 0, "inputs": [], "outputs": []})", "max_batch_size"},
        Bad{R"({"name": "m", "max_batch_size": 2,
             "inputs": [{"name": "x", "datatype": "FP33", "shape": [-1, 3]}],
             "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]})",
            "inputs[0].datatype \"FP33\""},
        Bad{R"({"name": "m", "max_batch_size": 2,
             "inputs": [{"name": "x", "datatype": "FP32", "shape": [3]}],
             "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]})",
            "first dimension must be -1"},
        Bad{R"({"name": "m", "max_batch_size": 2,
             "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 0]}],
             "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]})",
            "a size from 1 up, or -1 where it varies"},
        Bad{R"({"name": "m", "max_batch_size": 2,
             "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, -1], "max_shape": [-1, 0]}],
             "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]})",
            "max_shape [-1, 0] against shape [-1, -1]"},
        Bad{R"({"name": "m", "max_batch_size": 2,
             "inputs": [{"name": "x", "datatype": "INT64", "shape": [-1, -1], "range": [1]}],
             "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]})",
            "inputs[0].range must be [LOW, HIGH]"},
        Bad{R"({"name": "m", "max_batch_size": 2,
             "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, -1], "pad_value": "z"}],
             "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]})",
            "inputs[0].pad_value must be a number, got \"z\""},
        Bad{R"({"name": "m", "max_batch_size": 2,
             "inputs": [{"name": "x", "datatype": "FP32", "shape": "big"}],
             "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]})",
            "inputs[0].shape must be an array"},
        Bad{R"({"name": "m", "max_batch_size": 2, "inputs": [],
             "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]})",
            "declares no inputs"},
        Bad{R"({"name": "m", "max_batch_size": 2,
             "inputs": [{"name": "text", "datatype": "BYTES", "shape": [-1, 8]}],
             "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1]}]})",
            "input 'text' is BYTES with shape [-1, 8]; a BYTES tensor is one byte string per "
            "request, so its shape is [-1] or [-1, 1]"}));

TEST(MetadataJson, BytesTensorsRoundTrip) {
  const char* json = R"({"name": "m", "max_batch_size": 4,
    "inputs": [{"name": "text", "datatype": "BYTES", "shape": [-1]}],
    "outputs": [{"name": "label", "datatype": "BYTES", "shape": [-1, 1]}]})";
  auto m = parse_metadata(json, "m.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->inputs[0].dtype, DType::kBytes);
  EXPECT_EQ(m->outputs[0].shape, (Shape{-1, 1}));
  auto again = parse_metadata(metadata_json(*m), "again.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->inputs[0].dtype, DType::kBytes);
  EXPECT_EQ(again->outputs[0].dtype, DType::kBytes);
  EXPECT_EQ(again->outputs[0].shape, (Shape{-1, 1}));
}

TEST(MetadataJson, SidecarSitsBesideTheModel) {
  EXPECT_EQ(sidecar_path("models/mlp.pt"), "models/mlp.json");
  EXPECT_EQ(sidecar_path("a.b/model"), "a.b/model.json");
}

}  // namespace
}  // namespace batchscope

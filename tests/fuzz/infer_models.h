// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The models the inference-payload fuzz targets decode against: between them
// every datatype, one and several inputs, item shapes of one and two
// dimensions, and BYTES declared both ways ([-1] and [-1, 1]).

#include <string>
#include <vector>

#include "common/model_metadata.h"
#include "tests/fuzz/fuzz_check.h"

namespace batchscope::fuzz {

inline std::vector<ModelMetadata> infer_models() {
  auto spec = [](std::string name, DType dtype, Shape shape) {
    TensorSpec s;
    s.name = std::move(name);
    s.dtype = dtype;
    s.shape = std::move(shape);
    return s;
  };
  auto model = [](std::string name, std::vector<TensorSpec> inputs, TensorSpec output) {
    ModelMetadata m;
    m.name = std::move(name);
    m.inputs = std::move(inputs);
    m.outputs = {std::move(output)};
    m.max_batch_size = 8;
    FUZZ_CHECK(m.validate());
    return m;
  };
  return {
      model("dense", {spec("x", DType::kFloat32, {-1, 4})}, spec("y", DType::kFloat32, {-1, 2})),
      model("tokens", {spec("ids", DType::kInt64, {-1, 3}), spec("mask", DType::kBool, {-1, 2})},
            spec("logits", DType::kFloat32, {-1, 2})),
      model("half", {spec("h", DType::kFloat16, {-1, 2, 2})},
            spec("out", DType::kFloat16, {-1, 1})),
      model("mixed",
            {spec("a", DType::kInt32, {-1, 2}), spec("b", DType::kUInt8, {-1, 1}),
             spec("c", DType::kFloat64, {-1, 2})},
            spec("s", DType::kFloat64, {-1, 1})),
      model("ids", {spec("i", DType::kInt64, {-1, 2})}, spec("o", DType::kInt32, {-1, 1})),
      model("text", {spec("text", DType::kBytes, {-1})}, spec("label", DType::kBytes, {-1})),
      model("tagged",
            {spec("text", DType::kBytes, {-1}), spec("tag", DType::kBytes, {-1, 1}),
             spec("n", DType::kInt32, {-1, 1})},
            spec("label", DType::kBytes, {-1, 1})),
  };
}

}  // namespace batchscope::fuzz

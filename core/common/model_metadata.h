// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a model takes and gives: its inputs and outputs with KServe v2
// datatypes and shapes (-1 for the batch dimension, which comes first), and
// the largest batch it accepts. Loaded from the JSON sidecar beside a model
// file (core/torch reads it) and used by the engine to refuse a request that
// does not fit before admission, so a bad request never spoils a batch.
// Thread-safety: a plain value.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"

namespace batchscope {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;               // with the batch dimension: [-1, 128]
  bool finite_only = false;  // refuse NaN and infinities (floating types)

  // One request's shape: `shape` without its batch dimension.
  Shape item_shape() const;
  int64_t item_numel() const;
  // "data FP32 [-1, 128]"
  std::string describe() const;
};

struct ModelMetadata {
  std::string name;
  std::string description;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  uint32_t max_batch_size = 0;

  // The metadata itself is well formed: at least one input and output, every
  // shape starts with -1 and has positive sizes after it, names are unique,
  // max_batch_size > 0.
  Status validate() const;
};

// One request's inputs against the model: how many, their dtypes, shapes
// (without the batch dimension) and, where the model asks, finite values.
// The error names the input, what was expected and what came.
Status check_inputs(const ModelMetadata& model, const Tensors& inputs);

// One request's worth of inputs that fit the model, from `seed`: floats
// drawn from a standard normal, integers from 0..9, booleans fair coins.
Tensors random_inputs(const ModelMetadata& model, uint64_t seed);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a model takes and gives: its inputs and outputs with KServe v2
// datatypes and shapes (-1 for the batch dimension, which comes first; -1
// after it for a variable dimension, such as a sequence's length, with an
// optional largest size; a BYTES tensor is one byte string per request,
// shape [-1] or [-1, 1]), and the largest batch it accepts. Loaded from the JSON sidecar beside a
// model file (core/torch reads it) and used by the engine to refuse a request that does not fit
// before admission, so a bad request never spoils a batch. Thread-safety: a plain value.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"

namespace batchscope {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;               // with the batch dimension: [-1, 128]; variable: [-1, -1]
  bool finite_only = false;  // refuse NaN and infinities (floating types)
  // The largest shape a request may have, the same rank as `shape`: a
  // variable dimension's largest size there (-1: no largest but the body's
  // size limit), a fixed one's own size. Empty: no variable dimension has one.
  Shape max_shape;
  // What a batch is padded with where a request is shorter than its longest
  // (0 by default: an attention mask padded with 0 masks the padding out).
  double pad_value = 0;
  // Integer inputs: the values traffic generators draw, inclusive (token ids
  // below the vocabulary, a mask of ones). Unset: 0..9.
  std::optional<std::pair<int64_t, int64_t>> value_range;

  // One request's shape: `shape` without its batch dimension (-1 where it varies).
  Shape item_shape() const;
  // Elements per request; -1 where a dimension varies.
  int64_t item_numel() const;
  // Some dimension after the batch dimension is -1.
  bool variable() const;
  // The largest size of item dimension `i`; -1 where there is none.
  int64_t item_max(size_t i) const;
  // item_shape() with each variable dimension `length`, cut to its largest.
  Shape sample_item_shape(int64_t length) const;
  // "data FP32 [-1, 128]", "input_ids INT64 [-1, -1] up to [-1, 256]"
  std::string describe() const;
};

struct ModelMetadata {
  std::string name;
  std::string description;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  uint32_t max_batch_size = 0;
  // What runs it, as KServe v2's model metadata names it: "pytorch_torchscript",
  // or "python" for a Python class in worker processes.
  std::string platform = "pytorch_torchscript";
  // Requests the model's author gave as examples (a Python class's
  // `examples`), each fitting `inputs`; seeded traffic sends them in turn
  // instead of random values. Empty for most models.
  std::vector<Tensors> examples;

  // The metadata itself is well formed: at least one input and output, every
  // shape starts with -1 and has positive sizes or -1 after it, a max_shape
  // agrees with its shape, a BYTES tensor's shape is [-1] or [-1, 1], names
  // are unique, max_batch_size > 0.
  Status validate() const;
};

// One request's inputs against the model: how many, their dtypes, shapes
// (without the batch dimension; a variable dimension from 1 to its largest;
// a BYTES input's string of any length, rank 1) and, where the model asks,
// finite values. The error names the input, what was expected and what came.
Status check_inputs(const ModelMetadata& model, const Tensors& inputs);

// "image:FP32:3,32,32" (also "3x32x32" or "[3, 32, 32]"): one input's name,
// KServe v2 datatype and shape without the batch dimension, which becomes -1
// (`describe --input`, the window's describe dialog). The error quotes the text.
Expected<TensorSpec> parse_input_spec(const std::string& text);

// A request's length: the size of the first variable dimension of the first
// input that has one; 0 for a model without variable dimensions. Batching
// policies and padding waste count in it. A BYTES input's string length is
// no such dimension (its strings are never padded): it counts as nothing.
uint32_t request_length(const ModelMetadata& model, const Tensors& inputs);

// The model has an input with a variable dimension.
bool has_variable_inputs(const ModelMetadata& model);

// One request's worth of inputs that fit the model, from `seed`: floats
// drawn from a standard normal, integers from the input's value_range (else
// 0..9), booleans fair coins, BYTES 16 printable ASCII characters. Variable
// dimensions are `length` long (cut to their largest; 0 picks 16). A model
// with examples gives example `seed` (modulo their count) instead.
Tensors random_inputs(const ModelMetadata& model, uint64_t seed, int64_t length = 0);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Metadata for a TorchScript model that has none: the forward method's
// argument names from its schema, one forward pass on zeros of the shapes a
// person gives, and the outputs that pass returned (a tensor, a tuple or a
// dict of them), written as the model's sidecar.
//
// A traced or scripted module keeps its arguments' names but not their
// shapes or datatypes, so those are asked for; the forward pass checks them.
// It runs at batch sizes 1 and 2, so an output that is not batched along its
// first dimension is refused by name.
// Thread-safety: free functions without shared state; each loads the module.

#include <cstdint>
#include <string>
#include <vector>

#include "common/model_metadata.h"
#include "common/status.h"

namespace batchscope {

struct ForwardArgument {
  std::string name;
  std::string type;          // TorchScript's: "Tensor", "Optional[Tensor]", "int"
  bool has_default = false;  // may be left out
};

// The module's forward arguments, after `self`, in order.
Expected<std::vector<ForwardArgument>> forward_arguments(const std::string& model_path);

struct DescribeRequest {
  std::string model_path;
  // One per forward argument without a default, in any order; matched by name.
  std::vector<TensorSpec> inputs;
  uint32_t max_batch_size = 64;
  std::string name;  // empty: the file's stem
  std::string description;
};

// Loads the module on the CPU, matches the inputs to forward's arguments
// (the metadata lists them in forward's order), runs forward on zeros at
// batch 1 and 2, and returns the metadata with the outputs observed. Errors
// name the argument or output, and quote LibTorch's message for a forward
// pass that fails.
Expected<ModelMetadata> describe_model(const DescribeRequest& request);

// The metadata of the model at `model_path`, from its sidecar (beside it or
// in the config folder). A missing sidecar's error says in one line how to
// make one, naming forward's arguments: "make one with: batchscope describe
// --model m.pt --input image:DTYPE:SHAPE".
Expected<ModelMetadata> load_model_metadata(const std::string& model_path);

// Writes `m` as the model's sidecar beside it, or in the config folder when
// that folder cannot be written (common/sidecar_path.h); returns the path.
Expected<std::string> write_sidecar(const std::string& model_path, const ModelMetadata& m);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The tensor batching engine: requests carry a model's input tensors and get
// its output tensors back. See basic_engine.h for behaviour and guarantees.

#include "batching/basic_engine.h"
#include "common/model_metadata.h"
#include "common/tensor.h"

namespace batchscope {

using Engine = BasicEngine<Tensors, Tensors>;
using Runner = BasicRunner<Tensors, Tensors>;
using RunnerFactory = BasicRunnerFactory<Tensors, Tensors>;
using TensorResponse = Response<Tensors>;

extern template class BasicEngine<Tensors, Tensors>;

// Before start(): the engine refuses a request that does not fit `model`
// (check_inputs), and, where the model's inputs vary in length, takes each
// request's length (request_length) so its batches record their padding.
void bind_model(Engine& engine, const ModelMetadata& model);

}  // namespace batchscope

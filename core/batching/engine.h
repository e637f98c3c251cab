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

// Makes a fresh prepare stage for one engine of a model whose requests are
// prepared before batching (a Python model's preprocess pool); empty for
// any other model.
using StageMaker = std::function<std::shared_ptr<Engine::PrepareStage>()>;

// Before start(): the engine refuses a request that does not fit `model`
// (check_inputs), and, where the model's inputs vary in length, takes each
// request's length (request_length) so its batches record their padding.
// With a stage, every request goes through a new one of `stage` before it
// is queued (its lengths are then not taken: what is queued is what the
// stage made).
void bind_model(Engine& engine, const ModelMetadata& model, const StageMaker& stage = {});

}  // namespace batchscope

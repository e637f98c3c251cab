// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The tensor batching engine: requests carry a model's input tensors and get
// its output tensors back. See basic_engine.h for behaviour and guarantees.

#include "batching/basic_engine.h"
#include "common/tensor.h"

namespace batchscope {

using Engine = BasicEngine<Tensors, Tensors>;
using Runner = BasicRunner<Tensors, Tensors>;
using RunnerFactory = BasicRunnerFactory<Tensors, Tensors>;
using TensorResponse = Response<Tensors>;

extern template class BasicEngine<Tensors, Tensors>;

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "batching/engine.h"

#include "batching/basic_engine_impl.h"

namespace batchscope {

template class BasicEngine<Tensors, Tensors>;

void bind_model(Engine& engine, const ModelMetadata& model, const StageMaker& stage) {
  engine.set_validator([model](const Tensors& in) { return check_inputs(model, in); });
  if (stage) {
    engine.set_prepare_stage(stage());
  } else if (has_variable_inputs(model))
    engine.set_length_of([model](const Tensors& in) { return request_length(model, in); });
}

}  // namespace batchscope

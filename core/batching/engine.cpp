// SPDX-License-Identifier: GPL-3.0-or-later
#include "batching/engine.h"

#include "batching/basic_engine_impl.h"

namespace batchscope {

template class BasicEngine<Tensors, Tensors>;

}  // namespace batchscope

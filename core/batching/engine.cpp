#include "engine.h"

#include "basic_engine_impl.h"

namespace batchscope {

template class BasicEngine<Tensors, Tensors>;

}  // namespace batchscope

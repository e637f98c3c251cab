// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Moving a request's tensor into a batch that is padded to its longest
// request, and a result back out of it: block copies between row-major
// tensors of the same rank whose sizes differ.
// Thread-safety: free functions without shared state.

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/tensor.h"

namespace batchscope {

// Copies the leading `block` of a row-major array shaped `src_dims` to the
// leading corner of one shaped `dst_dims` (same rank; block <= both in every
// dimension), one contiguous row at a time. `elem` is the element size.
void copy_block(std::byte* dst, const Shape& dst_dims, const std::byte* src, const Shape& src_dims,
                const Shape& block, size_t elem);

// Whether the requests' tensors of `tensor` (an input or output's name, for
// the message) may be stacked into one batch tensor, padded or not: every
// datatype but BYTES, whose byte strings differ in length and mean nothing
// cut or padded. A runner asks before it stacks; the error names the tensor
// and says why.
Status check_stackable(const std::string& tensor, DType dtype);

}  // namespace batchscope

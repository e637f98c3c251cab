// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/padding.h"

#include <cstring>
#include <vector>

namespace batchscope {

void copy_block(std::byte* dst, const Shape& dst_dims, const std::byte* src, const Shape& src_dims,
                const Shape& block, size_t elem) {
  const size_t rank = block.size();
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  for (int64_t d : block)
    if (d <= 0) return;
  // Element strides of each array.
  std::vector<size_t> ds(rank, 1), ss(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) {
    ds[d - 1] = ds[d] * static_cast<size_t>(dst_dims[d]);
    ss[d - 1] = ss[d] * static_cast<size_t>(src_dims[d]);
  }
  const size_t row = static_cast<size_t>(block[rank - 1]) * elem;
  std::vector<int64_t> at(rank, 0);  // the outer index, an odometer over block[0..rank-1)
  for (;;) {
    size_t do_ = 0, so = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      do_ += static_cast<size_t>(at[d]) * ds[d];
      so += static_cast<size_t>(at[d]) * ss[d];
    }
    std::memcpy(dst + do_ * elem, src + so * elem, row);
    size_t d = rank - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++at[d] < block[d]) break;
      at[d] = 0;
    }
  }
}

Status check_stackable(const std::string& tensor, DType dtype) {
  if (dtype != DType::kBytes) return Status::Ok();
  return invalid_argument("'" + tensor +
                          "' is BYTES, one byte string per request: its requests' strings are "
                          "not stacked into one batch tensor (they differ in length, and "
                          "padding would change them); a Python model takes them one per "
                          "request");
}

}  // namespace batchscope

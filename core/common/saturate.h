// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Narrowing that saturates: a count too large for 32 bits becomes
// UINT32_MAX rather than wrapping (a queue depth, a batch size in a record).
// Thread-safety: pure functions.

#include <algorithm>
#include <cstdint>

namespace batchscope {

constexpr uint32_t saturate_u32(uint64_t v) {
  return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX));
}

}  // namespace batchscope

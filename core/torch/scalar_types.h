// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// KServe v2 datatypes and LibTorch's scalar types, both ways. Internal to
// core/torch: its public headers show engine types only.

#include <ATen/core/ATen_fwd.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "common/tensor.h"

namespace batchscope {

inline at::ScalarType scalar_type(DType t) {
  switch (t) {
    case DType::kFloat32: return at::kFloat;
    case DType::kFloat16: return at::kHalf;
    case DType::kFloat64: return at::kDouble;
    case DType::kInt64: return at::kLong;
    case DType::kInt32: return at::kInt;
    case DType::kUInt8: return at::kByte;
    case DType::kBool: return at::kBool;
  }
  return at::kFloat;
}

// nullopt for a type KServe v2 here does not carry (bfloat16, int8, ...).
inline std::optional<DType> dtype_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return DType::kFloat32;
    case at::kHalf: return DType::kFloat16;
    case at::kDouble: return DType::kFloat64;
    case at::kLong: return DType::kInt64;
    case at::kInt: return DType::kInt32;
    case at::kByte: return DType::kUInt8;
    case at::kBool: return DType::kBool;
    default: return std::nullopt;
  }
}

}  // namespace batchscope

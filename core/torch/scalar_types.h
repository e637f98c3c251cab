// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// KServe v2 datatypes and LibTorch's scalar types, both ways. Internal to
// core/torch: its public headers show engine types only.

#include <ATen/core/ATen_fwd.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "common/model_metadata.h"
#include "common/tensor.h"

namespace batchscope {

// BYTES has no LibTorch scalar type: its byte strings are for Python models.
inline std::string torch_bytes_refusal(const TensorSpec& t, const char* kind) {
  return std::string(kind) + " '" + t.name +
         "' is BYTES (one byte string per request), which a TorchScript model cannot take or "
         "give: LibTorch has no tensor of byte strings. Serve it as a Python model";
}

// Every tensor of `m` has a LibTorch scalar type; the error names the first
// that has none.
inline Status check_torch_dtypes(const ModelMetadata& m) {
  for (const TensorSpec& t : m.inputs)
    if (t.dtype == DType::kBytes) return invalid_argument(torch_bytes_refusal(t, "input"));
  for (const TensorSpec& t : m.outputs)
    if (t.dtype == DType::kBytes) return invalid_argument(torch_bytes_refusal(t, "output"));
  return Status::Ok();
}

// Throws std::invalid_argument for BYTES, which check_torch_dtypes() refuses
// before a model is run.
inline at::ScalarType scalar_type(DType t) {
  switch (t) {
    case DType::kFloat32: return at::kFloat;
    case DType::kFloat16: return at::kHalf;
    case DType::kFloat64: return at::kDouble;
    case DType::kInt64: return at::kLong;
    case DType::kInt32: return at::kInt;
    case DType::kUInt8: return at::kByte;
    case DType::kBool: return at::kBool;
    case DType::kBytes:
      throw std::invalid_argument(
          "BYTES (byte strings) has no LibTorch scalar type; BYTES is for Python models");
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

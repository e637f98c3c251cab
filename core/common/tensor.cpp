// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/tensor.h"

#include <algorithm>
#include <numeric>

namespace batchscope {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kFloat64: return 8;
    case DType::kInt64: return 8;
    case DType::kInt32: return 4;
    case DType::kUInt8: return 1;
    case DType::kBool: return 1;
    case DType::kBytes: return 1;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "FP32";
    case DType::kFloat16: return "FP16";
    case DType::kFloat64: return "FP64";
    case DType::kInt64: return "INT64";
    case DType::kInt32: return "INT32";
    case DType::kUInt8: return "UINT8";
    case DType::kBool: return "BOOL";
    case DType::kBytes: return "BYTES";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt64, DType::kInt32,
                  DType::kUInt8, DType::kBool, DType::kBytes}) {
    if (name == dtype_name(t)) return t;
  }
  return std::nullopt;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // infinity or NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // signed zero
  } else {
    int e = -1;  // subnormal: normalise the mantissa
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // infinity or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return sign;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    const uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    return static_cast<uint16_t>(sign | (half + (rem > mid || (rem == mid && (half & 1u)))));
  }
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);  // nearest, ties to even
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype),
      shape_(std::move(shape)),
      numel_(std::accumulate(shape_.begin(), shape_.end(), int64_t{1},
                             [](int64_t n, int64_t d) { return n * std::max<int64_t>(d, 0); })),
      data_(new std::byte[static_cast<size_t>(numel_) * dtype_size(dtype)]) {}

Tensor Tensor::from_floats(std::span<const float> values, Shape shape) {
  Tensor t(DType::kFloat32, std::move(shape));
  std::memcpy(t.data(), values.data(), std::min(t.nbytes(), values.size_bytes()));
  return t;
}

Tensor Tensor::from_floats(std::span<const float> values) {
  return from_floats(values, Shape{static_cast<int64_t>(values.size())});
}

Tensor Tensor::from_int64(std::span<const int64_t> values, Shape shape) {
  Tensor t(DType::kInt64, std::move(shape));
  std::memcpy(t.data(), values.data(), std::min(t.nbytes(), values.size_bytes()));
  return t;
}

Tensor Tensor::from_bytes(std::string_view bytes) {
  Tensor t(DType::kBytes, Shape{static_cast<int64_t>(bytes.size())});
  if (!bytes.empty()) std::memcpy(t.data(), bytes.data(), bytes.size());
  return t;
}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_), shape_(other.shape_), numel_(other.numel_) {
  if (other.data_) {
    data_.reset(new std::byte[other.nbytes()]);
    std::memcpy(data_.get(), other.data_.get(), other.nbytes());
  }
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

bool Tensor::operator==(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (nbytes() == 0) return true;
  return std::memcmp(data_.get(), other.data_.get(), nbytes()) == 0;
}

}  // namespace batchscope

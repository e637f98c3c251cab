// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A dense, contiguous, row-major tensor: the payload of a request.
// Owns its bytes; moving is O(1), copying copies the data.
// Thread-safety: a value type; distinct objects may be used from any thread.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace batchscope {

// BYTES (KServe v2's byte strings: a text, an image's encoded file) is one
// byte string per request: a request's BYTES input or output is held as
// Tensor(DType::kBytes, {length}), rank 1, its length in bytes (0 allowed),
// whatever its declared shape ([-1] or [-1, 1]: one string a row). Such
// tensors are never stacked or padded into a batch (LibTorch has no such
// type; Python models take them one per request).
enum class DType : uint8_t { kFloat32, kFloat16, kFloat64, kInt64, kInt32, kUInt8, kBool, kBytes };

// Bytes per element; 1 for BYTES, whose elements are the string's bytes.
size_t dtype_size(DType t);
// KServe v2 / Open Inference Protocol names: FP32, FP16, FP64, INT64, INT32, UINT8, BOOL, BYTES.
const char* dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);

// IEEE 754 half precision (FP16) bits to and from float; the float to half
// conversion rounds to nearest, ties to even, and keeps infinities and NaN.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

using Shape = std::vector<int64_t>;
std::string shape_string(const Shape& shape);  // "[1, 28, 28]"

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised storage for `shape` elements of `dtype` (a negative
  // dimension counts as 0; callers validate shapes before this).
  Tensor(DType dtype, Shape shape);
  static Tensor from_floats(std::span<const float> values, Shape shape);
  static Tensor from_floats(std::span<const float> values);  // 1-D
  static Tensor from_int64(std::span<const int64_t> values, Shape shape);
  // One BYTES value: Tensor(kBytes, {bytes.size()}) holding `bytes`.
  static Tensor from_bytes(std::string_view bytes);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }

  // Typed views; T must match the dtype's element size (float for FP32,
  // uint16_t for FP16 bits, int64_t for INT64, ...).
  template <class T>
  std::span<T> as() {
    return {reinterpret_cast<T*>(data_.get()), static_cast<size_t>(numel_)};
  }
  template <class T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(data_.get()), static_cast<size_t>(numel_)};
  }

  // The tensor's storage as bytes: a BYTES tensor's string.
  std::string_view byte_string() const {
    return {reinterpret_cast<const char*>(data_.get()), nbytes()};
  }

  bool operator==(const Tensor& other) const;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  int64_t numel_ = 0;
  std::unique_ptr<std::byte[]> data_;
};

// A request's inputs, or its outputs, in the model's declared order.
using Tensors = std::vector<Tensor>;

}  // namespace batchscope

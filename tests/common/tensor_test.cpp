// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include "common/tensor.h"

#include <cmath>

namespace batchscope {
namespace {

TEST(Tensor, HoldsShapeDtypeAndData) {
  std::vector<float> v{1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_floats(v, {2, 3});
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.as<float>()[5], 6.0f);
}

TEST(Tensor, CopyIsDeepAndMoveIsCheap) {
  std::vector<int64_t> v{7, 8};
  Tensor a = Tensor::from_int64(v, {2});
  Tensor b = a;
  b.as<int64_t>()[0] = 9;
  EXPECT_EQ(a.as<int64_t>()[0], 7);
  const std::byte* p = a.data();
  Tensor c = std::move(a);
  EXPECT_EQ(c.data(), p);  // moved, not copied
  EXPECT_FALSE(c == b);
  b.as<int64_t>()[0] = 7;
  EXPECT_TRUE(c == b);
}

TEST(Tensor, Float16StoresTwoBytesPerElement) {
  Tensor h(DType::kFloat16, {3, 5});
  EXPECT_EQ(h.nbytes(), 30u);
  EXPECT_EQ(h.as<uint16_t>().size(), 15u);
}

TEST(DType, NamesAreKServeDatatypes) {
  EXPECT_STREQ(dtype_name(DType::kFloat32), "FP32");
  EXPECT_STREQ(dtype_name(DType::kFloat16), "FP16");
  EXPECT_STREQ(dtype_name(DType::kInt64), "INT64");
  EXPECT_EQ(parse_dtype("INT64"), DType::kInt64);
  EXPECT_FALSE(parse_dtype("float").has_value());
  EXPECT_EQ(shape_string({1, 28, 28}), "[1, 28, 28]");
  EXPECT_STREQ(dtype_name(DType::kBytes), "BYTES");
  EXPECT_EQ(parse_dtype("BYTES"), DType::kBytes);
  EXPECT_EQ(dtype_size(DType::kBytes), 1u);
  EXPECT_EQ(static_cast<int>(DType::kBytes), 7);
}

TEST(Tensor, ABytesValueIsOneStringOfRankOne) {
  const std::string text("caf\xc3\xa9\0!", 7);  // a NUL is a byte like any other
  Tensor t = Tensor::from_bytes(text);
  EXPECT_EQ(t.dtype(), DType::kBytes);
  EXPECT_EQ(t.shape(), Shape{7});
  EXPECT_EQ(t.nbytes(), 7u);
  EXPECT_EQ(t.byte_string(), text);
  EXPECT_TRUE(Tensor(t) == t);
  EXPECT_FALSE(Tensor::from_bytes("caf") == t);
  Tensor empty = Tensor::from_bytes("");
  EXPECT_EQ(empty.shape(), Shape{0});
  EXPECT_EQ(empty.byte_string(), "");
}

}  // namespace
}  // namespace batchscope

namespace batchscope {
namespace {

TEST(Half, KnownValuesRoundTrip) {
  // Bit patterns from the IEEE 754 binary16 definition.
  const std::pair<uint16_t, float> known[] = {{0x0000, 0.0f},
                                              {0x3c00, 1.0f},
                                              {0xc000, -2.0f},
                                              {0x3555, 0.333251953125f},
                                              {0x7bff, 65504.0f},
                                              {0x0400, 6.103515625e-05f},
                                              {0x0001, 5.9604644775390625e-08f},
                                              {0x7c00, INFINITY},
                                              {0xfc00, -INFINITY}};
  for (auto [bits, value] : known) {
    EXPECT_EQ(half_to_float(bits), value) << std::hex << bits;
    EXPECT_EQ(float_to_half(value), bits) << value;
  }
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);                // overflow to infinity
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 4096), 0x3c00);  // tie rounds to even
  for (uint32_t b = 0; b < 0x7c00; ++b) {                // every finite half survives the trip
    ASSERT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(b))), b) << b;
  }
}

}  // namespace
}  // namespace batchscope

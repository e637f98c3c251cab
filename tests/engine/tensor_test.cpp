#include <gtest/gtest.h>

#include "tensor.h"

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
}

}  // namespace
}  // namespace batchscope

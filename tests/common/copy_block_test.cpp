// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/padding.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace batchscope {
namespace {

TEST(CopyBlock, CopiesABlockIntoALargerArrayAndBack) {
  // A 2x3 block into a 4x5 array of -1, then back out.
  std::vector<int32_t> small(6);
  std::iota(small.begin(), small.end(), 1);
  std::vector<int32_t> big(20, -1);
  copy_block(reinterpret_cast<std::byte*>(big.data()), {4, 5},
             reinterpret_cast<const std::byte*>(small.data()), {2, 3}, {2, 3}, sizeof(int32_t));
  const std::vector<int32_t> want{1,  2,  3,  -1, -1, 4,  5,  6,  -1, -1,
                                  -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  EXPECT_EQ(big, want);
  std::vector<int32_t> back(6, 0);
  copy_block(reinterpret_cast<std::byte*>(back.data()), {2, 3},
             reinterpret_cast<const std::byte*>(big.data()), {4, 5}, {2, 3}, sizeof(int32_t));
  EXPECT_EQ(back, small);
  // Three dimensions.
  std::vector<int32_t> cube(8);
  std::iota(cube.begin(), cube.end(), 1);  // 2x2x2
  std::vector<int32_t> box(27, 0);         // 3x3x3
  copy_block(reinterpret_cast<std::byte*>(box.data()), {3, 3, 3},
             reinterpret_cast<const std::byte*>(cube.data()), {2, 2, 2}, {2, 2, 2},
             sizeof(int32_t));
  EXPECT_EQ(box[0], 1);
  EXPECT_EQ(box[1], 2);
  EXPECT_EQ(box[3], 3);
  EXPECT_EQ(box[9], 5);
  EXPECT_EQ(box[13], 8);
  EXPECT_EQ(std::accumulate(box.begin(), box.end(), 0), 36);
}

TEST(CopyBlock, BytesAreNeverStacked) {
  EXPECT_TRUE(check_stackable("x", DType::kFloat32).ok());
  EXPECT_TRUE(check_stackable("mask", DType::kBool).ok());
  const Status s = check_stackable("text", DType::kBytes);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'text' is BYTES, one byte string per request"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("not stacked"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace batchscope

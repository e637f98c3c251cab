// SPDX-License-Identifier: GPL-3.0-or-later
#include "torch/padding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "tests/torch/model_files.h"
#include "torch/torch_model.h"

namespace batchscope {
namespace {

using test::kData;
using test::kModels;

TEST(Padding, CopiesABlockIntoALargerArrayAndBack) {
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

Tensors ragged_request(int64_t length, float base) {
  std::vector<float> x(static_cast<size_t>(length)), mask(static_cast<size_t>(length), 1.0f);
  for (int64_t i = 0; i < length; ++i)
    x[static_cast<size_t>(i)] = base + 0.25f * static_cast<float>(i);
  return {Tensor::from_floats(x, {length}), Tensor::from_floats(mask, {length})};
}

TEST(Padding, EachRequestGetsExactlyWhatItGetsAlone) {
  auto model = TorchModel::load(kData + "ragged.pt", TorchOptions{.warmup_max_batch = 2});
  ASSERT_TRUE(model.ok()) << model.error().message;
  const std::vector<int64_t> lengths{3, 7, 1, 32, 5};
  std::vector<Tensors> batch;
  for (size_t i = 0; i < lengths.size(); ++i)
    batch.push_back(ragged_request(lengths[i], static_cast<float>(i) - 2.0f));
  std::vector<Tensors> copy = batch;
  auto together = (*model)->run(copy);
  ASSERT_TRUE(together.ok()) << together.error().message;
  ASSERT_EQ(together->size(), lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::vector<Tensors> one{batch[i]};
    auto alone = (*model)->run(one);
    ASSERT_TRUE(alone.ok()) << alone.error().message;
    const Tensors& got = (*together)[i];
    // Cut back to the request's own length, bit for bit what it gets alone.
    EXPECT_EQ(got[0].shape(), Shape{lengths[i]}) << i;
    EXPECT_TRUE(got[0] == (*alone)[0][0]) << i;
    EXPECT_EQ(got[1].shape(), Shape{1}) << i;
    EXPECT_TRUE(got[1] == (*alone)[0][1]) << i;
  }
}

TEST(Padding, ALengthOverTheLargestIsRefusedBeforeTheModel) {
  auto model = TorchModel::load(kData + "ragged.pt", TorchOptions{.warmup_max_batch = 1});
  ASSERT_TRUE(model.ok()) << model.error().message;
  Status s = check_inputs((*model)->metadata(), ragged_request(33, 0));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dimension 1 is 33, over its largest 32"), std::string::npos)
      << s.message();
  EXPECT_TRUE(check_inputs((*model)->metadata(), ragged_request(32, 0)).ok());
  Tensors mixed = ragged_request(4, 0);
  mixed[0] = Tensor::from_floats(std::vector<float>(8, 0.0f), {2, 4});
  s = check_inputs((*model)->metadata(), mixed);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("input 'x' has shape [2, 4], expected [-1]"), std::string::npos)
      << s.message();
}

TEST(Padding, TheTextClassifierPaddedAgreesWithOneAtATime) {
  auto model =
      TorchModel::load(kModels + "text_classifier.pt", TorchOptions{.warmup_max_batch = 1});
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelMetadata& meta = (*model)->metadata();
  EXPECT_EQ(meta.inputs[0].describe(), "input_ids INT64 [-1, -1] up to [-1, 256]");
  std::vector<Tensors> batch;
  for (int64_t len : {5, 40, 12, 200, 1}) batch.push_back(random_inputs(meta, 40 + len, len));
  for (const Tensors& r : batch) {
    for (int64_t v : r[1].as<int64_t>()) ASSERT_EQ(v, 1);  // its range: a mask of ones
    for (int64_t v : r[0].as<int64_t>()) ASSERT_TRUE(v >= 1 && v <= 999);
  }
  std::vector<Tensors> copy = batch;
  auto together = (*model)->run(copy);
  ASSERT_TRUE(together.ok()) << together.error().message;
  for (size_t i = 0; i < batch.size(); ++i) {
    std::vector<Tensors> one{batch[i]};
    auto alone = (*model)->run(one);
    ASSERT_TRUE(alone.ok());
    const auto a = (*alone)[0][0].as<float>();
    const auto t = (*together)[i][0].as<float>();
    ASSERT_EQ(a.size(), 2u);
    // The padding is masked out; what differs is the order of float sums.
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(t[k], a[k], 1e-4) << i;
  }
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/padding.h"

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

// SPDX-License-Identifier: GPL-3.0-or-later
// The runners on a GPU, where LibTorch sees one (each test skips otherwise;
// Debian's LibTorch has no CUDA, a PyTorch wheel's does): every shipped model
// gives on cuda:0 what it gives on the CPU, each request of a batch its own
// answer; two lanes on one GPU through the engine answer every request with
// its own result; the profile measures t(b) on the GPU; and tiny_lm decodes
// the same greedy tokens on the GPU as on the CPU.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <numeric>
#include <set>

#include "batching/engine.h"
#include "common/metadata_json.h"
#include "tests/torch/model_files.h"
#include "tests/torch/tensor_compare.h"
#include "torch/profile.h"
#include "torch/torch_lm.h"
#include "torch/torch_model.h"

namespace batchscope {
namespace {

using test::kModels;
const std::string kGpu = "cuda:0";

bool has_gpu() {
  const auto d = available_devices();
  return std::find(d.begin(), d.end(), kGpu) != d.end();
}

#define REQUIRE_GPU() \
  if (!has_gpu()) GTEST_SKIP() << "LibTorch sees no " << kGpu

std::unique_ptr<TorchModel> load_on(const std::string& path, const std::string& device) {
  TorchOptions o;
  o.device = device;
  o.warmup_max_batch = 8;
  auto m = TorchModel::load(path, o);
  EXPECT_TRUE(m.ok()) << device << ": " << (m.ok() ? "" : m.error().message);
  return m.ok() ? std::move(*m) : nullptr;
}

class GpuModel : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuModel, GivesWhatTheCpuGivesToEachRequestOfABatch) {
  REQUIRE_GPU();
  const std::string path = kModels + GetParam() + ".pt";
  auto gpu = load_on(path, kGpu);
  auto cpu = load_on(path, "cpu");
  ASSERT_TRUE(gpu && cpu);
  EXPECT_EQ(gpu->device(), kGpu);
  std::vector<Tensors> batch;
  for (uint64_t i = 0; i < 16; ++i) batch.push_back(random_inputs(gpu->metadata(), 300 + i));
  auto on_gpu = gpu->run(batch);
  auto on_cpu = cpu->run(batch);
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.error().message;
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.error().message;
  ASSERT_EQ(on_gpu->size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    // cuDNN may use TF32 for convolutions: about 1e-3 relative.
    EXPECT_LE(relative_error((*on_gpu)[i], (*on_cpu)[i]), 1e-2) << "request " << i;
    EXPECT_EQ((*on_gpu)[i][0].shape(), gpu->metadata().outputs[0].item_shape());
    if (i > 0) {
      EXPECT_GT(relative_error((*on_gpu)[i], (*on_gpu)[i - 1]), 1e-3) << "request " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, GpuModel, ::testing::Values("linear_128x64", "mlp", "cnn_mnist"));

TEST(Gpu, TwoLanesOnOneGpuAnswerEveryRequestWithItsOwnResult) {
  REQUIRE_GPU();
  const std::string path = kModels + "mlp.pt";
  auto cpu = load_on(path, "cpu");
  ASSERT_TRUE(cpu);
  TorchOptions to;
  to.device = kGpu;
  to.lanes = 2;
  to.warmup_max_batch = 8;
  Engine engine(torch_runner_factory(path, to),
                Options{.max_batch_size = 16, .max_wait_us = 2000, .num_lanes = 2});
  ASSERT_TRUE(engine.start().ok());
  constexpr int kRequests = 400;
  std::vector<Tensors> inputs;
  for (int i = 0; i < kRequests; ++i) inputs.push_back(random_inputs(cpu->metadata(), 900 + i));
  std::vector<std::promise<Expected<Tensors>>> answers(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    engine.submit(Tensors(inputs[static_cast<size_t>(i)]), [&answers, i](TensorResponse&& r) {
      answers[static_cast<size_t>(i)].set_value(std::move(r.result));
    });
  }
  for (int i = 0; i < kRequests; ++i) {
    auto got = answers[static_cast<size_t>(i)].get_future().get();
    ASSERT_TRUE(got.ok()) << "request " << i << ": " << got.error().message;
    std::vector<Tensors> one{inputs[static_cast<size_t>(i)]};
    auto want = cpu->run(one);
    ASSERT_TRUE(want.ok());
    EXPECT_LE(relative_error(*got, (*want)[0]), 1e-4) << "request " << i;
  }
  engine.stop();
  RecordBatch records;
  engine.drain_records(records);
  std::set<uint16_t> lanes;
  uint32_t largest = 0;
  for (const BatchRecord& b : records.batches) {
    lanes.insert(b.lane);
    largest = std::max(largest, b.size);
  }
  EXPECT_EQ(lanes.size(), 2u) << "both lanes ran batches";
  EXPECT_GT(largest, 1u) << "requests were batched";
}

TEST(Gpu, ProfileMeasuresTheCostCurveOnTheGpu) {
  REQUIRE_GPU();
  ProfileOptions o;
  o.device = kGpu;
  o.max_batch = 64;
  o.seconds_per_point = 0.05;
  auto r = profile_model(kModels + "mlp.pt", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->device, kGpu);
  ASSERT_EQ(r->points.size(), 7u);  // 1, 2, 4, ..., 64
  for (const ProfilePoint& p : r->points) {
    EXPECT_GT(p.median_us, 0) << "batch " << p.batch;
    EXPECT_GE(p.runs, o.min_runs) << "batch " << p.batch;
  }
  // On a GPU a batch of 64 costs far less than 64 batches of one.
  EXPECT_GT(r->points.back().speedup, 4) << profile_json(*r);
}

TEST(Gpu, TinyLmDecodesTheCpusGreedyTokens) {
  REQUIRE_GPU();
  const std::string path = kModels + "tiny_lm.pt";
  TorchOptions g;
  g.device = kGpu;
  auto gpu = TorchLm::load(path, g, 64 * 16);
  auto cpu = TorchLm::load(path, {}, 64 * 16);
  ASSERT_TRUE(gpu.ok()) << gpu.error().message;
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_EQ((*gpu)->device(), kGpu);
  const std::vector<std::string> prompts = {"And God said", "In the beginning"};
  auto greedy = [&](TorchLm& lm) {
    std::vector<std::vector<int32_t>> tables, tokens, out(prompts.size());
    LmStep first;
    for (size_t i = 0; i < prompts.size(); ++i) {
      tables.emplace_back(9);
      std::iota(tables.back().begin(), tables.back().end(), static_cast<int32_t>(i * 9));
      tokens.emplace_back(prompts[i].begin(), prompts[i].end());
      first.prefills.push_back(PrefillChunk{tokens[i], 0, tables[i], true});
    }
    auto l = lm.step(first);
    for (int s = 0; s < 16 && l.ok(); ++s) {
      const size_t vocab = l->values.size() / l->rows;
      LmStep next;
      for (size_t i = 0; i < prompts.size(); ++i) {
        auto row = l->values.begin() + static_cast<std::ptrdiff_t>(i * vocab);
        out[i].push_back(static_cast<int32_t>(
            std::max_element(row, row + static_cast<std::ptrdiff_t>(vocab)) - row));
        const int position = static_cast<int>(tokens[i].size() + out[i].size()) - 1;
        next.decodes.push_back(DecodeItem{out[i].back(), position, tables[i]});
      }
      l = lm.step(next);
    }
    EXPECT_TRUE(l.ok()) << l.error().message;
    return out;
  };
  const auto on_gpu = greedy(**gpu);
  const auto on_cpu = greedy(**cpu);
  ASSERT_EQ(on_gpu[0].size(), 16u);
  EXPECT_EQ(on_gpu, on_cpu);
  EXPECT_GT((*gpu)->cache_bytes(), 0u);
}

}  // namespace
}  // namespace batchscope

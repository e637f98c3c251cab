// SPDX-License-Identifier: GPL-3.0-or-later
#include "roofline/roofline_cost.h"

#include <gtest/gtest.h>

#include <string>

namespace batchscope {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

RooflineSetup llama8b_on_h100(uint32_t tp = 1) {
  RooflineSetup s;
  auto shape = read_model_config(std::string(BATCHSCOPE_MODELS) + "/llm-configs/llama-3.1-8b");
  EXPECT_TRUE(shape) << shape.error().message;
  s.model = *shape;
  auto gpu = gpu_named("h100-sxm");
  EXPECT_TRUE(gpu) << gpu.error().message;
  s.gpu = *gpu;
  s.tp = tp;
  return s;
}

// Peaks and bandwidth taken whole, so that each term is its count over the
// GPU's figure.
const RooflineConstants kExact{1.0, 1.0, 0, 10, 0, "test"};

TEST(RooflineCost, WeightsKvAndBlocksOfLlama8bOnOneH100ByHand) {
  auto c = RooflineCost::make(llama8b_on_h100(), &kExact);
  ASSERT_TRUE(c) << c.error().message;
  // 8,030,261,248 parameters at 2 bytes.
  EXPECT_DOUBLE_EQ(c->weight_bytes_per_gpu(), 16'060'522'496.0);
  EXPECT_DOUBLE_EQ(c->kv_bytes_per_token_per_gpu(), 131072);
  // 1 GiB besides the model, 8192 tokens x (4 x 4096 + 2 x 14336) x 2 bytes
  // of activations, 256 sequences' fp32 logits over 128256 tokens.
  EXPECT_DOUBLE_EQ(c->reserve_bytes_per_gpu(), kGiB + 8192.0 * 45056 * 2 + 256.0 * 128256 * 4);
  // (80 GiB x 0.9 - weights - reserve) / (16 tokens x 128 KiB).
  EXPECT_EQ(c->kv_blocks(), 28279u);
  EXPECT_EQ(c->kv_cache_tokens(), 28279u * 16);
  // Less memory for the cache, fewer blocks; fp8 KV doubles them.
  RooflineSetup s = llama8b_on_h100();
  s.memory_utilization = 0.5;
  EXPECT_LT(RooflineCost::make(s, &kExact)->kv_blocks(), 28279u / 2);
  s = llama8b_on_h100();
  s.kv_dtype = "fp8";
  EXPECT_EQ(RooflineCost::make(s, &kExact)->kv_blocks(), 56558u);
}

TEST(RooflineCost, ADecodeIsBoundByMemoryAndAPrefillByCompute) {
  auto c = RooflineCost::make(llama8b_on_h100(), &kExact);
  ASSERT_TRUE(c) << c.error().message;
  // One decode reading 1000 cached tokens: the weights but the embedding
  // (7,504,924,672 x 2 bytes) and 1001 tokens of KV, over 3350 GB/s.
  RooflineStep d = c->step(1, 0, 1000, 0);
  EXPECT_DOUBLE_EQ(d.bytes, 7'504'924'672.0 * 2 + 131072.0 * 1001);
  EXPECT_NEAR(d.memory_us, d.bytes / 3350e9 * 1e6, 1e-6);
  EXPECT_NEAR(d.memory_us, 4519.7, 0.1);
  EXPECT_DOUBLE_EQ(d.flops, 2.0 * 7'504'924'672 + 4.0 * 32 * 32 * 128 * 1000);
  EXPECT_GT(d.memory_us, 100 * d.compute_us);
  EXPECT_DOUBLE_EQ(d.total_us(), d.memory_us);
  EXPECT_DOUBLE_EQ(d.allreduce_us, 0);
  // A 2048-token prompt: each token attends to those before it and itself.
  const uint64_t reads = 2048ull * 2049 / 2;
  RooflineStep p = c->step(0, 2048, 0, reads);
  EXPECT_DOUBLE_EQ(p.flops, 2.0 * 7'504'924'672 * 2048 + 4.0 * 32 * 32 * 128 * reads);
  EXPECT_NEAR(p.compute_us, p.flops / 989.5e12 * 1e6, 1e-6);
  EXPECT_GT(p.compute_us, p.memory_us);
  EXPECT_DOUBLE_EQ(p.total_us(), p.compute_us);
  // Efficiencies below 1 and an overhead add to it.
  const RooflineConstants half{0.5, 0.5, 100, 10, 0, "test"};
  auto slower = RooflineCost::make(llama8b_on_h100(), &half);
  EXPECT_NEAR(slower->step_us(1, 0, 1000, 0), 2 * d.memory_us + 100, 1e-6);
}

TEST(RooflineCost, TensorParallelSplitsWeightsAndKvAndAddsAllReduces) {
  auto one = RooflineCost::make(llama8b_on_h100(1), &kExact);
  auto two = RooflineCost::make(llama8b_on_h100(2), &kExact);
  ASSERT_TRUE(one && two);
  EXPECT_DOUBLE_EQ(two->weight_bytes_per_gpu(), one->weight_bytes_per_gpu() / 2);
  EXPECT_DOUBLE_EQ(two->kv_bytes_per_token_per_gpu(), 65536);
  // 64 all-reduces a step (2 a layer), each 10 us and a ring's 2 (tp-1)/tp
  // of 4096 x 2 bytes a token over NVLink's 450 GB/s a direction.
  const RooflineStep s = two->step(1, 0, 0, 0);
  EXPECT_NEAR(s.allreduce_us, 64 * (10 + 8192.0 / 450e9 * 1e6), 1e-6);
  // 16 GPUs for 8 KV heads: each keeps one head whole.
  RooflineSetup wide = llama8b_on_h100(16);
  auto sixteen = RooflineCost::make(wide, &kExact);
  ASSERT_TRUE(sixteen) << sixteen.error().message;
  EXPECT_DOUBLE_EQ(sixteen->kv_bytes_per_token_per_gpu(), 131072.0 / 8);
}

TEST(RooflineCost, WhatCannotRunIsRefusedWithItsReason) {
  RooflineSetup s = llama8b_on_h100(3);
  auto c = RooflineCost::make(s, &kExact);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("--tp must divide llama-3.1-8b's 32 attention heads, not 3"),
            std::string::npos)
      << c.error().message;
  s = llama8b_on_h100();
  s.gpu = *gpu_named("a100-sxm-80gb");
  s.dtype = "fp8";
  c = RooflineCost::make(s, &kExact);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("has no fp8 tensor cores"), std::string::npos)
      << c.error().message;
  // 70B in bf16 does not fit one 80 GB GPU.
  s = llama8b_on_h100();
  s.model = *read_model_config(std::string(BATCHSCOPE_MODELS) + "/llm-configs/llama-3.1-70b");
  c = RooflineCost::make(s, &kExact);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("leave no KV cache"), std::string::npos) << c.error().message;
  s.tp = 2;
  EXPECT_TRUE(RooflineCost::make(s, &kExact));
  s = llama8b_on_h100();
  s.memory_utilization = 1.5;
  c = RooflineCost::make(s, &kExact);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("--gpu-memory-utilization must be in (0, 1], not 1.5"),
            std::string::npos)
      << c.error().message;
}

}  // namespace
}  // namespace batchscope

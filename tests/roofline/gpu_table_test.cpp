// SPDX-License-Identifier: GPL-3.0-or-later
#include "roofline/gpu_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace batchscope {
namespace {

TEST(GpuTable, EveryEntryHasEachFigureAndASource) {
  std::set<std::string> names;
  for (const GpuSpec& g : gpu_table()) {
    SCOPED_TRACE(g.name);
    EXPECT_TRUE(names.insert(g.name).second) << "twice";
    EXPECT_FALSE(g.title.empty());
    EXPECT_GT(g.memory_gb, 0);
    EXPECT_GT(g.bandwidth_gbs, 0);
    EXPECT_GT(g.tflops_bf16, 0);
    EXPECT_GT(g.tflops_fp16, 0);
    EXPECT_GT(g.interconnect_gbs, 0);
    EXPECT_FALSE(g.interconnect.empty());
    // Every figure's document: a vendor's page or datasheet.
    EXPECT_NE(g.source.find("http"), std::string::npos) << g.source;
    // FP8 tensor cores from Ada and Hopper on.
    if (g.family == "ampere") {
      EXPECT_EQ(g.tflops_fp8, 0);
    } else {
      EXPECT_TRUE(g.family == "ada" || g.family == "hopper" || g.family == "blackwell") << g.family;
      EXPECT_GE(g.tflops_fp8, g.tflops_bf16);
    }
    // A JSON round trip gives it back.
    auto back = parse_gpu_spec(gpu_spec_json(g), "table");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->name, g.name);
    EXPECT_EQ(back->bandwidth_gbs, g.bandwidth_gbs);
    EXPECT_EQ(back->tflops_fp8, g.tflops_fp8);
    EXPECT_EQ(back->source, g.source);
  }
  for (const char* n : {"a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb", "h100-sxm", "h100-pcie",
                        "h200", "l40s", "l4", "a10g", "rtx-4090", "rtx-pro-6000"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
}

TEST(GpuTable, LookUpsAndCustomSpecsSayWhatIsWrong) {
  auto h100 = gpu_named("h100-sxm");
  ASSERT_TRUE(h100) << h100.error().message;
  EXPECT_EQ(h100->family, "hopper");
  EXPECT_EQ(h100->tflops("fp8"), h100->tflops_fp8);
  EXPECT_EQ(h100->tflops("int4"), 0);
  auto none = gpu_named("tpu-v5");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("--gpu \"tpu-v5\" is not in the table (a100-sxm-40gb"),
            std::string::npos)
      << none.error().message;
  auto mine = parse_gpu_spec(R"({"name": "mine", "family": "hopper", "memory_gb": 96,
      "bandwidth_gbs": 4000, "tflops_bf16": 900, "tflops_fp16": 900, "source": "measured"})",
                             "--gpu-spec mine.json");
  ASSERT_TRUE(mine) << mine.error().message;
  EXPECT_EQ(mine->title, "mine");
  EXPECT_EQ(mine->tflops_fp8, 0);
  auto bad = parse_gpu_spec(R"({"name": "x", "family": "hopper", "memory_gb": -1,
      "bandwidth_gbs": 4000, "tflops_bf16": 900, "tflops_fp16": 900, "source": "s"})",
                            "--gpu-spec x.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--gpu-spec x.json: \"memory_gb\" must be a number above 0 "
                                     "to 1e7, not -1"),
            std::string::npos)
      << bad.error().message;
  bad = parse_gpu_spec(R"({"name": "x", "family": "volta", "memory_gb": 16, "bandwidth_gbs": 900,
      "tflops_bf16": 100, "tflops_fp16": 100, "source": "s"})",
                       "f");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("\"family\" must be ampere, ada, hopper or blackwell, not "
                                     "\"volta\""),
            std::string::npos)
      << bad.error().message;
  bad = parse_gpu_spec("[1]", "f");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("must be a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace batchscope

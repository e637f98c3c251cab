// SPDX-License-Identifier: GPL-3.0-or-later
#include "roofline/model_shape.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace batchscope {
namespace {

// Llama-3.1-8B's figures (models/llm-configs/llama-3.1-8b/config.json).
const char* kLlama8b = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072,
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})";

TEST(ModelShape, Llama8bCountsItsParametersKvAndFlopsByHand) {
  auto s = parse_model_config(kLlama8b, "llama");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->head_dim, 128u);  // 4096 over 32 heads, as config.json leaves it out
  // Per layer: q 4096x4096, k and v 4096x1024, o 4096x4096, the MLP 3 x
  // 4096x14336, two norms of 4096: 218,112,000; 32 layers, the final norm
  // and the head (128256 x 4096).
  EXPECT_EQ(s->matmul_parameters(), 32ull * 218'112'000 + 4096 + 525'336'576);
  // And the untied embedding: 8.03 B, as the model card says.
  EXPECT_EQ(s->parameters(), 8'030'261'248ull);
  // K and V, 32 layers x 8 heads x 128 x 2 bytes: 128 KiB a token.
  EXPECT_DOUBLE_EQ(s->kv_bytes_per_token("bf16"), 131072);
  EXPECT_DOUBLE_EQ(s->kv_bytes_per_token("fp8"), 65536);
  EXPECT_DOUBLE_EQ(s->flops_per_token(), 2.0 * 7'504'924'672);
  EXPECT_DOUBLE_EQ(s->attention_flops_per_context_token(), 4.0 * 32 * 32 * 128);
  EXPECT_EQ(s->dtype, "bf16");
  EXPECT_NE(s->describe().find("8.03 B parameters"), std::string::npos) << s->describe();
}

TEST(ModelShape, LeftOutKeysTakeTheFamilysDefaults) {
  // Gemma ties its head to the embedding; no num_key_value_heads: as many as heads.
  auto s = parse_model_config(R"({"architectures": ["GemmaForCausalLM"], "hidden_size": 3072,
      "intermediate_size": 24576, "max_position_embeddings": 8192, "num_attention_heads": 16,
      "num_hidden_layers": 28, "head_dim": 256, "vocab_size": 256000})",
                              "gemma");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->tied_embeddings);
  EXPECT_EQ(s->kv_heads, 16u);
  EXPECT_EQ(s->head_dim, 256u);  // given, not 3072 / 16
  EXPECT_EQ(s->parameters(), s->matmul_parameters());
  // Qwen2 has q/k/v biases.
  s = parse_model_config(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64,
      "intermediate_size": 128, "max_position_embeddings": 64, "num_attention_heads": 4,
      "num_key_value_heads": 2, "num_hidden_layers": 1, "vocab_size": 10})",
                         "q");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->qkv_bias);
  // 64x64 q, 2 x 64x32 k/v, 64x64 o, 3 x 64x128 MLP, 2 norms, biases 64 + 2 x 32; final norm, head.
  EXPECT_EQ(s->matmul_parameters(), 4096u + 4096 + 4096 + 24576 + 128 + 128 + 64 + 640);
}

TEST(ModelShape, MixtureOfExpertsIsRefusedByName) {
  auto s = parse_model_config(R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
      "num_local_experts": 8, "num_experts_per_tok": 2})",
                              "mixtral");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("MixtralForCausalLM is a mixture of experts "
                                   "(num_local_experts 8, num_experts_per_tok 2)"),
            std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("the weights of the experts each step reads"),
            std::string::npos);
}

TEST(ModelShape, BadValuesAreNamedAndQuoted) {
  auto s = parse_model_config(R"({"architectures": ["GPT2LMHeadModel"]})", "gpt2");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("the architecture \"GPT2LMHeadModel\" is not one the step "
                                   "cost covers: LlamaForCausalLM"),
            std::string::npos)
      << s.error().message;
  std::string bad = kLlama8b;
  bad.replace(bad.find("\"num_key_value_heads\": 8"), 24, "\"num_key_value_heads\": 5");
  s = parse_model_config(bad, "llama");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("must divide num_attention_heads (32), not 5"),
            std::string::npos)
      << s.error().message;
  bad = kLlama8b;
  bad.replace(bad.find("\"hidden_size\": 4096"), 19, "\"hidden_size\": -3");
  s = parse_model_config(bad, "llama");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("\"hidden_size\" must be a whole number from 1 to 1048576, "
                                   "not -3"),
            std::string::npos)
      << s.error().message;
  s = parse_model_config("{\"architectures\": ", "x");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("x's config.json is not JSON"), std::string::npos);
  s = read_model_config("/nonexistent/folder");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("cannot read /nonexistent/folder"), std::string::npos)
      << s.error().message;
}

// Each family's file in models/llm-configs, read as --model-config reads
// it: its shape against the golden line, and its parameters against the
// count its model card gives.
TEST(ModelShape, TheShippedConfigsMatchTheirGoldenShapesAndModelCards) {
  struct Case {
    const char* folder;
    double card_parameters;  // the model card's count (its safetensors' total, rounded)
  };
  std::ifstream golden(std::string(BATCHSCOPE_TEST_DATA) + "/shapes.txt");
  ASSERT_TRUE(golden) << "tests/roofline/data/shapes.txt";
  std::string line;
  for (const Case& c :
       {Case{"llama-3.1-8b", 8.03e9}, Case{"llama-3.1-70b", 70.55e9}, Case{"qwen2.5-7b", 7.62e9},
        Case{"mistral-7b-v0.3", 7.25e9}, Case{"gemma-2-9b", 9.24e9}, Case{"qwen3-8b", 8.19e9}}) {
    auto s = read_model_config(std::string(BATCHSCOPE_MODELS) + "/llm-configs/" + c.folder);
    ASSERT_TRUE(s) << c.folder << ": " << s.error().message;
    ASSERT_TRUE(std::getline(golden, line)) << c.folder;
    std::ostringstream got;
    got << s->describe() << "; KV " << s->kv_bytes_per_token("bf16") << " bytes a token";
    EXPECT_EQ(got.str(), line);
    EXPECT_NEAR(static_cast<double>(s->parameters()) / c.card_parameters, 1.0, 0.002) << c.folder;
  }
  // The mixture of experts is refused by name.
  auto moe = read_model_config(std::string(BATCHSCOPE_MODELS) + "/llm-configs/mixtral-8x7b");
  ASSERT_FALSE(moe);
  EXPECT_NE(moe.error().message.find("mixtral-8x7b's config.json: MixtralForCausalLM is a "
                                     "mixture of experts"),
            std::string::npos)
      << moe.error().message;
}

}  // namespace
}  // namespace batchscope

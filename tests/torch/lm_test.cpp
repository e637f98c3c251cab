// SPDX-License-Identifier: GPL-3.0-or-later
// The generative runner on the shipped tiny_lm: batched decodes give each
// sequence the same greedy tokens as decoding it alone, chunked prefill the
// same logits as one call, scattered block tables the same tokens as
// contiguous ones; bad tokens, positions and blocks are refused before they
// reach the model and leave it usable; sidecar errors name the file; and the
// model's greedy text is English.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>

#include "tests/torch/model_files.h"
#include "torch/torch_lm.h"

namespace batchscope {
namespace {

using test::kModels;
const std::string kTinyLm = kModels + "tiny_lm.pt";
constexpr int kCacheBlocks = 64;

std::vector<int32_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<int32_t> range_blocks(int first, int count) {
  std::vector<int32_t> v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

int32_t argmax(const LmLogits& l, size_t row) {
  const size_t vocab = l.values.size() / l.rows;
  auto begin = l.values.begin() + static_cast<std::ptrdiff_t>(row * vocab);
  return static_cast<int32_t>(std::max_element(begin, begin + static_cast<std::ptrdiff_t>(vocab)) -
                              begin);
}

class LmTorchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto lm = TorchLm::load(kTinyLm, {}, kCacheBlocks * 16);
    ASSERT_TRUE(lm.ok()) << lm.error().message;
    lm_ = std::move(*lm).release();
  }
  void SetUp() override { ASSERT_NE(lm_, nullptr) << "tiny_lm did not load"; }
  static void TearDownTestSuite() {
    delete lm_;
    lm_ = nullptr;
  }

  LmLogits run(const LmStep& step) {
    auto r = lm_->step(step);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? std::move(*r) : LmLogits{};
  }

  // Greedy continuations of `prompts`, each through its block table: one
  // step prefills every prompt, then each step decodes all of them
  // together (batched), or each prompt runs through its own steps.
  std::vector<std::vector<int32_t>> greedy(const std::vector<std::string>& prompts,
                                           const std::vector<std::vector<int32_t>>& tables,
                                           int steps, bool batched) {
    std::vector<std::vector<int32_t>> out(prompts.size());
    if (!batched) {
      for (size_t i = 0; i < prompts.size(); ++i) {
        out[i] = greedy({prompts[i]}, {tables[i]}, steps, true)[0];
      }
      return out;
    }
    std::vector<std::vector<int32_t>> tokens;
    LmStep first;
    for (size_t i = 0; i < prompts.size(); ++i) tokens.push_back(bytes_of(prompts[i]));
    for (size_t i = 0; i < prompts.size(); ++i) {
      first.prefills.push_back(PrefillChunk{tokens[i], 0, tables[i], true});
    }
    LmLogits l = run(first);
    if (l.rows != prompts.size()) return out;
    for (size_t i = 0; i < prompts.size(); ++i) out[i].push_back(argmax(l, i));
    for (int s = 1; s < steps; ++s) {
      LmStep step;
      for (size_t i = 0; i < prompts.size(); ++i) {
        const int position = static_cast<int>(tokens[i].size() + out[i].size()) - 1;
        step.decodes.push_back(DecodeItem{out[i].back(), position, tables[i]});
      }
      l = run(step);
      if (l.rows != prompts.size()) return out;
      for (size_t i = 0; i < prompts.size(); ++i) out[i].push_back(argmax(l, i));
    }
    return out;
  }

  static TorchLm* lm_;
};

TorchLm* LmTorchTest::lm_ = nullptr;

TEST_F(LmTorchTest, InfoComesFromTheSidecar) {
  const LmInfo& info = lm_->info();
  EXPECT_EQ(info.name, "tiny_lm");
  EXPECT_EQ(info.tokenizer, "bytes");
  EXPECT_EQ(info.vocab_size, 257);
  EXPECT_EQ(info.eos_token, 256);
  EXPECT_EQ(info.context_length, 1024);
  EXPECT_EQ(info.block_size, 16);
  EXPECT_EQ(info.num_blocks, kCacheBlocks);
  EXPECT_EQ(lm_->device(), "cpu");
  EXPECT_GT(lm_->cache_bytes(), 0u);
  auto empty = lm_->step(LmStep{});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->rows, 0u);
}

TEST_F(LmTorchTest, BatchedDecodeGivesEachSequenceItsAloneTokens) {
  const std::vector<std::string> prompts = {
      "And God said",
      "In the beginning",
      "J",
      "Blessed are the poor in spirit: for theirs is the kingdom of heaven. Blessed are they "
      "that mourn: for they",
  };
  std::vector<std::vector<int32_t>> tables;
  for (int i = 0; i < 4; ++i) tables.push_back(range_blocks(i * 9, 9));
  const auto together = greedy(prompts, tables, 24, true);
  const auto alone = greedy(prompts, tables, 24, false);
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(together[i].size(), 24u) << prompts[i];
    EXPECT_EQ(together[i], alone[i]) << prompts[i];
  }
}

TEST_F(LmTorchTest, ChunkedPrefillMatchesOneCall) {
  const auto prompt = bytes_of(
      "And the earth was without form, and void; and darkness was upon the face of the deep.");
  const auto one_table = range_blocks(0, 6);
  LmStep one;
  one.prefills.push_back(PrefillChunk{prompt, 0, one_table, true});
  const LmLogits whole = run(one);
  ASSERT_EQ(whole.rows, 1u);

  const std::vector<int32_t> table = {40, 12, 33, 8, 21, 50};
  const std::span<const int32_t> all(prompt);
  size_t at = 0;
  LmLogits last;
  for (size_t size : {5, 7, 11, 16, 1, 23}) {
    size = std::min(size, all.size() - at);
    const bool end = at + size == all.size();
    LmStep step;
    step.prefills.push_back(PrefillChunk{all.subspan(at, size), static_cast<int>(at), table, end});
    last = run(step);
    EXPECT_EQ(last.rows, end ? 1u : 0u);
    at += size;
  }
  if (at < all.size()) {  // the rest in one chunk
    LmStep step;
    step.prefills.push_back(PrefillChunk{all.subspan(at), static_cast<int>(at), table, true});
    last = run(step);
  }
  ASSERT_EQ(last.rows, 1u);
  EXPECT_EQ(argmax(last, 0), argmax(whole, 0));
  float worst = 0;
  for (size_t k = 0; k < whole.values.size(); ++k) {
    worst = std::max(worst, std::abs(last.values[k] - whole.values[k]));
  }
  EXPECT_LT(worst, 1e-4f);
}

TEST_F(LmTorchTest, OneStepMixesPrefillsAndDecodesInOrder) {
  // Sequence a is decoding, b's prompt arrives: one step holds both, and its
  // rows are b's prefill logits, then a's decode logits.
  const auto a = bytes_of("And Moses said unto the LORD");
  const auto b = bytes_of("Thou shalt");
  const auto ta = range_blocks(0, 3), tb = range_blocks(3, 2);
  LmStep pa;
  pa.prefills.push_back(PrefillChunk{a, 0, ta, true});
  const int32_t next_a = argmax(run(pa), 0);

  LmStep alone_b;
  alone_b.prefills.push_back(PrefillChunk{b, 0, tb, true});
  const LmLogits lb = run(alone_b);
  LmStep alone_a;
  alone_a.decodes.push_back(DecodeItem{next_a, static_cast<int>(a.size()), ta});
  const LmLogits la = run(alone_a);

  LmStep mixed;
  mixed.decodes.push_back(DecodeItem{next_a, static_cast<int>(a.size()), ta});
  mixed.prefills.push_back(PrefillChunk{b, 0, tb, true});
  const LmLogits both = run(mixed);
  ASSERT_EQ(both.rows, 2u);
  EXPECT_EQ(argmax(both, 0), argmax(lb, 0));
  EXPECT_EQ(argmax(both, 1), argmax(la, 0));
}

TEST_F(LmTorchTest, ScatteredBlockTablesMatchContiguousOnes) {
  const std::vector<std::string> prompt = {"Now the serpent was more subtil than any beast"};
  const auto contiguous = greedy(prompt, {range_blocks(0, 5)}, 24, true);
  const auto scattered = greedy(prompt, {{7, 2, 30, 63, 11}}, 24, true);
  ASSERT_EQ(contiguous[0].size(), 24u);
  EXPECT_EQ(scattered, contiguous);
}

TEST_F(LmTorchTest, TheLastContextPositionDecodes) {
  const int last = lm_->info().context_length - 1;
  auto table = range_blocks(0, kCacheBlocks);
  LmStep step;
  step.decodes.push_back(DecodeItem{'a', last, table});
  const LmLogits l = run(step);
  ASSERT_EQ(l.rows, 1u);
  for (float v : l.values) ASSERT_TRUE(std::isfinite(v));
}

TEST_F(LmTorchTest, InvalidInputsAreRefusedAndTheRunnerGoesOn) {
  const std::vector<std::string> prompt = {"And it came to pass"};
  const auto table = range_blocks(0, 4);
  const auto before = greedy(prompt, {table}, 8, true);

  const auto text = bytes_of("abc");
  const std::vector<int32_t> bad_token = {'a', 300, 'b'};
  const std::vector<int32_t> negative = {'a', -1};
  const std::vector<int32_t> beyond_pool = {0, kCacheBlocks};
  const std::vector<int32_t> outside = {kCacheBlocks};
  const std::vector<int32_t> long_prompt(20, 'a');
  std::vector<std::pair<std::string, LmStep>> cases;
  auto add = [&](std::string name) {
    return &cases.emplace_back(std::move(name), LmStep{}).second;
  };
  add("token 300")->prefills.push_back(PrefillChunk{bad_token, 0, table, true});
  add("token -1")->prefills.push_back(PrefillChunk{negative, 0, table, true});
  add("decode token 300")->decodes.push_back(DecodeItem{300, 3, table});
  add("empty chunk")->prefills.push_back(PrefillChunk{{}, 0, table, true});
  add("negative start")->prefills.push_back(PrefillChunk{text, -1, table, true});
  const auto whole = range_blocks(0, kCacheBlocks);
  add("position = context")->decodes.push_back(DecodeItem{'a', 1024, whole});
  add("chunk past context")->prefills.push_back(PrefillChunk{text, 1022, whole, true});
  add("block beyond the pool")->prefills.push_back(PrefillChunk{long_prompt, 0, beyond_pool, true});
  add("table too short")->prefills.push_back(PrefillChunk{long_prompt, 0, {table.data(), 1}, true});
  add("decode table too short")->decodes.push_back(DecodeItem{'a', 16, {table.data(), 1}});
  LmStep* mixed = add("a good prefill, a bad decode");
  mixed->prefills.push_back(PrefillChunk{text, 0, table, true});
  mixed->decodes.push_back(DecodeItem{'a', 3, outside});
  for (const auto& [name, step] : cases) {
    auto r = lm_->step(step);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << name;
    EXPECT_FALSE(r.error().message.empty()) << name;
  }
  auto r = lm_->step(cases[0].second);
  EXPECT_NE(r.error().message.find("300"), std::string::npos) << r.error().message;
  r = lm_->step(cases[7].second);
  EXPECT_NE(r.error().message.find("block id 64"), std::string::npos) << r.error().message;

  EXPECT_EQ(greedy(prompt, {table}, 8, true), before);
}

TEST_F(LmTorchTest, GreedyCompletionIsEnglish) {
  const std::string prompt = "And God said";
  const auto out = greedy({prompt}, {range_blocks(0, 6)}, 64, true)[0];
  std::string text;
  for (int32_t t : out) {
    if (t == lm_->info().eos_token) break;
    ASSERT_LT(t, 256);
    text += static_cast<char>(t);
  }
  for (char c : text) EXPECT_TRUE(c >= ' ' && c <= '~') << "byte " << int(c) << " in " << text;
  std::set<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) {
    w.erase(std::remove_if(w.begin(), w.end(), [](char c) { return !std::isalpha(c); }), w.end());
    words.insert(w);
  }
  const std::vector<std::string> common = {"Let", "unto", "the", "and", "be", "them", "him"};
  EXPECT_TRUE(std::any_of(common.begin(), common.end(),
                          [&](const std::string& w) { return words.count(w) > 0; }))
      << "greedy completion: " << prompt << text;
}

TEST(LmSidecar, ErrorsNameTheFile) {
  auto missing = TorchLm::load(kModels + "no_such_lm.pt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(missing.error().message.find("no_such_lm.json"), std::string::npos)
      << missing.error().message;

  auto classifier = TorchLm::load(kModels + "mlp.pt");
  ASSERT_FALSE(classifier.ok());
  EXPECT_NE(classifier.error().message.find("mlp.json"), std::string::npos)
      << classifier.error().message;
  EXPECT_NE(classifier.error().message.find("generative"), std::string::npos)
      << classifier.error().message;

  const auto dir = std::filesystem::temp_directory_path() / "batchscope_lm_test";
  std::filesystem::create_directories(dir);
  const std::string bad = (dir / "bad_lm.json").string();
  std::ifstream in(kModels + "tiny_lm.json");
  std::stringstream text;
  text << in.rdbuf();
  std::string body = text.str();
  const auto at = body.find("\"block_size\": 16");
  ASSERT_NE(at, std::string::npos);
  body.replace(at, 16, "\"block_size\": 0");
  std::ofstream(bad) << body;
  auto r = TorchLm::read_lm_sidecar(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("kv_cache.block_size"), std::string::npos) << r.error().message;
  std::filesystem::remove_all(dir);
}

TEST(LmSidecar, ReadsTheShippedModelAndTellsGenerativeApart) {
  auto info = TorchLm::read_lm_sidecar(kModels + "tiny_lm.json");
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->vocab_size, 257);
  EXPECT_EQ(info->num_blocks, 0);
  EXPECT_TRUE(is_generative_sidecar(kTinyLm));
  EXPECT_FALSE(is_generative_sidecar(kModels + "mlp.pt"));
  EXPECT_FALSE(is_generative_sidecar(kModels + "no_such_lm.pt"));
}

TEST(LmSidecar, AChatTemplateIsReadAndCheckedAndTheDefaultAppliesWithoutOne) {
  auto shipped = TorchLm::read_lm_sidecar(kModels + "tiny_lm.json");
  ASSERT_TRUE(shipped.ok()) << shipped.error().message;
  EXPECT_FALSE(shipped->chat.from_sidecar);
  EXPECT_EQ(shipped->chat.user, "User: {content}\n");

  const auto dir = std::filesystem::temp_directory_path() / "batchscope_lm_chat_test";
  std::filesystem::create_directories(dir);
  std::ifstream in(kModels + "tiny_lm.json");
  std::stringstream text;
  text << in.rdbuf();
  const std::string body = text.str();
  const auto with = [&](const std::string& name, const std::string& tmpl) {
    std::string b = body;
    b.insert(b.find('{') + 1, "\"chat_template\": " + tmpl + ",");
    const std::string path = (dir / name).string();
    std::ofstream(path) << b;
    return TorchLm::read_lm_sidecar(path);
  };
  auto good = with("good.json", R"({"system": "<s>{content}", "user": "<u>{content}", )"
                                R"("assistant": "<a>{content}", "generation": "<a>"})");
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_TRUE(good->chat.from_sidecar);
  EXPECT_EQ(render_chat(good->chat, {{"user", "hi"}}), "<u>hi<a>");
  auto bad = with("bad.json", R"({"system": "<s>", "user": "<u>{content}", )"
                              R"("assistant": "<a>{content}", "generation": "<a>"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("chat_template.system"), std::string::npos)
      << bad.error().message;
  auto missing = with("missing.json", R"({"system": "{content}", "user": "{content}"})");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("chat_template.assistant"), std::string::npos)
      << missing.error().message;
  std::filesystem::remove_all(dir);
}

TEST(LmSidecar, CacheTokensRoundUpToWholeBlocks) {
  auto lm = TorchLm::load(kTinyLm, {}, 20);
  ASSERT_TRUE(lm.ok()) << lm.error().message;
  EXPECT_EQ((*lm)->info().num_blocks, 2);
}

}  // namespace
}  // namespace batchscope

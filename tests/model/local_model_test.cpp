// SPDX-License-Identifier: GPL-3.0-or-later
// A model on this machine, opened as every command and the window open it:
// each kind says what it is and makes its lane runners; what a kind cannot
// do, or a model cannot take, is refused by name.

#include "model/local_model.h"

#include <gtest/gtest.h>

#include <string>

#include "batching/synthetic_runner.h"
#include "tests/torch/model_files.h"

namespace batchscope {
namespace {

ModelChoice synthetic(double a, double c) {
  ModelChoice m;
  m.synthetic = SyntheticCost{a, c};
  return m;
}

ModelChoice synthetic_lm(int cache_tokens = 0) {
  ModelChoice m;
  m.synthetic_lm = SyntheticLmCost{0, 0};
  m.cache_tokens = cache_tokens;
  return m;
}

TEST(LocalModel, TheSyntheticTensorModelRunsABatchOnEachLanesRunner) {
  auto m = LocalModel::open(synthetic(0, 0));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->kind(), ModelKind::kTensor);
  EXPECT_EQ(m->device(), "cpu");
  EXPECT_EQ(m->name(), SyntheticRunner::metadata().name);
  ASSERT_EQ(m->metadata().inputs.size(), 1u);
  EXPECT_EQ(m->choice().file(), "");
  Options o;
  o.max_batch_size = 4;
  auto factory = m->runners(o);
  ASSERT_TRUE(factory.ok()) << factory.error().message;
  auto runner = (*factory)(0);
  ASSERT_TRUE(runner);
  std::vector<float> x(128, 1.0f);
  std::vector<Tensors> batch = {{Tensor::from_floats(x)}, {Tensor::from_floats(x)}};
  auto out = runner->run(batch);
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[1][0], SyntheticRunner::expected_output(Tensor::from_floats(x)));
}

TEST(LocalModel, ABatchAboveTheModelsLargestIsRefusedNamingBoth) {
  auto m = LocalModel::open(synthetic(0, 0));
  ASSERT_TRUE(m.ok());
  Options o;
  o.max_batch_size = m->metadata().max_batch_size + 1;
  auto factory = m->runners(o);
  ASSERT_FALSE(factory.ok());
  EXPECT_NE(factory.error().message.find(std::to_string(o.max_batch_size)), std::string::npos);
  EXPECT_NE(factory.error().message.find(std::to_string(m->metadata().max_batch_size)),
            std::string::npos)
      << factory.error().message;
}

TEST(LocalModel, TheSyntheticLanguageModelDescribesItsCacheAndMakesEachLane) {
  auto m = LocalModel::open(synthetic_lm(320));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->generative());
  EXPECT_EQ(m->name(), "synthetic_lm");
  const LmInfo& info = m->lm_info();
  EXPECT_EQ(info.num_blocks, (320 + info.block_size - 1) / info.block_size);
  auto lm = m->lm(2);
  ASSERT_TRUE(lm.ok()) << lm.error().message;
  ASSERT_TRUE(lm->runner);
  EXPECT_EQ(lm->runner->info().num_blocks, info.num_blocks);
  ASSERT_TRUE(lm->more_lanes);
  auto second = lm->more_lanes(1);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->info().name, "synthetic_lm");
}

TEST(LocalModel, EachKindRefusesWhatTheOtherDoes) {
  auto tensor = LocalModel::open(synthetic(1, 1));
  auto language = LocalModel::open(synthetic_lm());
  ASSERT_TRUE(tensor.ok() && language.ok());
  auto lm = tensor->lm(1);
  ASSERT_FALSE(lm.ok());
  EXPECT_NE(lm.error().message.find("not a language model"), std::string::npos);
  auto runners = language->runners(Options{});
  ASSERT_FALSE(runners.ok());
  EXPECT_NE(runners.error().message.find("generates text"), std::string::npos);
  ModelChoice both = synthetic(1, 1);
  both.synthetic_lm = SyntheticLmCost{1, 1};
  auto refused = LocalModel::open(both);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "--synthetic and --synthetic-lm exclude each other");
}

TEST(LocalModel, TheDefaultBatchFallsToTheModelsLargest) {
  const ModelChoice m = synthetic(1, 1);
  auto opened = LocalModel::open(m);
  ASSERT_TRUE(opened.ok());
  Options o;
  o.max_batch_size = opened->metadata().max_batch_size * 2;
  fit_default_batch(m, o);
  EXPECT_EQ(o.max_batch_size, opened->metadata().max_batch_size);
  Options small;
  small.max_batch_size = 2;
  fit_default_batch(m, small);
  EXPECT_EQ(small.max_batch_size, 2u);
}

TEST(LocalModel, TheSyntheticCostIsReadAndABadOneQuoted) {
  auto c = parse_synthetic("500,20,3");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fixed_us, 500);
  EXPECT_EQ(c->per_item_us, 20);
  EXPECT_EQ(c->log_us, 3);
  EXPECT_EQ(synthetic_path(*c), "synthetic:500,20,3");
  auto few = parse_synthetic("fast");
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.error().message.find("got 'fast'"), std::string::npos);
  auto word = parse_synthetic("1,x");
  ASSERT_FALSE(word.ok());
  EXPECT_NE(word.error().message.find("got 'x'"), std::string::npos);
  auto big = parse_synthetic("1,2e9");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("2e9 is out of range"), std::string::npos);
}

#ifdef BATCHSCOPE_WITH_TORCH
using test::kModels;

TEST(LocalModel, ATorchScriptFileIsATensorOrALanguageModelAsItsSidecarSays) {
  ModelChoice tensor;
  tensor.path = kModels + "linear_128x64.pt";
  auto t = LocalModel::open(tensor);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->kind(), ModelKind::kTensor);
  EXPECT_EQ(t->name(), "linear_128x64");
  EXPECT_EQ(t->choice().file(), tensor.path);
  EXPECT_FALSE(is_generative_file(tensor.path));

  ModelChoice language;
  language.path = kModels + "tiny_lm.pt";
  EXPECT_TRUE(is_generative_file(language.path));
  auto l = LocalModel::open(language);
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_TRUE(l->generative());
  EXPECT_GT(l->lm_info().context_length, 0);
  // The default cache: 16384 token positions in whole blocks.
  EXPECT_EQ(l->lm_info().num_blocks,
            (16384 + l->lm_info().block_size - 1) / l->lm_info().block_size);
}

TEST(LocalModel, AFileWithoutItsSidecarIsRefusedNamingIt) {
  ModelChoice missing;
  missing.path = kModels + "no_such_model.pt";
  auto m = LocalModel::open(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("no_such_model"), std::string::npos) << m.error().message;
}
#endif

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The LibTorch runner on the shipped models and the test models: loading and
// metadata checks, batched results against single-input forwards, output
// splitting for tuples and dicts, refusal of bad input before admission,
// model errors that fail only their batch, and warm-up that reports each size
// and stops between sizes once cancelled.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include "batching/engine.h"
#include "common/metadata_json.h"
#include "tests/torch/model_files.h"
#include "tests/torch/tensor_compare.h"
#include "torch/torch_model.h"

namespace batchscope {
namespace {

using test::kData;
using test::kModels;

std::unique_ptr<TorchModel> load(const std::string& path, TorchOptions o = {}) {
  o.warmup_max_batch = 8;
  auto m = TorchModel::load(path, o);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? std::move(*m) : nullptr;
}

class ShippedModel : public ::testing::TestWithParam<const char*> {};

TEST_P(ShippedModel, LoadsAndMatchesItsMetadata) {
  const std::string name = GetParam();
  auto model = load(kModels + name + ".pt");
  ASSERT_TRUE(model);
  auto meta = load_metadata(kModels + name + ".json");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(model->metadata().name, name);
  ASSERT_EQ(model->metadata().inputs.size(), meta->inputs.size());
  EXPECT_EQ(model->metadata().inputs[0].shape, meta->inputs[0].shape);
  EXPECT_GT(model->metadata().max_batch_size, 1u);
}

TEST_P(ShippedModel, BatchedResultsEqualSingleForwardsAndEachGetsItsOwn) {
  auto model = load(kModels + std::string(GetParam()) + ".pt");
  ASSERT_TRUE(model);
  std::vector<Tensors> batch;
  for (uint64_t i = 0; i < 8; ++i) batch.push_back(random_inputs(model->metadata(), 100 + i));
  auto together = model->run(batch);
  ASSERT_TRUE(together.ok()) << together.error().message;
  ASSERT_EQ(together->size(), 8u);
  double worst = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    std::vector<Tensors> one{batch[i]};
    auto alone = model->run(one);
    ASSERT_TRUE(alone.ok());
    const double err = relative_error((*together)[i], (*alone)[0]);
    EXPECT_LE(err, 1e-6) << "request " << i;
    worst = std::max(worst, err);
    EXPECT_EQ((*together)[i][0].shape(), model->metadata().outputs[0].item_shape());
    if (i > 0) {  // different inputs, different outputs: nobody got a neighbour's
      EXPECT_GT(relative_error((*together)[i], (*together)[i - 1]), 1e-3) << "request " << i;
    }
  }
  RecordProperty("worst_relative_error", std::to_string(worst));
  std::printf("%s: worst relative error batched vs single %.3g\n", GetParam(), worst);
}

INSTANTIATE_TEST_SUITE_P(Models, ShippedModel,
                         ::testing::Values("linear_128x64", "mlp", "cnn_mnist"));

TEST(TorchModel, TupleOutputsSplitPerRequest) {
  auto model = load(kData + "tuple_out.pt");
  ASSERT_TRUE(model);
  std::vector<Tensors> batch;
  for (uint64_t i = 0; i < 5; ++i) batch.push_back(random_inputs(model->metadata(), i));
  auto out = model->run(batch);
  ASSERT_TRUE(out.ok()) << out.error().message;
  for (const Tensors& r : *out) {
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].shape(), Shape{4});
    EXPECT_EQ(r[1].shape(), Shape{1});
    float sum = 0;
    for (float v : r[0].as<float>()) sum += v;
    EXPECT_NEAR(r[1].as<float>()[0], sum, 1e-5);  // the model's second output is the row sum
  }
}

TEST(TorchModel, DictOutputsFollowTheMetadataOrderByName) {
  auto model = load(kData + "dict_out.pt");
  ASSERT_TRUE(model);
  // The module returns {"total", "scaled"}; the metadata lists scaled first.
  ASSERT_EQ(model->metadata().outputs[0].name, "scaled");
  std::vector<Tensors> batch;
  for (uint64_t i = 0; i < 3; ++i) batch.push_back(random_inputs(model->metadata(), i));
  auto out = model->run(batch);
  ASSERT_TRUE(out.ok()) << out.error().message;
  for (const Tensors& r : *out) {
    EXPECT_EQ(r[0].shape(), Shape{4});
    float sum = 0;
    for (float v : r[0].as<float>()) sum += v;
    EXPECT_NEAR(r[1].as<float>()[0], sum, 1e-5);
  }
}

TEST(TorchModel, MissingOrCorruptFilesGiveClearErrors) {
  auto no_model = TorchModel::load(kModels + "nonexistent.pt");
  ASSERT_FALSE(no_model.ok());
  EXPECT_NE(no_model.error().message.find("nonexistent.json"), std::string::npos)
      << no_model.error().message;

  const auto dir = std::filesystem::temp_directory_path() / "batchscope_model_test";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kModels + "linear_128x64.json", dir / "broken.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "broken.pt") << "this is not a TorchScript archive";
  auto corrupt = TorchModel::load((dir / "broken.pt").string());
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.error().message.find("cannot load the TorchScript model"), std::string::npos)
      << corrupt.error().message;

  // The metadata disagrees with the module: 16 outputs declared, 64 made.
  std::filesystem::copy_file(kModels + "linear_128x64.pt", dir / "liar.pt",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "liar.json") << R"({"name": "liar", "max_batch_size": 4,
    "inputs": [{"name": "data", "datatype": "FP32", "shape": [-1, 128]}],
    "outputs": [{"name": "output", "datatype": "FP32", "shape": [-1, 16]}]})";
  auto liar = TorchModel::load((dir / "liar.pt").string());
  ASSERT_FALSE(liar.ok());
  EXPECT_NE(liar.error().message.find("does not match"), std::string::npos) << liar.error().message;
  EXPECT_NE(liar.error().message.find("[-1, 16]"), std::string::npos) << liar.error().message;
  std::filesystem::remove_all(dir);
}

TEST(TorchModel, UnavailableDeviceIsRefusedByName) {
  const auto devices = available_devices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices[0], "cpu");
  const std::string missing = "cuda:" + std::to_string(devices.size() + 7);
  TorchOptions o;
  o.device = missing;
  auto m = TorchModel::load(kModels + "linear_128x64.pt", o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find(missing), std::string::npos) << m.error().message;
}

// Through the engine: bad input refused before admission, a throwing model
// failing only its own batch.
class TorchEngine : public ::testing::Test {
 protected:
  void start(const std::string& path, Options o) {
    auto meta = load_metadata(sidecar_path(path));
    ASSERT_TRUE(meta.ok());
    meta_ = *meta;
    TorchOptions to;
    to.warmup_max_batch = 4;
    engine_ = std::make_unique<Engine>(torch_runner_factory(path, to), o);
    ASSERT_TRUE(
        engine_->set_validator([m = meta_](const Tensors& in) { return check_inputs(m, in); })
            .ok());
    ASSERT_TRUE(engine_->start().ok());
  }
  Expected<Tensors> call(Tensors in) {
    std::promise<Expected<Tensors>> p;
    auto f = p.get_future();
    engine_->submit(std::move(in), [&p](TensorResponse&& r) { p.set_value(std::move(r.result)); });
    return f.get();
  }
  ModelMetadata meta_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(TorchEngine, WrongShapeOrDtypeIsRefusedBeforeAdmission) {
  start(kModels + "linear_128x64.pt", Options{.max_batch_size = 8, .max_wait_us = 0});
  std::vector<float> short_row(127, 1.0f);
  Tensors bad_shape;
  bad_shape.push_back(Tensor::from_floats(short_row));
  auto r = call(std::move(bad_shape));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("expected [128]"), std::string::npos) << r.error().message;

  std::vector<int64_t> ints(128, 1);
  Tensors bad_dtype;
  bad_dtype.push_back(Tensor::from_int64(ints, {128}));
  r = call(std::move(bad_dtype));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("expected FP32"), std::string::npos) << r.error().message;

  std::vector<float> nan_row(128, std::nanf(""));
  Tensors not_finite;
  not_finite.push_back(Tensor::from_floats(nan_row));
  r = call(std::move(not_finite));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("NaN"), std::string::npos) << r.error().message;

  const EngineCounters c = engine_->status().counters;
  EXPECT_EQ(c.invalid, 3u);
  EXPECT_EQ(c.admitted, 0u);  // none of them reached the queue
  EXPECT_EQ(c.batches, 0u);
  auto good = call(random_inputs(meta_, 1));
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ((*good)[0].shape(), Shape{64});
}

TEST_F(TorchEngine, AModelThatThrowsFailsOnlyItsBatch) {
  start(kData + "throws_on_negative.pt", Options{.max_batch_size = 4, .max_wait_us = 0});
  std::vector<float> negative{-1, 0, 0, 0};
  Tensors in;
  in.push_back(Tensor::from_floats(negative));
  auto bad = call(std::move(in));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kModelError);
  EXPECT_NE(bad.error().message.find("negative input"), std::string::npos) << bad.error().message;
  std::vector<float> fine{1, 2, 3, 4};
  Tensors ok_in;
  ok_in.push_back(Tensor::from_floats(fine));
  auto good = call(std::move(ok_in));
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ((*good)[0].shape(), Shape{2});
}

}  // namespace
}  // namespace batchscope

namespace batchscope {
namespace {

TEST(TorchModel, WarmUpReportsEachBatchSizeInTurn) {
  std::vector<std::pair<uint32_t, uint32_t>> seen;
  TorchOptions o;
  o.warmup_max_batch = 12;  // not a power of two: the last size is 12 itself
  o.on_warmup = [&seen](uint32_t b, uint32_t top) { seen.emplace_back(b, top); };
  auto m = TorchModel::load(kModels + "linear_128x64.pt", o);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<std::pair<uint32_t, uint32_t>> want{
      {1, 12}, {2, 12}, {4, 12}, {8, 12}, {12, 12}};
  EXPECT_EQ(seen, want);
}

// PyTorch keeps some state per thread (cuDNN's plans), so each thread that
// serves a model warms it once, over the sizes the load warmed, and the
// engine's lanes do so before start() returns.
TEST(TorchModel, EachThreadWarmsAModelOnceOverTheLoadsSizes) {
  TorchOptions o;
  o.warmup_max_batch = 4;
  std::vector<uint32_t> at_load, here, again, other, other_again;
  o.on_warmup = [&](uint32_t b, uint32_t) { at_load.push_back(b); };
  auto model = TorchModel::load(kModels + "linear_128x64.pt", o);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(at_load, (std::vector<uint32_t>{1, 2, 4}));
  auto record = [](std::vector<uint32_t>& v) {
    return [&v](uint32_t b, uint32_t) { v.push_back(b); };
  };
  ASSERT_TRUE((*model)->warm_up_here(record(here)).ok());
  EXPECT_TRUE(here.empty());  // the loading thread warmed it
  std::thread t([&] {
    ASSERT_TRUE((*model)->warm_up_here(record(other)).ok());
    ASSERT_TRUE((*model)->warm_up_here(record(other_again)).ok());
  });
  t.join();
  EXPECT_EQ(other, (std::vector<uint32_t>{1, 2, 4}));
  EXPECT_TRUE(other_again.empty());

  o.warmup_every_size = true;
  o.on_warmup = [&](uint32_t b, uint32_t) { again.push_back(b); };
  auto every = TorchModel::load(kModels + "linear_128x64.pt", o);
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(again, (std::vector<uint32_t>{1, 2, 3, 4}));
}

TEST(TorchModel, ACancelledLoadStopsBetweenWarmUpSizes) {
  std::vector<uint32_t> seen;
  bool cancel = false;
  TorchOptions o;
  o.warmup_max_batch = 8;
  o.on_warmup = [&](uint32_t b, uint32_t) {
    seen.push_back(b);
    cancel = true;  // as a window closing during the first size would
  };
  o.cancelled = [&cancel] { return cancel; };
  auto m = TorchModel::load(kModels + "linear_128x64.pt", o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kCancelled);
  EXPECT_NE(m.error().message.find("linear_128x64.pt was cancelled"), std::string::npos)
      << m.error().message;
  EXPECT_EQ(seen, std::vector<uint32_t>{1});  // 2, 4 and 8 never ran
}

TEST(TorchModel, ALoadCancelledBeforeItBeginsWarmsNothingUp) {
  int warmed = 0;
  TorchOptions o;
  o.on_warmup = [&warmed](uint32_t, uint32_t) { ++warmed; };
  o.cancelled = [] { return true; };
  auto m = TorchModel::load(kModels + "linear_128x64.pt", o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kCancelled);
  EXPECT_EQ(warmed, 0);
}

}  // namespace
}  // namespace batchscope

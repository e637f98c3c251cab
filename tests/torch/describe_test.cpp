// SPDX-License-Identifier: GPL-3.0-or-later
#include "torch/describe.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "common/metadata_json.h"
#include "tests/torch/model_files.h"
#include "torch/torch_model.h"

namespace batchscope {
namespace {

namespace fs = std::filesystem;
using test::kData;
using test::kModels;

TensorSpec spec(const std::string& text) {
  auto s = parse_input_spec(text);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? *s : TensorSpec{};
}

// A scratch folder holding a copy of one shipped model without its sidecar.
struct Scratch {
  fs::path dir;
  std::string model;
  explicit Scratch(const std::string& from) {
    dir = fs::temp_directory_path() / ("batchscope_describe_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    model = (dir / fs::path(from).filename()).string();
    fs::copy_file(from, model, fs::copy_options::overwrite_existing);
  }
  ~Scratch() { fs::remove_all(dir); }
};

TEST(Describe, ReadsInputSpecsInThreeSpellings) {
  for (const char* text : {"image:FP32:3,32,32", "image:fp32:3x32x32", "image:FP32:[3, 32, 32]"}) {
    const TensorSpec t = spec(text);
    EXPECT_EQ(t.name, "image") << text;
    EXPECT_EQ(t.dtype, DType::kFloat32) << text;
    EXPECT_EQ(t.shape, (Shape{-1, 3, 32, 32})) << text;
  }
  EXPECT_EQ(spec("label:INT64:").shape, Shape{-1});
}

TEST(Describe, RefusesABadInputSpecQuotingIt) {
  for (const char* text : {"image", "image:FP32", ":FP32:3", "image:FP8:3", "image:FP32:3,0",
                           "image:FP32:3,-2", "image:FP32:3,a"}) {
    auto s = parse_input_spec(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.error().message.find(std::string("'") + text + "'"), std::string::npos)
        << s.error().message;
  }
}

TEST(Describe, ReadsForwardsArgumentNames) {
  auto args = forward_arguments(kData + "dict_out.pt");
  ASSERT_TRUE(args.ok()) << args.error().message;
  ASSERT_EQ(args->size(), 2u);
  EXPECT_EQ((*args)[0].name, "x");
  EXPECT_EQ((*args)[1].name, "scale");
  EXPECT_EQ((*args)[0].type, "Tensor");
}

TEST(Describe, ATupleOutputIsNumberedWithItsObservedShapes) {
  auto m = describe_model({.model_path = kData + "tuple_out.pt", .inputs = {spec("x:FP32:8")}});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->name, "tuple_out");
  ASSERT_EQ(m->outputs.size(), 2u);
  EXPECT_EQ(m->outputs[0].name, "output_0");
  EXPECT_EQ(m->outputs[0].shape, (Shape{-1, 4}));
  EXPECT_EQ(m->outputs[1].name, "output_1");
  EXPECT_EQ(m->outputs[1].shape, (Shape{-1, 1}));
}

TEST(Describe, ADictOutputKeepsItsKeysAndInputsFollowForwardsOrder) {
  // Given in the other order; the metadata lists them as forward takes them.
  auto m = describe_model({.model_path = kData + "dict_out.pt",
                           .inputs = {spec("scale:FP32:1"), spec("x:FP32:8")},
                           .max_batch_size = 16});
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto kept = load_metadata(kData + "dict_out.json");
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(m->inputs.size(), kept->inputs.size());
  for (size_t i = 0; i < m->inputs.size(); ++i)
    EXPECT_EQ(m->inputs[i].describe(), kept->inputs[i].describe());
  // In the dict's own order (the model builds "total" first); the kept
  // sidecar lists them the other way round, which loading matches by name.
  ASSERT_EQ(m->outputs.size(), 2u);
  EXPECT_EQ(m->outputs[0].describe(), kept->outputs[1].describe());
  EXPECT_EQ(m->outputs[1].describe(), kept->outputs[0].describe());
  EXPECT_EQ(m->max_batch_size, 16u);
}

TEST(Describe, AWrongShapeGivesTheForwardPassesMessage) {
  auto m = describe_model({.model_path = kModels + "mlp.pt", .inputs = {spec("features:FP32:7")}});
  ASSERT_FALSE(m.ok());
  const std::string& msg = m.error().message;
  EXPECT_NE(msg.find("forward pass on zeros (features FP32 [1, 7])"), std::string::npos) << msg;
  // LibTorch's own line comes first, before its traces.
  EXPECT_NE(msg.find("failed: RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
            std::string::npos)
      << msg;
}

TEST(Describe, InputsThatAreNotForwardsArgumentsAreNamed) {
  auto missing =
      describe_model({.model_path = kData + "dict_out.pt", .inputs = {spec("x:FP32:8")}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no shape for forward's argument 'scale'"),
            std::string::npos)
      << missing.error().message;
  auto unknown =
      describe_model({.model_path = kData + "dict_out.pt",
                      .inputs = {spec("x:FP32:8"), spec("scale:FP32:1"), spec("bias:FP32:1")}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find(
                "'bias' is not an argument of the model's forward(x: Tensor, scale: Tensor)"),
            std::string::npos)
      << unknown.error().message;
}

TEST(Describe, TheWrittenSidecarLoadsAndServes) {
  Scratch s(kData + "tuple_out.pt");
  auto none = load_model_metadata(s.model);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("make one with: batchscope describe --model " + s.model +
                                      " --input x:DTYPE:SHAPE"),
            std::string::npos)
      << none.error().message;

  auto m =
      describe_model({.model_path = s.model, .inputs = {spec("x:FP32:8")}, .max_batch_size = 4});
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto path = write_sidecar(s.model, *m);
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(*path, (s.dir / "tuple_out.json").string());
  auto back = load_model_metadata(s.model);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(metadata_json(*back), metadata_json(*m));

  auto model = TorchModel::load(s.model, TorchOptions{.warmup_max_batch = 2});
  ASSERT_TRUE(model.ok()) << model.error().message;
  std::vector<Tensors> batch(3, Tensors{Tensor::from_floats(std::vector<float>(8, 1.0f), {8})});
  auto out = (*model)->run(batch);
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[2][0].shape(), Shape{4});
  EXPECT_EQ((*out)[2][1].shape(), Shape{1});
}

TEST(Describe, BytesIsRefusedForATorchScriptModel) {
  auto described =
      describe_model({.model_path = kData + "tuple_out.pt", .inputs = {spec("x:BYTES:")}});
  ASSERT_FALSE(described.ok());
  EXPECT_NE(described.error().message.find("input 'x' is BYTES (one byte string per request), "
                                           "which a TorchScript model cannot take or give"),
            std::string::npos)
      << described.error().message;

  Scratch s(kData + "tuple_out.pt");
  std::ofstream(sidecar_beside(s.model)) << R"({"name": "tuple_out", "max_batch_size": 4,
    "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 8]}],
    "outputs": [{"name": "output_0", "datatype": "FP32", "shape": [-1, 4]},
                {"name": "label", "datatype": "BYTES", "shape": [-1]}]})";
  auto meta = load_model_metadata(s.model);
  ASSERT_FALSE(meta.ok());
  EXPECT_NE(meta.error().message.find("tuple_out.json: output 'label' is BYTES"), std::string::npos)
      << meta.error().message;
  EXPECT_NE(meta.error().message.find("Serve it as a Python model"), std::string::npos);
  auto model = TorchModel::load(s.model, TorchOptions{});
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().message.find("output 'label' is BYTES"), std::string::npos)
      << model.error().message;
}

TEST(Describe, TheConfigFoldersSidecarIsFoundWhereNoneIsBeside) {
  Scratch s(kData + "tuple_out.pt");
  const fs::path config = s.dir / "config";
  const char* old = std::getenv("XDG_CONFIG_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_CONFIG_HOME", config.c_str(), 1);
  const std::string there = sidecar_in_config(s.model);
  EXPECT_EQ(there,
            (config / "batchscope/sidecars" / fs::path(s.dir).relative_path() / "tuple_out.json")
                .string());
  EXPECT_EQ(sidecar_path(s.model), sidecar_beside(s.model));  // neither exists yet
  fs::create_directories(fs::path(there).parent_path());
  fs::copy_file(kData + "tuple_out.json", there);
  EXPECT_EQ(sidecar_path(s.model), there);
  auto m = load_model_metadata(s.model);
  EXPECT_TRUE(m.ok()) << m.error().message;
  fs::copy_file(kData + "tuple_out.json", sidecar_beside(s.model));
  EXPECT_EQ(sidecar_path(s.model), sidecar_beside(s.model));  // the one beside wins
  if (old)
    ::setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_CONFIG_HOME");
}

TEST(Describe, TheSidecarTextReadsBackAsTheSameMetadata) {
  auto text = load_metadata(kModels + "text_classifier.json");
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto again = parse_metadata(metadata_json(*text), "again");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->inputs[0].max_shape, (Shape{-1, 256}));
  EXPECT_EQ(again->inputs[1].value_range, (std::pair<int64_t, int64_t>{1, 1}));
  EXPECT_EQ(metadata_json(*again), metadata_json(*text));

  auto kept = load_metadata(kModels + "cnn_mnist.json");
  ASSERT_TRUE(kept.ok());
  auto back = parse_metadata(metadata_json(*kept), "again");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(metadata_json(*back), metadata_json(*kept));
  EXPECT_EQ(back->inputs[0].finite_only, kept->inputs[0].finite_only);
  EXPECT_EQ(back->description, kept->description);
}

}  // namespace
}  // namespace batchscope

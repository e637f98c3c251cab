// SPDX-License-Identifier: GPL-3.0-or-later
// Every format's export compared byte for byte with tests/export/golden/, and
// write_export() putting a format's files into a folder.
// To regenerate the goldens after a deliberate change, run
//   BATCHSCOPE_UPDATE_GOLDEN=1 build/bin/export_tests --gtest_filter='*ExportGolden*'
// and review the difference with git diff tests/export/golden.

#include <gtest/gtest.h>

#include <unistd.h>
#include <clocale>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "export/export_config.h"
#include "export/pbtxt.h"
#include "tests/export/export_fixtures.h"

namespace batchscope {
namespace {

namespace fs = std::filesystem;

bool updating() {
  const char* v = std::getenv("BATCHSCOPE_UPDATE_GOLDEN");
  return v && *v && std::string(v) != "0";
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Comment paragraphs joined back into one line each, to search for phrases
// that the word wrap may have split.
std::string flat(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      size_t j = i + 1;
      while (j < text.size() && text[j] == ' ') ++j;
      if (text.compare(j, 2, "# ") == 0 && !out.empty() &&
          out.find('#', out.rfind('\n') + 1) != std::string::npos) {
        out += ' ';
        i = j + 1;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

struct GoldenCase {
  const char* dir;
  ExportFormat format;
};

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  return std::string(info.param.dir) + "_" + export_format_name(info.param.format);
}

class ExportGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ExportGolden, MatchesTheGoldenFiles) {
  const GoldenCase& gc = GetParam();
  auto files = export_config(gc.format, fixture_input(gc.dir));
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_FALSE(files->empty());
  const fs::path dir = fs::path(BATCHSCOPE_EXPORT_GOLDEN_DIR) / gc.dir;
  for (const ExportFile& f : *files) {
    const fs::path golden = dir / f.name;
    if (updating()) {
      fs::create_directories(dir);
      std::ofstream(golden, std::ios::binary) << f.text;
      continue;
    }
    ASSERT_TRUE(fs::exists(golden))
        << golden << " is missing; regenerate with BATCHSCOPE_UPDATE_GOLDEN=1";
    EXPECT_EQ(f.text, read(golden))
        << "differs from " << golden << "; if intended, regenerate with BATCHSCOPE_UPDATE_GOLDEN=1";
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ExportGolden,
                         ::testing::Values(GoldenCase{"fifo_cpu", ExportFormat::kTriton},
                                           GoldenCase{"fifo_cpu", ExportFormat::kTfServing},
                                           GoldenCase{"fifo_cpu", ExportFormat::kTorchServe},
                                           GoldenCase{"fifo_cpu", ExportFormat::kRayServe},
                                           GoldenCase{"fifo_cpu", ExportFormat::kDbie},
                                           GoldenCase{"fifo_cpu", ExportFormat::kJson},
                                           GoldenCase{"adaptive_gpu", ExportFormat::kTriton},
                                           GoldenCase{"adaptive_gpu", ExportFormat::kTfServing},
                                           GoldenCase{"adaptive_gpu", ExportFormat::kTorchServe},
                                           GoldenCase{"adaptive_gpu", ExportFormat::kRayServe},
                                           GoldenCase{"adaptive_gpu", ExportFormat::kDbie},
                                           GoldenCase{"adaptive_gpu", ExportFormat::kJson},
                                           GoldenCase{"text_buckets", ExportFormat::kTriton},
                                           GoldenCase{"text_buckets", ExportFormat::kTfServing},
                                           GoldenCase{"text_buckets", ExportFormat::kTorchServe},
                                           GoldenCase{"text_buckets", ExportFormat::kRayServe},
                                           GoldenCase{"no_model", ExportFormat::kTriton},
                                           GoldenCase{"no_model", ExportFormat::kRayServe},
                                           GoldenCase{"no_model", ExportFormat::kDbie},
                                           GoldenCase{"gen_gpu", ExportFormat::kVllm},
                                           GoldenCase{"gen_gpu", ExportFormat::kTgi},
                                           GoldenCase{"gen_gpu", ExportFormat::kTrtLlm},
                                           GoldenCase{"gen_gpu", ExportFormat::kJson},
                                           GoldenCase{"gen_plan", ExportFormat::kVllm},
                                           GoldenCase{"gen_plan", ExportFormat::kTgi},
                                           GoldenCase{"gen_plan", ExportFormat::kTrtLlm},
                                           GoldenCase{"gen_plan", ExportFormat::kKserve}),
                         case_name);

TEST(Export, EveryFormatSaysWhatItDoesWithInputsOfVaryingLength) {
  const ExportInput in = fixture_input("text_buckets");
  const auto text = [&](ExportFormat f) {
    std::string all;
    const auto files = export_config(f, in);
    for (const ExportFile& file : files.value()) all += flat(file.text);
    return all;
  };
  const std::string head =
      "Inputs of varying length (input_ids INT64 [-1, -1] up to [-1, 256], "
      "attention_mask INT64 [-1, -1] up to [-1, 256]): Batchscope padded "
      "each batch to its longest request (padding = buckets, "
      "length_buckets 16,64,256).";
  for (ExportFormat f : {ExportFormat::kTriton, ExportFormat::kTfServing, ExportFormat::kTorchServe,
                         ExportFormat::kRayServe}) {
    EXPECT_NE(text(f).find(head), std::string::npos) << export_format_name(f) << text(f);
  }
  EXPECT_NE(text(ExportFormat::kTriton).find("dims: [ -1 ]"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kTriton).find("only requests of equal shape"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kTfServing).find("\npad_variable_length_inputs: true\n"),
            std::string::npos);
  EXPECT_NE(text(ExportFormat::kTfServing).find("no buckets"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kTorchServe).find("the handler must pad them"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kRayServe).find("pad them to the longest before torch.stack"),
            std::string::npos);
  // A model whose inputs do not vary gets none of it.
  EXPECT_EQ(text(ExportFormat::kTriton).find("varying length") == std::string::npos, false);
  EXPECT_EQ(flat(export_config(ExportFormat::kTriton, fixture_input("fifo_cpu")).value()[0].text)
                .find("varying length"),
            std::string::npos);
}

TEST(Export, FileNamesAndCountsPerFormat) {
  const ExportInput in = fixture_input("fifo_cpu");
  auto names = [&](ExportFormat f) {
    std::vector<std::string> out;
    auto files = export_config(f, in);
    for (const ExportFile& file : files.value()) out.push_back(file.name);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(ExportFormat::kTriton), V{"config.pbtxt"});
  EXPECT_EQ(names(ExportFormat::kTfServing), V{"batching_parameters.txt"});
  EXPECT_EQ(names(ExportFormat::kTorchServe), (V{"config.properties", "model-config.yaml"}));
  EXPECT_EQ(names(ExportFormat::kRayServe), (V{"deployment.py", "serve_config.yaml"}));
  EXPECT_EQ(names(ExportFormat::kDbie), V{"dbie.env"});
  EXPECT_EQ(names(ExportFormat::kJson), V{"batchscope.json"});
}

TEST(Export, IsTheSameEveryTimeAndUnderAnyNumericLocale) {
  const ExportInput in = fixture_input("adaptive_gpu");
  for (ExportFormat f : export_formats(false)) {
    auto a = export_config(f, in);
    auto b = export_config(f, in);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->size(), b->size());
    for (size_t i = 0; i < a->size(); ++i) EXPECT_EQ((*a)[i].text, (*b)[i].text);
  }
  // A decimal comma in the C locale must not reach the files (skipped where
  // no such locale is installed).
  const std::string saved = std::setlocale(LC_NUMERIC, nullptr);
  for (const char* name : {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE", "fr_FR"}) {
    if (!std::setlocale(LC_NUMERIC, name)) continue;
    for (ExportFormat f : export_formats(false)) {
      auto files = export_config(f, in);
      std::setlocale(LC_NUMERIC, "C");
      auto plain = export_config(f, in);
      std::setlocale(LC_NUMERIC, name);
      ASSERT_TRUE(files.ok() && plain.ok());
      for (size_t i = 0; i < files->size(); ++i) EXPECT_EQ((*files)[i].text, (*plain)[i].text);
    }
    break;
  }
  std::setlocale(LC_NUMERIC, saved.c_str());
}

TEST(Export, TuningContextIsWrittenWhereTheFormatHasComments) {
  const ExportInput in = fixture_input("fifo_cpu");
  for (ExportFormat f : export_formats(false)) {
    if (f == ExportFormat::kJson) continue;
    auto files = export_config(f, in);
    ASSERT_TRUE(files.ok());
    for (const ExportFile& file : *files) {
      const std::string t = flat(file.text);
      EXPECT_NE(t.find("poisson 1500 req/s"), std::string::npos) << file.name;
      EXPECT_NE(t.find("p99 2.76 ms"), std::string::npos) << file.name;
      EXPECT_NE(t.find("throughput 1498.2 requests/s"), std::string::npos) << file.name;
    }
  }
}

TEST(Export, GenerativeFormatsNeedAGenerativeModelAndSayWhatDoesNotCarryOver) {
  for (ExportFormat f : {ExportFormat::kVllm, ExportFormat::kTgi, ExportFormat::kTrtLlm}) {
    EXPECT_TRUE(is_generative(f));
    auto refused = export_config(f, fixture_input("fifo_cpu"));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("is for a generative model"), std::string::npos);
  }
  EXPECT_EQ(export_formats(true),
            (std::vector<ExportFormat>{ExportFormat::kJson, ExportFormat::kVllm, ExportFormat::kTgi,
                                       ExportFormat::kTrtLlm, ExportFormat::kKserve}));
  auto names = [](ExportFormat f) {
    std::vector<std::string> out;
    const auto files = export_config(f, fixture_input("gen_gpu"));
    for (const ExportFile& file : files.value()) out.push_back(file.name);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(ExportFormat::kVllm), (V{"vllm-config.yaml", "vllm-serve.sh"}));
  EXPECT_EQ(names(ExportFormat::kTgi), (V{"tgi.env", "tgi-launch.sh"}));
  EXPECT_EQ(names(ExportFormat::kTrtLlm), (V{"trtllm-options.yaml", "config.pbtxt"}));

  auto text = [](const char* fixture, ExportFormat f, size_t i) {
    return flat(export_config(f, fixture_input(fixture)).value()[i].text);
  };
  // The continuous fixture.
  EXPECT_NE(text("gen_gpu", ExportFormat::kVllm, 0).find("\nmax-num-seqs: 48\n"),
            std::string::npos);
  EXPECT_NE(text("gen_gpu", ExportFormat::kVllm, 1).find("--max-num-batched-tokens 768"),
            std::string::npos);
  EXPECT_NE(text("gen_gpu", ExportFormat::kTgi, 0).find("MAX_CONCURRENT_REQUESTS=560"),
            std::string::npos);
  EXPECT_NE(text("gen_gpu", ExportFormat::kTgi, 0).find("max_num_seqs 48 + queue_capacity 512"),
            std::string::npos);
  // TGI's launcher wants a prompt within one prefill pass: capped at the budget, and said.
  EXPECT_NE(text("gen_gpu", ExportFormat::kTgi, 0).find("MAX_INPUT_TOKENS=768\n"),
            std::string::npos);
  EXPECT_NE(text("gen_gpu", ExportFormat::kTgi, 0)
                .find("prompts are capped at max-input-tokens "
                      "768"),
            std::string::npos);
  EXPECT_NE(text("gen_gpu", ExportFormat::kTrtLlm, 0)
                .find("capacity_scheduler_policy: "
                      "MAX_UTILIZATION"),
            std::string::npos);
  // Static scheduling has no equivalent in vLLM or TGI, and is STATIC_BATCH in TensorRT-LLM.
  EXPECT_NE(text("gen_static", ExportFormat::kVllm, 0)
                .find("Not expressible: scheduling = static (max_wait 5 ms). vLLM batches "
                      "continuously"),
            std::string::npos);
  EXPECT_NE(text("gen_static", ExportFormat::kTgi, 1).find("scheduling = static"),
            std::string::npos);
  EXPECT_NE(text("gen_static", ExportFormat::kTrtLlm, 0)
                .find("capacity_scheduler_policy: "
                      "STATIC_BATCH"),
            std::string::npos);
  EXPECT_NE(text("gen_static", ExportFormat::kTrtLlm, 1).find("string_value: \"V1\""),
            std::string::npos);
  // Every file says what it was tuned under.
  for (ExportFormat f : {ExportFormat::kVllm, ExportFormat::kTgi, ExportFormat::kTrtLlm}) {
    const auto files = export_config(f, fixture_input("gen_gpu"));
    for (const ExportFile& file : files.value()) {
      EXPECT_NE(flat(file.text).find("a cache of 1024 blocks of 16 (16384 tokens)"),
                std::string::npos)
          << file.name;
    }
  }
  // The tensorrtllm config.pbtxt is well-formed protobuf text.
  for (const char* fixture : {"gen_gpu", "gen_static"}) {
    const std::string pb =
        export_config(ExportFormat::kTrtLlm, fixture_input(fixture)).value()[1].text;
    auto doc = parse_pbtxt(pb);
    ASSERT_TRUE(doc.ok()) << doc.error().message;
    EXPECT_GE(doc->size(), 9u);  // backend, max_batch_size, two blocks, six parameters
  }
  // Lanes are vLLM's data-parallel copies; TGI and TensorRT-LLM serve one copy a launch.
  ExportInput lanes = fixture_input("gen_gpu");
  lanes.options.num_lanes = 3;
  auto lane_text = [&](ExportFormat f, size_t i) {
    return flat(export_config(f, lanes).value()[i].text);
  };
  EXPECT_NE(lane_text(ExportFormat::kVllm, 0).find("\ndata-parallel-size: 3\n"), std::string::npos);
  EXPECT_NE(lane_text(ExportFormat::kVllm, 1).find("--data-parallel-size 3 "), std::string::npos);
  EXPECT_EQ(text("gen_gpu", ExportFormat::kVllm, 0).find("data-parallel-size"), std::string::npos);
  for (ExportFormat f : {ExportFormat::kTgi, ExportFormat::kTrtLlm}) {
    EXPECT_NE(lane_text(f, 0).find("Not expressible: num_lanes = 3"), std::string::npos);
    EXPECT_NE(lane_text(f, 0).find("run 3 of them"), std::string::npos);
  }
  // A cache smaller than one context is refused.
  ExportInput small = fixture_input("gen_gpu");
  small.lm->num_blocks = 10;
  auto refused = export_config(ExportFormat::kVllm, small);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "model 'tiny_lm': context 1024, 10 cache blocks of 16; the cache must hold one "
            "whole context");
}

TEST(Export, TritonWithoutModelSaysInputAndOutputAreMissing) {
  auto files = export_config(ExportFormat::kTriton, fixture_input("no_model"));
  ASSERT_TRUE(files.ok());
  const std::string t = flat((*files)[0].text);
  EXPECT_NE(t.find("input and output are missing"), std::string::npos);
  EXPECT_EQ(t.find("\ninput ["), std::string::npos);
  EXPECT_EQ(t.find("\nname:"), std::string::npos);
}

TEST(Export, LossyMappingsAreSaidInComments) {
  const ExportInput in = fixture_input("adaptive_gpu");  // 2500 us, queue 1000 of 64, 1500 ms
  auto text = [&](ExportFormat f, size_t i = 0) {
    return flat(export_config(f, in).value()[i].text);
  };
  EXPECT_NE(text(ExportFormat::kTriton).find("preferred_batch_size: [ 16, 32 ]"),
            std::string::npos);
  EXPECT_NE(text(ExportFormat::kTriton).find("adaptive strategy"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kTfServing).find("max_enqueued_batches { value: 16 }"),
            std::string::npos);
  EXPECT_NE(text(ExportFormat::kTfServing).find("24 more than Batchscope admits"),
            std::string::npos);
  EXPECT_NE(text(ExportFormat::kTfServing).find("allowed_batch_sizes: 64"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kTorchServe, 1).find("maxBatchDelay: 3"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kTorchServe, 1).find("(2.5 ms) is written to the nearest, 3 ms"),
            std::string::npos);
  EXPECT_NE(text(ExportFormat::kTorchServe, 1).find("responseTimeout: 2"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kTorchServe, 1).find("TorchServe has no queue timeout"),
            std::string::npos);
  EXPECT_NE(text(ExportFormat::kRayServe).find("batch_wait_timeout_s=0.0025"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kRayServe).find("Ray Serve has no queue timeout"),
            std::string::npos);
  EXPECT_NE(text(ExportFormat::kRayServe).find("max_ongoing_requests=128"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kDbie).find("MAX_WAIT_MS=2.5"), std::string::npos);
}

TEST(Export, ModelsOfSeveralTensorsAndScalarsPerRequest) {
  ExportInput in;
  ModelMetadata m;
  m.name = "ranker";
  m.max_batch_size = 16;
  m.inputs = {TensorSpec{"ids", DType::kInt64, {-1, 4}, false},
              TensorSpec{"mask", DType::kBool, {-1}, false}};
  m.outputs = {TensorSpec{"score", DType::kFloat16, {-1}, false},
               TensorSpec{"rank", DType::kInt32, {-1, 2, 3}, false}};
  in.model = m;
  in.options.max_batch_size = 16;
  const std::string triton = export_config(ExportFormat::kTriton, in).value()[0].text;
  EXPECT_NE(triton.find("name: \"ids\"\n    data_type: TYPE_INT64\n    dims: [ 4 ]"),
            std::string::npos)
      << triton;
  EXPECT_NE(triton.find("data_type: TYPE_BOOL\n    dims: [ 1 ]\n"), std::string::npos);
  EXPECT_NE(triton.find("reshape: { shape: [ ] }"), std::string::npos);
  EXPECT_NE(triton.find("data_type: TYPE_FP16"), std::string::npos);
  EXPECT_NE(triton.find("dims: [ 2, 3 ]"), std::string::npos);
  auto back = import_config(triton, Options{});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->options, in.options);

  const std::string ray = flat(export_config(ExportFormat::kRayServe, in).value()[0].text);
  EXPECT_NE(ray.find("dtype=torch.int64).reshape(4)"), std::string::npos) << ray;
  EXPECT_NE(ray.find("first input and returns its first output"), std::string::npos);
  const std::string dbie = flat(export_config(ExportFormat::kDbie, in).value()[0].text);
  EXPECT_NE(dbie.find("Not expressible: model ranker's inputs and outputs"), std::string::npos);
  EXPECT_EQ(dbie.find("INPUT_DIM="), std::string::npos);
}

}  // namespace
}  // namespace batchscope

namespace batchscope {
namespace {

TEST(WriteExport, WritesEveryFileIntoAFolderItMakes) {
  auto files = export_config(ExportFormat::kTorchServe, fixture_input("fifo_cpu"));
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->size(), 2u);
  const std::filesystem::path root = std::filesystem::temp_directory_path() /
                                     ("batchscope_write_export_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  const std::filesystem::path dir = root / "torchserve" / "mlp";
  ASSERT_TRUE(write_export(*files, dir.string()).ok());
  for (const ExportFile& f : *files) {
    std::ifstream in(dir / f.name, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), f.text) << f.name;
  }
  // A folder that cannot be made (a file is in the way) is named in the error.
  std::ofstream(root / "file") << "x";
  const Status s = write_export(*files, (root / "file" / "sub").string());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("file/sub"), std::string::npos) << s.message();
  std::filesystem::remove_all(root);
}

TEST(Export, APlanNamesItsModelParallelismAndReplicas) {
  // A local generative model has no plan: KServe is refused, naming how.
  auto refused = export_config(ExportFormat::kKserve, fixture_input("gen_gpu"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("tune --model-config"), std::string::npos);
  auto text = [](ExportFormat f, size_t i) {
    return export_config(f, fixture_input("gen_plan")).value()[i].text;
  };
  const std::string vllm = text(ExportFormat::kVllm, 0);
  EXPECT_NE(vllm.find("\nmodel: meta-llama/Llama-3.1-8B-Instruct\n"), std::string::npos);
  EXPECT_NE(vllm.find("\ntensor-parallel-size: 2\n"), std::string::npos);
  EXPECT_NE(vllm.find("\ngpu-memory-utilization: 0.85\n"), std::string::npos);
  EXPECT_NE(vllm.find("\nkv-cache-dtype: fp8\n"), std::string::npos);
  EXPECT_EQ(vllm.find("num-gpu-blocks-override"), std::string::npos);  // vLLM sizes the cache
  const std::string sh = text(ExportFormat::kVllm, 1);
  EXPECT_NE(sh.find("MODEL=${MODEL:-'meta-llama/Llama-3.1-8B-Instruct'}"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kTgi, 0).find("\nNUM_SHARD=2\n"), std::string::npos);
  EXPECT_NE(text(ExportFormat::kTgi, 0).find("\nMODEL_ID=meta-llama/Llama-3.1-8B-Instruct\n"),
            std::string::npos);
  EXPECT_NE(text(ExportFormat::kTrtLlm, 0).find("\ntensor_parallel_size: 2\n"), std::string::npos);
  const std::string k = text(ExportFormat::kKserve, 0);
  EXPECT_NE(k.find("    minReplicas: 2\n    maxReplicas: 3\n"), std::string::npos);
  // 14.5 / 1.15 = 12.6 requests/s a replica, each living 4.1 s: 52 in flight.
  EXPECT_NE(k.find("    scaleMetric: concurrency\n    scaleTarget: 52\n"), std::string::npos);
  EXPECT_NE(k.find("          nvidia.com/gpu: \"2\"\n"), std::string::npos);
  EXPECT_NE(flat(k).find("Assumed: Prefix caching off"), std::string::npos);
}

}  // namespace
}  // namespace batchscope

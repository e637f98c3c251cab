// SPDX-License-Identifier: GPL-3.0-or-later
// Importing back: Batchscope JSON round trips exactly, the Triton importer
// reads what the Triton exporter writes, hand-written config.pbtxt files are
// read as Triton reads them, and malformed input is refused with the field
// (and for config.pbtxt the line) named.

#include <gtest/gtest.h>

#include "api/options_json.h"
#include "export/export_config.h"
#include "tests/export/export_fixtures.h"

namespace batchscope {
namespace {

Options make(StrategyKind s, uint32_t batch, int64_t wait_us, uint32_t queue, int64_t timeout_ms,
             uint32_t lanes, double target) {
  Options o;
  o.strategy = s;
  o.max_batch_size = batch;
  o.max_wait_us = wait_us;
  o.queue_capacity = queue;
  o.request_timeout_ms = timeout_ms;
  o.num_lanes = lanes;
  o.target_p99_ms = target;
  return o;
}

std::vector<Options> option_values() {
  using S = StrategyKind;
  return {
      Options{},
      make(S::kFifo, 32, 0, 1024, 30000, 1, 50),
      make(S::kAdaptive, 64, 2500, 1000, 1500, 2, 7.5),
      make(S::kAdaptive, 1, 0, 1, 1, 1, 0.01),
      make(S::kFifo, 128, 10'000'000, 1u << 24, 3'600'000, 64, 600000),
      make(S::kAdaptive, 17, 1, 3, 999, 5, 0.1 + 0.2),
      make(S::kFifo, 100, 123456, 77, 61000, 3, 12345.678),
  };
}

// A base unlike every value above, so that nothing passes by coincidence.
Options other_base() { return make(StrategyKind::kAdaptive, 9, 4321, 55, 4444, 7, 3.25); }

std::string exported(ExportFormat f, const ExportInput& in, size_t i = 0) {
  auto files = export_config(f, in);
  EXPECT_TRUE(files.ok()) << files.error().message;
  return files.ok() ? (*files)[i].text : std::string();
}

TEST(JsonRoundTrip, OptionsComeBackExactlyThroughOptionsFromJson) {
  for (const Options& o : option_values()) {
    ExportInput in;
    in.options = o;
    const std::string text = exported(ExportFormat::kJson, in);
    auto back = options_from_json(text, other_base());
    ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
    EXPECT_EQ(*back, o) << text;
    auto imported = import_config(text, other_base());
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    EXPECT_EQ(imported->options, o);
    EXPECT_EQ(imported->source, ExportFormat::kJson);
    EXPECT_TRUE(imported->notes.empty());
  }
}

TEST(JsonRoundTrip, AGenerativeModelsOptionsComeBackWithChunkedPrefill) {
  Options o;
  o.max_num_seqs = 24;
  o.max_num_batched_tokens = 4096;
  o.chunked_prefill = false;
  ExportInput in;
  in.options = o;
  const std::string text = exported(ExportFormat::kJson, in);
  EXPECT_NE(text.find("\"chunked_prefill\": false"), std::string::npos) << text;
  auto back = options_from_json(text, other_base());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, o);
  // As a number too, 0 or 1; anything else is refused naming it.
  EXPECT_TRUE(options_from_json("{\"chunked_prefill\": 1}", o)->chunked_prefill);
  auto bad = options_from_json("{\"chunked_prefill\": 2}", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "chunked_prefill = 2 is out of range; allowed 0 to 1");
}

TEST(JsonRoundTrip, PartialJsonChangesOnlyWhatItNames) {
  auto r = import_config(R"({"max_batch_size": 8, "max_wait_ms": 0.5})", other_base());
  ASSERT_TRUE(r.ok()) << r.error().message;
  Options want = other_base();
  want.max_batch_size = 8;
  want.max_wait_us = 500;
  EXPECT_EQ(r->options, want);
}

// The text with its comment lines joined, so a phrase the wrap split is found.
std::string joined(std::string text) {
  for (size_t at; (at = text.find("\n# ")) != std::string::npos;) text.replace(at, 3, " ");
  return text;
}

// A tune's result gives its best's options, and its traffic and figures go
// into the exported comments: measured where confirmed, else predicted.
TEST(JsonImport, ATunesResultCarriesItsTrafficAndFigures) {
  Options o = other_base();
  o.strategy = StrategyKind::kFifo;
  const std::string best = "\"best\": {\"options\": " + options_to_json(o) +
                           ", \"predicted\": {\"throughput_rps\": 990, \"p50_ms\": 1.5, "
                           "\"p99_ms\": 4.25}";
  const std::string traffic = "\"traffic\": \"poisson 1000 req/s for 2 s\"";
  auto predicted = import_config("{\"space\": \"x\", " + best + "}, " + traffic + "}", {});
  ASSERT_TRUE(predicted.ok()) << predicted.error().message;
  EXPECT_EQ(predicted->options, o);
  const TuningContext& p = predicted->tuning;
  EXPECT_EQ(p.traffic, "poisson 1000 req/s for 2 s");
  EXPECT_TRUE(p.predicted);
  EXPECT_FALSE(p.measured);
  EXPECT_EQ(p.p99_ms, 4.25);
  ExportInput in;
  in.options = predicted->options;
  in.tuning = p;
  std::string text = joined(exported(ExportFormat::kTriton, in));
  EXPECT_NE(text.find("Tuned under traffic: poisson 1000 req/s for 2 s."), std::string::npos)
      << text;
  EXPECT_NE(text.find("Predicted there, not measured: p50 1.50 ms, p99 4.25 ms, throughput "
                      "990.0 requests/s."),
            std::string::npos)
      << text;

  auto measured = import_config("{\"space\": \"x\", " + best +
                                    ", \"measured\": {\"throughput_rps\": 980, \"p50_ms\": "
                                    "1.75, \"p99_ms\": 5}}, " +
                                    traffic + "}",
                                {});
  ASSERT_TRUE(measured.ok());
  EXPECT_TRUE(measured->tuning.measured);
  EXPECT_FALSE(measured->tuning.predicted);
  EXPECT_EQ(measured->tuning.p50_ms, 1.75);
  EXPECT_EQ(measured->tuning.throughput_rps, 980);

  // A generative tune's figures at its SLO's quantile.
  Options g;
  g.max_num_seqs = 8;
  auto gen = import_config(
      "{\"kind\": \"generation\", \"slo\": {\"quantile\": 90}, \"space\": \"x\", "
      "\"best\": {\"options\": " +
          options_to_json(g) +
          ", \"predicted\": {\"tokens_per_s\": 812.5, \"requests_per_s\": 4, "
          "\"ttft_ms\": 30, \"itl_ms\": 6.5, \"e2e_p50_ms\": 200, \"e2e_ms\": 350}}, " +
          traffic + "}",
      {});
  ASSERT_TRUE(gen.ok()) << gen.error().message;
  in = ExportInput{};
  in.options = gen->options;
  in.lm = GenModelInfo{"tiny", 256, 16, 64};
  in.tuning = gen->tuning;
  text = joined(exported(ExportFormat::kVllm, in));
  EXPECT_NE(text.find("Predicted there, not measured: TTFT p90 30.00 ms, ITL p90 6.50 ms, 812.5 "
                      "tokens/s, end to end p50 200.00 ms and p90 350.00 ms, 4.00 requests/s."),
            std::string::npos)
      << text;

  // Written since: the keys name the quantile ("ttft_p90_ms"); the
  // figures above were read from a file written before, as "ttft_ms".
  auto named = import_config(
      "{\"kind\": \"generation\", \"slo\": {\"ttft_p90_ms\": 50, \"quantile\": 90}, "
      "\"space\": \"x\", \"best\": {\"options\": " +
          options_to_json(g) +
          ", \"predicted\": {\"tokens_per_s\": 812.5, \"requests_per_s\": 4, "
          "\"ttft_p50_ms\": 20, \"ttft_p90_ms\": 30, \"itl_p90_ms\": 6.5, \"e2e_p50_ms\": 200, "
          "\"e2e_p90_ms\": 350}}, " +
          traffic + "}",
      {});
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->tuning.ttft_ms, 30);
  EXPECT_EQ(named->tuning.itl_ms, 6.5);
  EXPECT_EQ(named->tuning.p99_ms, 350);

  // Any other document carries no tuning.
  auto plain = import_config(options_to_json(o), {});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->tuning.measured || plain->tuning.predicted);
  EXPECT_TRUE(plain->tuning.traffic.empty());
}

// A tune's result says what it was measured on (tune --json's
// "measured_on"); the exports name that hardware beside the figures.
TEST(JsonImport, ATunesResultNamesTheHardwareItWasMeasuredOn) {
  Options g;
  g.max_num_seqs = 64;
  const std::string result =
      "{\"kind\": \"generation\", \"slo\": {\"quantile\": 99}, \"space\": \"x\", "
      "\"best\": {\"options\": " +
      options_to_json(g) +
      ", \"predicted\": {\"tokens_per_s\": 9000}, \"measured\": {\"tokens_per_s\": 8500, "
      "\"ttft_ms\": 40, \"itl_ms\": 9}}, \"measured_on\": {\"device\": \"cuda:0\", "
      "\"machine\": {\"cpu\": \"Test CPU\", \"cores\": 16, \"nvidia_driver\": \"550.54.15\", "
      "\"gpus\": [\"NVIDIA H200 (0000:3b:00.0)\"]}}}";
  auto gpu = import_config(result, {});
  ASSERT_TRUE(gpu.ok()) << gpu.error().message;
  EXPECT_EQ(gpu->tuning.hardware, "cuda:0 on NVIDIA H200 (0000:3b:00.0), NVIDIA driver 550.54.15");
  ExportInput in;
  in.options = gpu->options;
  in.device = "cuda:0";
  in.lm = GenModelInfo{"tiny", 256, 16, 64};
  in.tuning = gpu->tuning;
  for (ExportFormat f : {ExportFormat::kVllm, ExportFormat::kTrtLlm}) {
    const std::string text = joined(exported(f, in));
    EXPECT_NE(text.find("Measured on cuda:0 on NVIDIA H200 (0000:3b:00.0), NVIDIA driver "
                        "550.54.15; other hardware gives other figures."),
              std::string::npos)
        << text;
  }
  // On the CPU: its model and cores. Several GPUs: each of them.
  EXPECT_EQ(hardware_text("cpu", R"({"cpu": "AMD EPYC 7B13", "cores": 2})"),
            "cpu: AMD EPYC 7B13, 2 cores");
  EXPECT_EQ(hardware_text("cuda:1", R"j({"gpus": ["A (0000:01:00.0)", "B (0000:02:00.0)"]})j"),
            "cuda:1 on A (0000:01:00.0), B (0000:02:00.0)");
  // What the machine does not say leaves the device alone; nothing said, nothing written.
  EXPECT_EQ(hardware_text("cuda:0", "{}"), "cuda:0");
  EXPECT_EQ(hardware_text("cpu", "not json"), "cpu");
  auto silent =
      import_config("{\"space\": \"x\", \"best\": {\"options\": " + options_to_json(g) + "}}", {});
  ASSERT_TRUE(silent.ok());
  EXPECT_TRUE(silent->tuning.hardware.empty());
}

TEST(VllmImport, ReadsWhatTheExporterWritesAndNamesWhatItLeaves) {
  const ExportInput in = fixture_input("gen_gpu");
  const auto files = export_config(ExportFormat::kVllm, in);
  ASSERT_TRUE(files.ok());
  Options base;
  base.scheduling = Scheduling::kStatic;
  auto r = import_config(files->front().text, base);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->source, ExportFormat::kVllm);
  EXPECT_EQ(r->options.max_num_seqs, 48u);
  EXPECT_EQ(r->options.max_num_batched_tokens, 768u);
  EXPECT_EQ(r->options.scheduling, Scheduling::kContinuous);
  EXPECT_EQ(r->options.queue_capacity, base.queue_capacity);  // not in the file: the base's
  ASSERT_EQ(r->notes.size(), 3u);
  EXPECT_EQ(r->notes[0], "vLLM batches continuously: scheduling is continuous");
  EXPECT_EQ(r->notes[1],
            "max-model-len: 1024 is the model's or the cache's, not a batching option: give the "
            "model with --model and the cache with --cache-tokens");

  // Underscores, quotes, comments and other engine arguments.
  auto hand = import_config(
      "# served by hand\nmodel: \"org/name\"\nmax_num_seqs: '12'  # fewer\n"
      "max-num-batched-tokens: 96\nscheduling-policy: priority\n",
      Options{});
  ASSERT_TRUE(hand.ok()) << hand.error().message;
  EXPECT_EQ(hand->options.max_num_seqs, 12u);
  EXPECT_EQ(hand->options.max_num_batched_tokens, 96u);
  EXPECT_EQ(hand->notes, (std::vector<std::string>{
                             "model is not read: Batchscope has no such option",
                             "scheduling-policy: priority is not followed: Batchscope serves in "
                             "arrival order (fcfs)"}));
}

TEST(VllmImport, RefusesWhatItCannotReadWithTheLine) {
  auto message = [](const char* text) {
    auto r = import_config(text, Options{});
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  EXPECT_EQ(message("max-num-seqs: 8\nmax-num-seqs: 9\n"),
            "vLLM config line 2: max-num-seqs is given twice (lines 1 and 2)");
  EXPECT_EQ(message("max-num-seqs: many\n"),
            "vLLM config line 1: max-num-seqs must be a whole number from 1 to 1048576, got "
            "'many'");
  EXPECT_EQ(message("max-num-seqs: 8\nkv:\n  a: 1\n"),
            "vLLM config line 3: nested values and lists are not engine arguments; expected KEY: "
            "VALUE");
  EXPECT_EQ(message("max-num-seqs: 64\nmax-num-batched-tokens: 32\n"),
            "vLLM config: max_num_batched_tokens = 32 is less than max_num_seqs = 64; every "
            "running sequence decodes one token per step");
  EXPECT_EQ(message("max-num-seqs: 8\njust words\n"),
            "vLLM config line 2: expected KEY: VALUE, got 'just words'");
  EXPECT_EQ(message("max-num-seqs: 8\nenable-chunked-prefill: maybe\n"),
            "vLLM config line 2: enable-chunked-prefill must be true or false, got 'maybe'");
}

TEST(VllmImport, ChunkedPrefillOffComesBackAndExportsAgain) {
  auto r = import_config(
      "max-num-seqs: 8\nmax-num-batched-tokens: 4096\nenable_chunked_prefill: false\n", Options{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->options.chunked_prefill);
  ExportInput in = fixture_input("gen_gpu");
  in.options = r->options;
  const auto files = export_config(ExportFormat::kVllm, in);
  ASSERT_TRUE(files.ok());
  EXPECT_NE(files->front().text.find("\nenable-chunked-prefill: false\n"), std::string::npos);
  EXPECT_NE((*files)[1].text.find("--no-enable-chunked-prefill"), std::string::npos);
  auto back = import_config(files->front().text, Options{});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_FALSE(back->options.chunked_prefill);
  EXPECT_TRUE(import_config("max-num-seqs: 8\nenable-chunked-prefill: true\n", r->options)
                  ->options.chunked_prefill);
}

TEST(TritonRoundTrip, TheImporterReadsWhatTheExporterWrites) {
  for (const Options& o : option_values()) {
    for (const char* device : {"cpu", "cuda:3"}) {
      ExportInput in;
      in.options = o;
      in.device = device;
      if (o.max_batch_size <= 128) in.model = mlp_metadata();
      const std::string text = exported(ExportFormat::kTriton, in);
      auto back = import_config(text, other_base());
      ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
      EXPECT_EQ(back->source, ExportFormat::kTriton);
      EXPECT_EQ(back->options, o) << describe(back->options) << "\n" << text;
      ASSERT_TRUE(back->device.has_value());
      EXPECT_EQ(*back->device, device);
      EXPECT_TRUE(back->batch_sizes.empty());
    }
  }
}

TEST(TritonRoundTrip, APaddingPolicyComesBackFromTheCarriedLine) {
  ExportInput in;
  in.options.padding = Padding::kSorted;
  in.options.length_buckets = {8, 40};
  auto back = import_config(exported(ExportFormat::kTriton, in), other_base());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->options.padding, Padding::kSorted);
  EXPECT_EQ(length_buckets_text(back->options), "8,40");
}

TEST(TritonRoundTrip, PreferredBatchSizesComeBack) {
  ExportInput in = fixture_input("adaptive_gpu");
  auto back = import_config(exported(ExportFormat::kTriton, in), Options{});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->options, in.options);
  EXPECT_EQ(back->batch_sizes, (std::vector<uint32_t>{16, 32}));
  EXPECT_EQ(back->device, "cuda:1");
}

TEST(TritonRoundTrip, ExportWithoutModelImportsToo) {
  ExportInput in = fixture_input("no_model");
  in.options.strategy = StrategyKind::kAdaptive;
  in.options.max_wait_us = 0;
  auto back = import_config(exported(ExportFormat::kTriton, in), other_base());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->options, in.options);
}

const char* kHandWritten = R"(# A production configuration, written by hand.
name: "resnet"
platform: "pytorch_libtorch"
max_batch_size: 64
input [ { name: "INPUT__0", data_type: TYPE_FP32, dims: [ 3, 224, 224 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 1000 ] } ]
instance_group [
  { count: 2, kind: KIND_GPU, gpus: [ 0 ] }
]
dynamic_batching {
  preferred_batch_size: [ 16, 32 ]
  max_queue_delay_microseconds: 100
  default_queue_policy: <
    max_queue_size: 256;
    default_timeout_microseconds: 1500
    timeout_action: DELAY
    allow_timeout_override: true
  >
}
optimization { execution_accelerators { gpu_execution_accelerator: [ { name: "tensorrt" } ] } }
)";

TEST(TritonImport, ReadsAHandWrittenConfigAsTritonDoes) {
  auto r = import_config(kHandWritten, Options{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->options.max_batch_size, 64u);
  EXPECT_EQ(r->options.max_wait_us, 100);
  EXPECT_EQ(r->options.queue_capacity, 256u);
  EXPECT_EQ(r->options.request_timeout_ms, 2);  // 1500 us, rounded up
  EXPECT_EQ(r->options.num_lanes, 2u);
  EXPECT_EQ(r->options.strategy, StrategyKind::kFifo);
  EXPECT_EQ(r->device, "cuda:0");
  EXPECT_EQ(r->batch_sizes, (std::vector<uint32_t>{16, 32}));
  std::string notes;
  for (const std::string& n : r->notes) notes += n + "\n";
  EXPECT_NE(notes.find("rounded up"), std::string::npos) << notes;
  EXPECT_NE(notes.find("DELAY"), std::string::npos) << notes;
  EXPECT_NE(notes.find("preferred_batch_size [16, 32]"), std::string::npos) << notes;
}

TEST(TritonImport, TritonDefaultsAndWhatTheFileDoesNotSay) {
  // No delay: Triton's default 0. No queue policy: the base's queue and timeout stay.
  auto r = import_config("max_batch_size: 8\ndynamic_batching { }\n", other_base());
  ASSERT_TRUE(r.ok()) << r.error().message;
  Options want = other_base();
  want.max_batch_size = 8;
  want.max_wait_us = 0;
  EXPECT_EQ(r->options, want);
  EXPECT_FALSE(r->device.has_value());
  EXPECT_FALSE(r->notes.empty());
}

TEST(TritonImport, WithoutDynamicBatchingTheWaitIsZero) {
  auto r = import_config("max_batch_size: 16\ninstance_group [ { kind: KIND_CPU count: 3 } ]\n",
                         other_base());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->options.max_wait_us, 0);
  EXPECT_EQ(r->options.num_lanes, 3u);
  EXPECT_EQ(r->device, "cpu");
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.back().find("no dynamic_batching"), std::string::npos);
}

TEST(TritonImport, InstancesOverSeveralGpusCountEach) {
  auto r = import_config(
      "max_batch_size: 4\ninstance_group [ { count: 2 kind: KIND_GPU gpus: [ 0, 1 ] } ]\n",
      Options{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->options.num_lanes, 4u);
  EXPECT_FALSE(r->device.has_value());
}

struct Bad {
  const char* text;
  std::vector<const char*> names;  // each must appear in the message
};

class ImportBad : public ::testing::TestWithParam<Bad> {};

TEST_P(ImportBad, IsRefusedNamingTheFieldAndLine) {
  auto r = import_config(GetParam().text, Options{});
  ASSERT_FALSE(r.ok()) << GetParam().text;
  for (const char* name : GetParam().names) {
    EXPECT_NE(r.error().message.find(name), std::string::npos)
        << "'" << name << "' not in: " << r.error().message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ImportBad,
    ::testing::Values(
        // Malformed text format.
        Bad{"max_batch_size: 8\ndynamic_batching {\n  max_queue_delay_microseconds: 5\n",
            {"line 4", "opened on line 2", "not closed"}},
        Bad{"max_batch_size: 8\n}\n", {"line 2", "unexpected '}'"}},
        Bad{"max_batch_size 8\n", {"line 1", "max_batch_size", "expected ':' or '{'"}},
        Bad{"max_batch_size: 8 @\n", {"line 1", "unexpected character '@'"}},
        Bad{"name: \"mlp\nmax_batch_size: 8\n", {"line 1", "unterminated string"}},
        Bad{"max_batch_size: 8\ndims: [ 1, 2\n", {"line 3", "dims", "not closed"}},
        Bad{"max_batch_size: 12abc\n", {"line 1", "'12abc' is not a number"}},
        Bad{"max_batch_size:\n", {"line 2", "max_batch_size", "has no value"}},
        Bad{"[ext.field]: 1\n", {"line 1", "extensions"}},
        // max_batch_size negative, missing, not a number, zero, twice, too large.
        Bad{"max_batch_size: -4\n", {"line 1", "max_batch_size", "-4", "out of range"}},
        Bad{"name: \"m\"\ndynamic_batching { }\n", {"max_batch_size is missing"}},
        Bad{"max_batch_size: \"32\"\n", {"line 1", "max_batch_size", "whole number"}},
        Bad{"\n\nmax_batch_size: 3.5\n", {"line 3", "max_batch_size", "whole number", "3.5"}},
        Bad{"max_batch_size: big\n", {"line 1", "max_batch_size", "whole number", "'big'"}},
        Bad{"max_batch_size: { }\n", {"line 1", "max_batch_size", "whole number", "a block"}},
        Bad{"max_batch_size: 0\n", {"line 1", "max_batch_size", "batching off"}},
        Bad{"max_batch_size: 8\nmax_batch_size: 9\n", {"max_batch_size", "twice", "1 and 2"}},
        Bad{"max_batch_size: 5000\n", {"max_batch_size", "5000", "out of range"}},
        Bad{"max_batch_size: 99999999999999999999999\n", {"max_batch_size", "out of range"}},
        // The dynamic_batching block.
        Bad{"max_batch_size: 8\ndynamic_batching: 5\n", {"line 2", "dynamic_batching", "block"}},
        Bad{"max_batch_size: 8\ndynamic_batching {\n max_queue_delay_microseconds: 20000000\n}\n",
            {"line 3", "dynamic_batching.max_queue_delay_microseconds", "out of range"}},
        Bad{"max_batch_size: 8\ndynamic_batching {\n max_queue_delay_microseconds: -1\n}\n",
            {"line 3", "max_queue_delay_microseconds", "out of range"}},
        Bad{"max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 4, 16 ] }\n",
            {"line 2", "preferred_batch_size", "16", "max_batch_size = 8"}},
        Bad{"max_batch_size: 8\ndynamic_batching {\n  default_queue_policy {\n"
            "    timeout_action: DROP\n  }\n}\n",
            {"line 4", "dynamic_batching.default_queue_policy.timeout_action", "REJECT or DELAY",
             "DROP"}},
        Bad{"max_batch_size: 8\ndynamic_batching { default_queue_policy { timeout_action: "
            "\"REJECT\" } }\n",
            {"timeout_action", "REJECT or DELAY"}},
        Bad{"max_batch_size: 8\ndynamic_batching { default_queue_policy { max_queue_size: "
            "20000000 } }\n",
            {"line 2", "max_queue_size", "out of range", "16777216"}},
        Bad{"max_batch_size: 8\ndynamic_batching { default_queue_policy { "
            "default_timeout_microseconds: 3600000001000 } }\n",
            {"default_timeout_microseconds", "out of range"}},
        // instance_group.
        Bad{"max_batch_size: 8\ninstance_group [ { count: 100 } ]\n",
            {"line 2", "instance_group.count", "out of range", "64"}},
        Bad{"max_batch_size: 8\ninstance_group [ { count: 40 }, { count: 40 } ]\n",
            {"instance_group", "80 instances", "64"}},
        Bad{"max_batch_size: 8\ninstance_group [ { kind: KIND_TPU } ]\n",
            {"line 2", "instance_group.kind", "KIND_TPU"}},
        // The exporter's comment, edited badly.
        Bad{"# batchscope-options: {\"strategy\": \"greedy\"}\nmax_batch_size: 8\n",
            {"line 1", "batchscope-options", "strategy"}},
        // Batchscope JSON.
        Bad{R"({"max_batch_size": "big"})", {"Batchscope JSON", "max_batch_size"}},
        Bad{R"({"max_batch_size": 0})", {"max_batch_size", "out of range"}},
        Bad{R"({"batch": 3})", {"unknown option 'batch'"}}, Bad{R"({"strategy": 3})", {"strategy"}},
        Bad{R"({"max_batch_size": 8,})", {"not valid JSON"}}, Bad{"   \n", {"empty"}}));

TEST(ExportRefuses, BadInputNamingTheField) {
  ExportInput in = fixture_input("fifo_cpu");
  in.device = "tpu:0";
  auto e = export_config(ExportFormat::kTriton, in);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("device 'tpu:0'"), std::string::npos) << e.error().message;

  in = fixture_input("fifo_cpu");
  in.options.max_batch_size = 256;  // the model takes 128
  e = export_config(ExportFormat::kTorchServe, in);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("max_batch_size = 256"), std::string::npos);

  in = fixture_input("fifo_cpu");
  in.options.queue_capacity = 0;
  e = export_config(ExportFormat::kJson, in);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("queue_capacity"), std::string::npos);

  in = fixture_input("fifo_cpu");
  in.batch_sizes = {8, 64};  // max_batch_size is 32
  e = export_config(ExportFormat::kTfServing, in);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("batch_sizes: 64"), std::string::npos);

  auto f = parse_export_format("yaml");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("triton, tfserving, torchserve, rayserve, dbie, json"),
            std::string::npos);
}

TEST(ExportFormats, NamesParseBack) {
  for (ExportFormat f : export_formats()) {
    auto back = parse_export_format(export_format_name(f));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, f);
    EXPECT_NE(std::string(export_format_title(f)), "");
  }
}

TEST(ExportDevice, CudaAloneIsTheFirstGpu) {
  ExportInput in = fixture_input("fifo_cpu");
  in.device = "cuda";
  const std::string t = exported(ExportFormat::kTriton, in);
  EXPECT_NE(t.find("kind: KIND_GPU\n    gpus: [ 0 ]"), std::string::npos) << t;
}

}  // namespace
TEST(VllmImport, DataParallelSizeIsLanesAndReadsBackWhatTheExporterWrites) {
  ExportInput in = fixture_input("gen_gpu");
  in.options.num_lanes = 4;
  const auto files = export_config(ExportFormat::kVllm, in);
  ASSERT_TRUE(files.ok());
  auto r = import_config(files->front().text, Options{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->options.num_lanes, 4u);
  EXPECT_EQ(r->options.max_num_seqs, 48u);
  auto bad = import_config("max-num-seqs: 8\ndata_parallel_size: 65\n", Options{});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "vLLM config line 2: data_parallel_size must be a whole number from 1 to 64 "
            "(Batchscope's lanes), got '65'");
}

}  // namespace batchscope

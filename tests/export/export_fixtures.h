// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The export inputs the golden files are made from, by name (the golden
// directory's name): fixed options, a hand-built copy of models/mlp.json's
// metadata, and a tuning context.

#include <fstream>
#include <sstream>
#include <string>

#include "export/export_config.h"

namespace batchscope {

// models/mlp.json, built by hand so that these tests need no LibTorch.
inline ModelMetadata mlp_metadata() {
  ModelMetadata m;
  m.name = "mlp";
  m.description = "A multilayer perceptron, 512 -> 1024 -> 1024 -> 1024 -> 16 with ReLU.";
  m.max_batch_size = 128;
  m.inputs = {TensorSpec{"features", DType::kFloat32, {-1, 512}, true}};
  m.outputs = {TensorSpec{"logits", DType::kFloat32, {-1, 16}, false}};
  return m;
}

// A file of tests/export/data (BATCHSCOPE_EXPORT_DATA_DIR), whole; empty
// when it cannot be read.
inline std::string export_data_text(const std::string& file) {
#ifdef BATCHSCOPE_EXPORT_DATA_DIR
  std::ifstream in(std::string(BATCHSCOPE_EXPORT_DATA_DIR) + "/" + file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
#else
  (void)file;
  return {};
#endif
}

// "fifo_cpu": the defaults with a whole-millisecond wait, on the CPU, with
// measured figures. "adaptive_gpu": values that no target expresses exactly
// (2.5 ms wait, a queue of 1000 for batches of 64, 1.5 s timeout), two lanes
// on cuda:1 and preferred sizes. "no_model": the defaults, no model.
// "gen_gpu": tiny_lm on cuda:0, continuous; "gen_static": the same, static.
// "gen_plan": Llama-3.1-8B planned for H100s, as a planned tune names it.
// "text_buckets": models/text_classifier.json's inputs of varying length,
// batched in length buckets. "python_toy": the class Toy of
// tests/export/data/toy_handler.py as `batchscope export --model
// toy_handler.py --class Toy --model-option scale=2 --model-option bias=0.5`
// opens it, two lanes, a preferred size.
inline ExportInput fixture_input(const std::string& name) {
  ExportInput in;
  if (name == "fifo_cpu") {
    in.model = mlp_metadata();
    in.options.max_batch_size = 32;
    in.options.max_wait_us = 2000;
    in.options.queue_capacity = 1024;
    in.options.request_timeout_ms = 30000;
    in.tuning.traffic = "poisson 1500 req/s";
    in.tuning.measured = true;
    in.tuning.p50_ms = 2.03;
    in.tuning.p99_ms = 2.76;
    in.tuning.throughput_rps = 1498.2;
  } else if (name == "adaptive_gpu") {
    in.model = mlp_metadata();
    in.device = "cuda:1";
    in.options.strategy = StrategyKind::kAdaptive;
    in.options.target_p99_ms = 7.5;
    in.options.max_batch_size = 64;
    in.options.max_wait_us = 2500;
    in.options.queue_capacity = 1000;
    in.options.request_timeout_ms = 1500;
    in.options.num_lanes = 2;
    in.batch_sizes = {32, 16};
    in.tuning.traffic = "burst 3000/300 req/s, 0.2 s on, 0.2 s off";
  } else if (name == "text_buckets") {
    ModelMetadata m;
    m.name = "text_classifier";
    m.max_batch_size = 64;
    TensorSpec ids{"input_ids", DType::kInt64, {-1, -1}, false};
    ids.max_shape = {-1, 256};
    TensorSpec mask{"attention_mask", DType::kInt64, {-1, -1}, false};
    mask.max_shape = {-1, 256};
    m.inputs = {ids, mask};
    m.outputs = {TensorSpec{"logits", DType::kFloat32, {-1, 2}, false}};
    in.model = m;
    in.options.padding = Padding::kBuckets;
    in.options.length_buckets = {16, 64, 256};
    in.options.max_wait_us = 4000;
  } else if (name == "python_toy") {
    ModelMetadata m;
    m.name = "toy_handler";
    m.description = "y = x @ W * scale + bias, and each row's total.";
    m.platform = "python";
    m.max_batch_size = 16;
    m.inputs = {TensorSpec{"x", DType::kFloat32, {-1, 4}, false}};
    m.outputs = {TensorSpec{"y", DType::kFloat32, {-1, 3}, false},
                 TensorSpec{"total", DType::kFloat64, {-1, 1}, false}};
    in.model = m;
    PythonHandlerFile h;
    h.file_name = "toy_handler.py";
    h.source = export_data_text("toy_handler.py");
    h.class_name = "Toy";
    h.options = {{"scale", "2"}, {"bias", "0.5"}};
    in.python = h;
    in.options.max_batch_size = 8;
    in.options.max_wait_us = 1500;
    in.options.queue_capacity = 64;
    in.options.request_timeout_ms = 10000;
    in.options.num_lanes = 2;
    in.batch_sizes = {4};
    in.tuning.traffic = "poisson 800 req/s";
  } else if (name == "gen_plan") {
    // Llama-3.1-8B planned for two H100s a replica, three replicas, with an
    // fp8 KV cache: as tune --model-config writes it.
    in.lm = GenModelInfo{"llama-3.1-8b", 8192, 16, 61000};
    in.options.max_num_seqs = 128;
    in.options.max_num_batched_tokens = 2048;
    in.options.queue_capacity = 1024;
    in.options.request_timeout_ms = 30000;
    in.tuning.traffic = "poisson rate=12.5/s for 60 s";
    in.tuning.predicted = true;
    in.tuning.quantile = 99;
    in.tuning.ttft_ms = 180.5;
    in.tuning.itl_ms = 21.25;
    in.tuning.tokens_per_s = 2500;
    in.tuning.p50_ms = 4100;
    in.tuning.p99_ms = 5200;
    in.tuning.throughput_rps = 12.4;
    ServingPlan p;
    p.model_id = "meta-llama/Llama-3.1-8B-Instruct";
    p.model_config = "models/llm-configs/llama-3.1-8b";
    p.gpu = "h100-sxm";
    p.tp = 2;
    p.dtype = "bf16";
    p.kv_dtype = "fp8";
    p.gpu_memory_utilization = 0.85;
    p.replicas = 3;
    p.min_replicas = 2;
    p.target_rate_rps = 30;
    p.capacity_rps = 14.5;
    p.headroom = 0.15;
    p.e2e_p50_ms = 4100;
    p.caveats = {"Prefix caching off: every prompt is prefilled in full."};
    in.plan = p;
  } else if (name == "gen_gpu" || name == "gen_static") {
    // tiny_lm as models/tiny_lm.json describes it, with the default cache.
    in.lm = GenModelInfo{"tiny_lm", 1024, 16, 1024};
    in.device = "cuda:0";
    in.options.max_num_seqs = 48;
    in.options.max_num_batched_tokens = 768;
    in.options.queue_capacity = 512;
    in.options.request_timeout_ms = 60000;
    in.tuning.traffic = "poisson 20 req/s, prompts uniform 16..64, max_tokens lognormal 32";
    if (name == "gen_static") {
      in.options.scheduling = Scheduling::kStatic;
      in.options.max_wait_us = 5000;
    }
  }
  return in;
}

}  // namespace batchscope

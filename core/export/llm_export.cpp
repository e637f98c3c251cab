// SPDX-License-Identifier: GPL-3.0-or-later
// A generative model's options for the servers of language models: vLLM's
// engine arguments (a `vllm serve --config` YAML and the command line), Hugging
// Face TGI's launcher arguments (environment file and command line), and
// TensorRT-LLM's (trtllm-serve's LLM API options, and Triton's tensorrtllm
// backend config.pbtxt). Each names, in comments, what does not carry over.
// The keys were checked against each project's documentation
// (docs/export.md names the versions).

#include <algorithm>
#include <cctype>
#include <cmath>

#include "export/export_text.h"

namespace batchscope::export_detail {

namespace {

int64_t cache_tokens(const GenModelInfo& m) { return int64_t{m.num_blocks} * m.block_size; }

bool is_static(const Options& o) { return o.scheduling == Scheduling::kStatic; }

// What no generative server here takes from Batchscope's options.
std::string common_caveats(const Checked& c, std::string_view server) {
  const Options& o = c.o();
  std::string out;
  if (!c.in.plan) {  // a plan's lengths are the planned model's own, among its assumptions
    out +=
        comment("Not exact: lengths. Batchscope counts the model's own tokens (" + c.in.lm->name +
                "'s); a model with another tokenizer gives another count for the same text, so the "
                "token budgets and context below are for the model Batchscope ran.");
  }
  if (server == "TensorRT-LLM") {
    out += comment("Not expressible: request_timeout_ms = " + whole(o.request_timeout_ms) +
                   ", a request's whole life, and in trtllm-serve queue_capacity = " +
                   whole(o.queue_capacity) +
                   ". trtllm-serve has neither a request timeout nor a queue bound; Triton's "
                   "queue policy bounds the queue (max_queue_size in config.pbtxt) and could "
                   "time out only the time queued.");
  } else {
    out += comment("Not expressible: queue_capacity = " + whole(o.queue_capacity) + " and " +
                   "request_timeout_ms = " + whole(o.request_timeout_ms) + ". " +
                   std::string(server) + " has no request timeout of its own and no queue bound.");
  }
  return out;
}

// Lanes are copies of the model behind one queue, each request given to the
// one with the fewest outstanding: for a server with no replicas of its own,
// that is N servers behind a router.
std::string lanes_caveat(const Checked& c, std::string_view server) {
  const uint32_t n = c.o().num_lanes;
  if (n <= 1) return "";
  return comment("Not expressible: num_lanes = " + whole(n) +
                 ", copies of the model, each with its own cache, a request going to the one "
                 "with the fewest outstanding. " +
                 std::string(server) + " serves one copy per launch: run " + whole(n) +
                 " of them, each on its own GPU(s), behind a router that balances by requests "
                 "in flight, and the options below apply to each.");
}

std::string static_caveat(const Checked& c, std::string_view server) {
  if (!is_static(c.o())) return "";
  return comment("Not expressible: scheduling = static (max_wait " +
                 exact_decimal(c.o().max_wait_us, 3) + " ms). " + std::string(server) +
                 " batches continuously; the caps below apply to its continuous batching.");
}

// vLLM's --dtype for the plan's weights ("auto" for fp8, whose weights
// vLLM takes from --quantization fp8).
std::string vllm_dtype(const ServingPlan& p) {
  return p.dtype == "fp16"   ? "float16"
         : p.dtype == "fp32" ? "float32"
         : p.dtype == "fp8"  ? "auto"
                             : "bfloat16";
}

// What a plan's model is named by: the repository or folder the server loads.
std::string plan_caveat(const ServingPlan& p) {
  return comment("The model: " + p.model_id +
                 (p.model_id == p.model_config || p.model_id.find('/') == std::string::npos ||
                          p.model_id.front() == '/' || p.model_id.front() == '.'
                      ? ", the folder of the config.json planned from: the server needs the "
                        "weights there, or give tune --model-id ORG/NAME (the Hugging Face "
                        "repository)."
                      : ", a Hugging Face repository (tune --model-id, or the config's "
                        "_name_or_path)."));
}

}  // namespace

std::vector<ExportFile> vllm_files(const Checked& c) {
  const Options& o = c.o();
  const GenModelInfo& m = *c.in.lm;
  const ServingPlan* plan = c.in.plan ? &*c.in.plan : nullptr;
  std::string head;
  head += context_block(c);
  if (plan) {
    head += plan_caveat(*plan);
    head += comment("Not exact: the cache. vLLM sizes it from gpu-memory-utilization " +
                    shortest(plan->gpu_memory_utilization) +
                    " of each GPU after profiling its activations at start-up; the plan "
                    "reckoned " +
                    whole(cache_tokens(m)) +
                    " tokens. vLLM logs its own figure (\"GPU KV cache size\").");
  } else {
    head += comment(
        "Not exact: the cache. vLLM sizes its cache from gpu-memory-utilization (default "
        "0.9) of the GPU; Batchscope ran with " +
        whole(m.num_blocks) + " blocks of " + whole(m.block_size) + " tokens (" +
        whole(cache_tokens(m)) +
        " tokens). Uncomment num-gpu-blocks-override below (or add --num-gpu-blocks-override " +
        whole(m.num_blocks) + ") to hold vLLM's at that, for a comparison only.");
  }
  head += static_caveat(c, "vLLM");
  head += common_caveats(c, "vLLM");
  if (o.num_lanes > 1) {
    head += comment("Lanes: num_lanes " + whole(o.num_lanes) +
                    " is data-parallel-size, a copy of the model per GPU (or per "
                    "tensor-parallel group), each with its own cache; vLLM balances requests by "
                    "each copy's waiting and running, as Batchscope gives each to the lane with "
                    "the fewest outstanding.");
  }
  head += comment(
      o.chunked_prefill
          ? "The same: a prompt longer than the token budget is prefilled in chunks beside the "
            "decodes (enable-chunked-prefill), and when the cache is full the newest sequence is "
            "preempted and recomputed."
          : "The same: without chunked prefill a step prefills whole waiting prompts or decodes, "
            "and vLLM wants max-num-batched-tokens at least max-model-len; when the cache is "
            "full the newest sequence is preempted and recomputed.");

  std::string yaml = "# vLLM engine arguments, exported from Batchscope.\n";
  yaml += comment(c.in.plan ? "Use with: vllm serve --config vllm-config.yaml (flags given on "
                              "the command line win over this file)."
                            : "Use with: vllm serve MODEL --config vllm-config.yaml (flags "
                              "given on the command line win over this file).");
  yaml += head + "\n";
  if (plan) {
    yaml += "model: " + yaml_scalar(plan->model_id) + "\n";
    yaml += "tensor-parallel-size: " + whole(plan->tp) + "\n";
    yaml += "gpu-memory-utilization: " + shortest(plan->gpu_memory_utilization) + "\n";
    yaml += "dtype: " + vllm_dtype(*plan) + "\n";
    if (plan->dtype == "fp8") yaml += "quantization: fp8\n";
    if (plan->kv_dtype == "fp8") yaml += "kv-cache-dtype: fp8\n";
  }
  if (o.num_lanes > 1) yaml += "data-parallel-size: " + whole(o.num_lanes) + "\n";
  yaml += "max-num-seqs: " + whole(o.max_num_seqs) + "\n";
  yaml += "max-num-batched-tokens: " + whole(o.max_num_batched_tokens) + "\n";
  yaml += std::string("enable-chunked-prefill: ") + (o.chunked_prefill ? "true" : "false") + "\n";
  yaml += "scheduling-policy: fcfs\n";
  yaml += "max-model-len: " + whole(m.context_length) + "\n";
  yaml += "block-size: " + whole(m.block_size) + "\n";
  if (!plan) yaml += "# num-gpu-blocks-override: " + whole(m.num_blocks) + "\n";

  std::string sh = "#!/bin/sh\n# vLLM with Batchscope's options, exported from Batchscope.\n";
  sh += comment(plan ? "Use with: sh vllm-serve.sh [more vllm serve flags] (MODEL=... to serve "
                       "another copy of the model)."
                     : "Use with: MODEL=org/name sh vllm-serve.sh [more vllm serve flags].");
  sh += head;
  if (plan) {
    sh += "MODEL=${MODEL:-" + shell_word(plan->model_id) + "}\n";
    sh += "exec vllm serve \"$MODEL\" \\\n";
    sh += "  --tensor-parallel-size " + whole(plan->tp) + " \\\n";
    sh += "  --gpu-memory-utilization " + shortest(plan->gpu_memory_utilization) + " \\\n";
    sh += "  --dtype " + vllm_dtype(*plan) + " \\\n";
    if (plan->dtype == "fp8") sh += "  --quantization fp8 \\\n";
    if (plan->kv_dtype == "fp8") sh += "  --kv-cache-dtype fp8 \\\n";
  } else {
    sh += "exec vllm serve \"${MODEL:?set MODEL to the model to serve}\" \\\n";
  }
  if (o.num_lanes > 1) sh += "  --data-parallel-size " + whole(o.num_lanes) + " \\\n";
  sh += "  --max-num-seqs " + whole(o.max_num_seqs) + " \\\n";
  sh += "  --max-num-batched-tokens " + whole(o.max_num_batched_tokens) + " \\\n";
  sh +=
      o.chunked_prefill ? "  --enable-chunked-prefill \\\n" : "  --no-enable-chunked-prefill \\\n";
  sh += "  --scheduling-policy fcfs \\\n";
  sh += "  --max-model-len " + whole(m.context_length) + " \\\n";
  sh += "  --block-size " + whole(m.block_size) + " \\\n";
  sh += "  \"$@\"\n";
  return {ExportFile{"vllm-config.yaml", yaml}, ExportFile{"vllm-serve.sh", sh}};
}

std::vector<ExportFile> tgi_files(const Checked& c) {
  const Options& o = c.o();
  const GenModelInfo& m = *c.in.lm;
  const int64_t concurrent = int64_t{o.queue_capacity} + o.max_num_seqs;
  // TGI prefills a prompt in one pass: its launcher wants max-input-tokens
  // within max-batch-prefill-tokens, and that within max-batch-total-tokens.
  const int64_t input = std::min<int64_t>(m.context_length - 1, o.max_num_batched_tokens);
  const int64_t total = std::max<int64_t>(cache_tokens(m), o.max_num_batched_tokens);
  struct Arg {
    const char* flag;
    const char* env;
    std::string value;
  };
  const ServingPlan* plan = c.in.plan ? &*c.in.plan : nullptr;
  std::vector<Arg> args;
  if (plan) {
    args.push_back({"--num-shard", "NUM_SHARD", whole(plan->tp)});
    args.push_back({"--dtype", "DTYPE", plan->dtype == "fp16" ? "float16" : "bfloat16"});
    if (plan->dtype == "fp8") args.push_back({"--quantize", "QUANTIZE", "fp8"});
    if (plan->kv_dtype == "fp8")
      args.push_back({"--kv-cache-dtype", "KV_CACHE_DTYPE", "fp8_e4m3fn"});
    args.push_back(
        {"--cuda-memory-fraction", "CUDA_MEMORY_FRACTION", shortest(plan->gpu_memory_utilization)});
  }
  args.push_back({"--max-concurrent-requests", "MAX_CONCURRENT_REQUESTS", whole(concurrent)});
  args.push_back({"--max-batch-size", "MAX_BATCH_SIZE", whole(o.max_num_seqs)});
  args.push_back(
      {"--max-batch-prefill-tokens", "MAX_BATCH_PREFILL_TOKENS", whole(o.max_num_batched_tokens)});
  if (!plan) args.push_back({"--max-batch-total-tokens", "MAX_BATCH_TOTAL_TOKENS", whole(total)});
  args.push_back({"--max-input-tokens", "MAX_INPUT_TOKENS", whole(input)});
  args.push_back({"--max-total-tokens", "MAX_TOTAL_TOKENS", whole(m.context_length)});
  args.push_back({"--waiting-served-ratio", "WAITING_SERVED_RATIO", "0"});
  args.push_back({"--max-waiting-tokens", "MAX_WAITING_TOKENS", "1"});
  std::string head;
  head += context_block(c);
  if (plan) head += plan_caveat(*plan);
  head += comment(
      o.chunked_prefill
          ? "Not exact: when waiting requests join. Batchscope adds them at every step, their "
            "prompts in chunks beside the decodes; TGI prefills them in a pass of their own. "
            "waiting-served-ratio 0 and max-waiting-tokens 1 make it take them at the next "
            "token, as Batchscope does."
          : "The same: without chunked prefill Batchscope, as TGI, prefills waiting prompts in "
            "a pass of their own; waiting-served-ratio 0 and max-waiting-tokens 1 make TGI take "
            "them at the next token, as Batchscope does.");
  head += comment(
      "Not exact: max-concurrent-requests counts the running and the waiting: "
      "max_num_seqs " +
      whole(o.max_num_seqs) + " + queue_capacity " + whole(o.queue_capacity) + " = " +
      whole(concurrent) + ".");
  if (plan) {
    head += comment(
        "The cache: TGI infers max-batch-total-tokens from the GPU's memory "
        "(cuda-memory-fraction); the plan reckoned " +
        whole(cache_tokens(m)) + " tokens.");
  } else {
    head += comment(
        "The cache: max-batch-total-tokens is Batchscope's cache, " + whole(cache_tokens(m)) +
        " tokens" +
        (total > cache_tokens(m) ? ", raised to the token budget, which TGI wants within it" : "") +
        "; TGI infers it from the GPU's memory when left out.");
  }
  if (input < m.context_length - 1) {
    head += comment("Not exact: prompts are capped at max-input-tokens " + whole(input) +
                    ", the token budget, as TGI prefills a prompt in one pass within "
                    "max-batch-prefill-tokens; Batchscope prefills longer prompts (up to " +
                    whole(m.context_length - 1) + " tokens) in chunks.");
  }
  head += static_caveat(c, "TGI");
  head += lanes_caveat(c, "TGI");
  head += comment("Not expressible: request_timeout_ms = " + whole(o.request_timeout_ms) +
                  "; TGI has no request timeout of its own.");
  if (!plan) {
    head += comment("Not exact: lengths. Batchscope counts " + m.name +
                    "'s own tokens; another tokenizer gives another count for the same text.");
  }

  std::string env = "# Hugging Face TGI launcher settings, exported from Batchscope.\n";
  env += comment(
      "Use with: docker run --env-file tgi.env ghcr.io/huggingface/text-generation-"
      "inference --model-id MODEL, or text-generation-launcher with these exported.");
  env += head + "\n";
  if (plan) env += "MODEL_ID=" + one_line(plan->model_id) + "\n";
  for (const Arg& a : args) env += std::string(a.env) + "=" + a.value + "\n";

  std::string sh = "#!/bin/sh\n# TGI with Batchscope's options, exported from Batchscope.\n";
  sh += comment(plan ? "Use with: sh tgi-launch.sh [more launcher flags]."
                     : "Use with: MODEL_ID=org/name sh tgi-launch.sh [more launcher flags].");
  sh += head;
  if (plan) {
    sh += "MODEL_ID=${MODEL_ID:-" + shell_word(plan->model_id) + "}\n";
    sh += "exec text-generation-launcher --model-id \"$MODEL_ID\" \\\n";
  } else {
    sh +=
        "exec text-generation-launcher --model-id \"${MODEL_ID:?set MODEL_ID to the model to "
        "serve}\" \\\n";
  }
  for (const Arg& a : args) sh += "  " + std::string(a.flag) + " " + a.value + " \\\n";
  sh += "  \"$@\"\n";
  return {ExportFile{"tgi.env", env}, ExportFile{"tgi-launch.sh", sh}};
}

std::vector<ExportFile> trtllm_files(const Checked& c) {
  const Options& o = c.o();
  const GenModelInfo& m = *c.in.lm;
  const bool stat = is_static(o);
  std::string head;
  head += context_block(c);
  head += comment(
      std::string("The capacity scheduler: ") +
      (stat ? "STATIC_BATCH, as Batchscope's static scheduling: a batch runs until all of "
              "it ends (in Triton's config.pbtxt: gpt_model_type V1, which recent "
              "tensorrtllm_backend releases no longer have). Batchscope's max_wait has no "
              "equivalent."
            : "MAX_UTILIZATION, as Batchscope: it admits while there is room and pauses a "
              "running request when the cache runs out (Batchscope preempts the newest and "
              "recomputes it). GUARANTEED_NO_EVICT, TensorRT-LLM's default, admits only what "
              "can finish without that, so fewer at once."));
  const ServingPlan* plan = c.in.plan ? &*c.in.plan : nullptr;
  const std::string fraction = plan ? shortest(plan->gpu_memory_utilization) : "0.9";
  if (plan) {
    head += plan_caveat(*plan);
    head += comment("Not exact: the cache. TensorRT-LLM sizes it from free_gpu_memory_fraction " +
                    fraction +
                    " of what each GPU has free once the engine is loaded; the plan "
                    "reckoned " +
                    whole(cache_tokens(m)) + " tokens.");
    head += comment("Tensor parallelism: " + whole(plan->tp) +
                    " GPUs a replica (trtllm-serve --tp_size, tensor_parallel_size below); a "
                    "Triton engine is built for it (trtllm-build --tp_size " +
                    whole(plan->tp) + ").");
  } else {
    head += comment("Not exact: the cache. Batchscope's is " + whole(cache_tokens(m)) +
                    " tokens; TensorRT-LLM takes the smaller of that and what "
                    "free_gpu_memory_fraction 0.9 of the GPU holds.");
  }
  head += common_caveats(c, "TensorRT-LLM");
  head += lanes_caveat(c, "TensorRT-LLM");

  std::string yaml = "# TensorRT-LLM LLM API options, exported from Batchscope.\n";
  yaml +=
      comment(plan ? "Use with: trtllm-serve " + one_line(plan->model_id) + " --tp_size " +
                         whole(plan->tp) + " --extra_llm_api_options trtllm-options.yaml"
                   : "Use with: trtllm-serve MODEL --extra_llm_api_options trtllm-options.yaml");
  yaml += head + "\n";
  if (plan) {
    yaml += "tensor_parallel_size: " + whole(plan->tp) + "\n";
    yaml += std::string("dtype: ") + (plan->dtype == "fp16" ? "float16" : "bfloat16") + "\n";
    if (plan->dtype == "fp8") yaml += "quant_config:\n  quant_algo: FP8\n";
  }
  yaml += "max_batch_size: " + whole(o.max_num_seqs) + "\n";
  yaml += "max_num_tokens: " + whole(o.max_num_batched_tokens) + "\n";
  yaml += "max_seq_len: " + whole(m.context_length) + "\n";
  yaml += std::string("enable_chunked_prefill: ") + (o.chunked_prefill ? "true" : "false") + "\n";
  yaml += "scheduler_config:\n";
  yaml += std::string("  capacity_scheduler_policy: ") +
          (stat ? "STATIC_BATCH" : "MAX_UTILIZATION") + "\n";
  yaml += "kv_cache_config:\n";
  if (!plan) yaml += "  max_tokens: " + whole(cache_tokens(m)) + "\n";
  yaml += "  free_gpu_memory_fraction: " + fraction + "\n";
  if (plan && plan->kv_dtype == "fp8") yaml += "  dtype: fp8\n";

  auto param = [](const char* key, const std::string& value) {
    return "parameters {\n  key: " + pbtxt_string(key) +
           "\n  value { string_value: " + pbtxt_string(value) + " }\n}\n";
  };
  std::string pb = "# Triton tensorrtllm backend model configuration, exported from Batchscope.\n";
  pb += comment(
      "For the tensorrt_llm model of tensorrtllm_backend's inflight_batcher_llm repository. "
      "Its input and output tensors are left out: copy them from that repository's "
      "config.pbtxt, and set gpt_model_path to the engine's folder.");
  pb += head + "\n";
  pb += "backend: \"tensorrtllm\"\n";
  pb += "max_batch_size: " + whole(o.max_num_seqs) + "\n";
  pb += "model_transaction_policy {\n  decoupled: true\n}\n";
  pb +=
      "dynamic_batching {\n  max_queue_delay_microseconds: 0\n  default_queue_policy {\n"
      "    max_queue_size: " +
      whole(o.queue_capacity) + "\n  }\n}\n";
  pb += param("gpt_model_type", stat ? "V1" : "inflight_fused_batching");
  pb += param("gpt_model_path", "/path/to/engine");
  pb += param("batch_scheduler_policy", stat ? "guaranteed_no_evict" : "max_utilization");
  if (!plan) pb += param("max_tokens_in_paged_kv_cache", whole(cache_tokens(m)));
  pb += param("kv_cache_free_gpu_mem_fraction", fraction);
  pb += param("enable_chunked_context", o.chunked_prefill ? "true" : "false");
  return {ExportFile{"trtllm-options.yaml", yaml}, ExportFile{"config.pbtxt", pb}};
}

Expected<std::vector<ExportFile>> kserve_files(const Checked& c) {
  if (!c.in.plan) {
    return invalid_argument(
        "the kserve export is for a language model planned for a GPU: tune --model-config "
        "CONFIG --gpu NAME --json tune.json, then export --config tune.json --format kserve");
  }
  const Options& o = c.o();
  const GenModelInfo& m = *c.in.lm;
  const ServingPlan& p = *c.in.plan;
  // A request's life at the rate one replica is planned for, by Little's
  // law: the requests in flight a replica holds there.
  const double per_replica = p.capacity_rps / (1 + p.headroom);
  const int64_t concurrency =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(per_replica * p.e2e_p50_ms / 1000)));
  std::string name;  // a DNS label: lower case, digits and '-', 63 at most
  for (char ch : m.name) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if ((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9')) {
      name += l;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  if (name.empty() || name.front() < 'a') name = "llm-" + name;
  name = name.substr(0, 63);
  while (name.back() == '-') name.pop_back();

  std::string y = "# KServe InferenceService, exported from Batchscope.\n";
  y += comment(
      "Use with: kubectl apply -f inferenceservice.yaml, on KServe 0.15 or later in its "
      "Serverless mode (Knative's autoscaler), whose Hugging Face serving runtime runs vLLM "
      "and passes it the engine arguments below.");
  y += context_block(c);
  y += plan_caveat(p);
  y += comment("Replicas: minReplicas " + whole(p.min_replicas) +
               " serve the target rate with nothing held back; maxReplicas " + whole(p.replicas) +
               " hold back " + shortest(p.headroom * 100) + "%. Each requests " + whole(p.tp) +
               " GPU" + (p.tp > 1 ? "s" : "") + " (" + one_line(p.gpu) + ").");
  if (p.capacity_rps > 0) {
    y += comment("Autoscaling: one replica serves " + fixed(p.capacity_rps, 2) +
                 " requests/s within the objective; at " + fixed(per_replica, 2) +
                 " requests/s a request lives " + fixed(p.e2e_p50_ms, 0) +
                 " ms (median), so a replica holds about " + whole(concurrency) +
                 " in flight: scaleTarget. scaleMetric rps with scaleTarget " +
                 whole(std::max<int64_t>(1, static_cast<int64_t>(per_replica))) +
                 " is the same target by arrivals.");
  } else {
    y += comment(
        "Autoscaling: no capacity was found for one replica (tune --max-rate or "
        "--target-rate); the replicas are fixed.");
  }
  y += comment("Not expressible: queue_capacity = " + whole(o.queue_capacity) +
               " and request_timeout_ms = " + whole(o.request_timeout_ms) +
               "; vLLM has no queue bound or request timeout of its own.");
  y += "apiVersion: serving.kserve.io/v1beta1\n";
  y += "kind: InferenceService\n";
  y += "metadata:\n";
  y += "  name: " + name + "\n";
  y += "spec:\n";
  y += "  predictor:\n";
  y += "    minReplicas: " + whole(p.min_replicas) + "\n";
  y += "    maxReplicas: " + whole(p.replicas) + "\n";
  if (p.capacity_rps > 0) {
    y += "    scaleMetric: concurrency\n";
    y += "    scaleTarget: " + whole(concurrency) + "\n";
  }
  y += "    model:\n";
  y += "      modelFormat:\n";
  y += "        name: huggingface\n";
  y += "      args:\n";
  auto arg = [&y](const std::string& flag, const std::string& value) {
    y += "        - " + yaml_scalar(flag + (value.empty() ? "" : "=" + value)) + "\n";
  };
  arg("--model_name", name);
  arg("--model_id", p.model_id);
  arg("--tensor-parallel-size", whole(p.tp));
  arg("--gpu-memory-utilization", shortest(p.gpu_memory_utilization));
  arg("--dtype", vllm_dtype(p));
  if (p.dtype == "fp8") arg("--quantization", "fp8");
  if (p.kv_dtype == "fp8") arg("--kv-cache-dtype", "fp8");
  arg("--max-model-len", whole(m.context_length));
  arg("--max-num-seqs", whole(o.max_num_seqs));
  arg("--max-num-batched-tokens", whole(o.max_num_batched_tokens));
  arg(o.chunked_prefill ? "--enable-chunked-prefill" : "--no-enable-chunked-prefill", "");
  arg("--block-size", whole(m.block_size));
  y += "      resources:\n";
  y += "        requests:\n";
  y += "          nvidia.com/gpu: \"" + whole(p.tp) + "\"\n";
  y += "        limits:\n";
  y += "          nvidia.com/gpu: \"" + whole(p.tp) + "\"\n";
  return std::vector<ExportFile>{ExportFile{"inferenceservice.yaml", y}};
}

}  // namespace batchscope::export_detail

// SPDX-License-Identifier: GPL-3.0-or-later
// A generative model's options for the servers of language models: vLLM's
// engine arguments (a `vllm serve --config` YAML and the command line), Hugging
// Face TGI's launcher arguments (environment file and command line), and
// TensorRT-LLM's (trtllm-serve's LLM API options, and Triton's tensorrtllm
// backend config.pbtxt). Each names, in comments, what does not carry over.
// The keys were checked against each project's documentation
// (docs/export.md names the versions).

#include <algorithm>

#include "export/export_text.h"

namespace batchscope::export_detail {

namespace {

int64_t cache_tokens(const GenModelInfo& m) { return int64_t{m.num_blocks} * m.block_size; }

bool is_static(const Options& o) { return o.scheduling == Scheduling::kStatic; }

// What no generative server here takes from Batchscope's options.
std::string common_caveats(const Checked& c, std::string_view server) {
  const Options& o = c.o();
  std::string out;
  out +=
      comment("Not exact: lengths. Batchscope counts the model's own tokens (" + c.in.lm->name +
              "'s); a model with another tokenizer gives another count for the same text, so the "
              "token budgets and context below are for the model Batchscope ran.");
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

}  // namespace

std::vector<ExportFile> vllm_files(const Checked& c) {
  const Options& o = c.o();
  const GenModelInfo& m = *c.in.lm;
  std::string head;
  head += context_block(c);
  head += comment(
      "Not exact: the cache. vLLM sizes its cache from gpu-memory-utilization (default "
      "0.9) of the GPU; Batchscope ran with " +
      whole(m.num_blocks) + " blocks of " + whole(m.block_size) + " tokens (" +
      whole(cache_tokens(m)) +
      " tokens). Uncomment num-gpu-blocks-override below (or add --num-gpu-blocks-override " +
      whole(m.num_blocks) + ") to hold vLLM's at that, for a comparison only.");
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
      "The same: a prompt longer than the token budget is prefilled in chunks beside the "
      "decodes (enable-chunked-prefill), and when the cache is full the newest sequence is "
      "preempted and recomputed.");

  std::string yaml = "# vLLM engine arguments, exported from Batchscope.\n";
  yaml += comment(
      "Use with: vllm serve MODEL --config vllm-config.yaml (flags given on the "
      "command line win over this file).");
  yaml += head + "\n";
  if (o.num_lanes > 1) yaml += "data-parallel-size: " + whole(o.num_lanes) + "\n";
  yaml += "max-num-seqs: " + whole(o.max_num_seqs) + "\n";
  yaml += "max-num-batched-tokens: " + whole(o.max_num_batched_tokens) + "\n";
  yaml += "enable-chunked-prefill: true\n";
  yaml += "scheduling-policy: fcfs\n";
  yaml += "max-model-len: " + whole(m.context_length) + "\n";
  yaml += "block-size: " + whole(m.block_size) + "\n";
  yaml += "# num-gpu-blocks-override: " + whole(m.num_blocks) + "\n";

  std::string sh = "#!/bin/sh\n# vLLM with Batchscope's options, exported from Batchscope.\n";
  sh += comment("Use with: MODEL=org/name sh vllm-serve.sh [more vllm serve flags].");
  sh += head;
  sh += "exec vllm serve \"${MODEL:?set MODEL to the model to serve}\" \\\n";
  if (o.num_lanes > 1) sh += "  --data-parallel-size " + whole(o.num_lanes) + " \\\n";
  sh += "  --max-num-seqs " + whole(o.max_num_seqs) + " \\\n";
  sh += "  --max-num-batched-tokens " + whole(o.max_num_batched_tokens) + " \\\n";
  sh += "  --enable-chunked-prefill \\\n";
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
  const Arg args[] = {
      {"--max-concurrent-requests", "MAX_CONCURRENT_REQUESTS", whole(concurrent)},
      {"--max-batch-size", "MAX_BATCH_SIZE", whole(o.max_num_seqs)},
      {"--max-batch-prefill-tokens", "MAX_BATCH_PREFILL_TOKENS", whole(o.max_num_batched_tokens)},
      {"--max-batch-total-tokens", "MAX_BATCH_TOTAL_TOKENS", whole(total)},
      {"--max-input-tokens", "MAX_INPUT_TOKENS", whole(input)},
      {"--max-total-tokens", "MAX_TOTAL_TOKENS", whole(m.context_length)},
      {"--waiting-served-ratio", "WAITING_SERVED_RATIO", "0"},
      {"--max-waiting-tokens", "MAX_WAITING_TOKENS", "1"},
  };
  std::string head;
  head += context_block(c);
  head += comment(
      "Not exact: when waiting requests join. Batchscope adds them at every step, their "
      "prompts in chunks beside the decodes; TGI prefills them in a pass of their own. "
      "waiting-served-ratio 0 and max-waiting-tokens 1 make it take them at the next "
      "token, as Batchscope does.");
  head += comment(
      "Not exact: max-concurrent-requests counts the running and the waiting: "
      "max_num_seqs " +
      whole(o.max_num_seqs) + " + queue_capacity " + whole(o.queue_capacity) + " = " +
      whole(concurrent) + ".");
  head += comment(
      "The cache: max-batch-total-tokens is Batchscope's cache, " + whole(cache_tokens(m)) +
      " tokens" +
      (total > cache_tokens(m) ? ", raised to the token budget, which TGI wants within it" : "") +
      "; TGI infers it from the GPU's memory when left out.");
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
  head += comment("Not exact: lengths. Batchscope counts " + m.name +
                  "'s own tokens; another tokenizer gives another count for the same text.");

  std::string env = "# Hugging Face TGI launcher settings, exported from Batchscope.\n";
  env += comment(
      "Use with: docker run --env-file tgi.env ghcr.io/huggingface/text-generation-"
      "inference --model-id MODEL, or text-generation-launcher with these exported.");
  env += head + "\n";
  for (const Arg& a : args) env += std::string(a.env) + "=" + a.value + "\n";

  std::string sh = "#!/bin/sh\n# TGI with Batchscope's options, exported from Batchscope.\n";
  sh += comment("Use with: MODEL_ID=org/name sh tgi-launch.sh [more launcher flags].");
  sh += head;
  sh +=
      "exec text-generation-launcher --model-id \"${MODEL_ID:?set MODEL_ID to the model to "
      "serve}\" \\\n";
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
  head += comment("Not exact: the cache. Batchscope's is " + whole(cache_tokens(m)) +
                  " tokens; TensorRT-LLM takes the smaller of that and what "
                  "free_gpu_memory_fraction 0.9 of the GPU holds.");
  head += common_caveats(c, "TensorRT-LLM");
  head += lanes_caveat(c, "TensorRT-LLM");

  std::string yaml = "# TensorRT-LLM LLM API options, exported from Batchscope.\n";
  yaml += comment("Use with: trtllm-serve MODEL --extra_llm_api_options trtllm-options.yaml");
  yaml += head + "\n";
  yaml += "max_batch_size: " + whole(o.max_num_seqs) + "\n";
  yaml += "max_num_tokens: " + whole(o.max_num_batched_tokens) + "\n";
  yaml += "max_seq_len: " + whole(m.context_length) + "\n";
  yaml += "enable_chunked_prefill: true\n";
  yaml += "scheduler_config:\n";
  yaml += std::string("  capacity_scheduler_policy: ") +
          (stat ? "STATIC_BATCH" : "MAX_UTILIZATION") + "\n";
  yaml += "kv_cache_config:\n";
  yaml += "  max_tokens: " + whole(cache_tokens(m)) + "\n";
  yaml += "  free_gpu_memory_fraction: 0.9\n";

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
  pb += param("max_tokens_in_paged_kv_cache", whole(cache_tokens(m)));
  pb += param("kv_cache_free_gpu_mem_fraction", "0.9");
  pb += param("enable_chunked_context", "true");
  return {ExportFile{"trtllm-options.yaml", yaml}, ExportFile{"config.pbtxt", pb}};
}

}  // namespace batchscope::export_detail

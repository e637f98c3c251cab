// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/model_flags.h"

#include "app/cli_args.h"
#include "model/model_paths.h"

namespace batchscope {
namespace {

// Takes --model over `c.path`, refusing it beside `other`.
Status take_path(std::map<std::string, std::string>& flags, ModelChoice& c, const char* other) {
  if (auto it = flags.find("model"); it != flags.end()) {
    c.path = it->second;
    flags.erase(it);
    if (flags.count(other)) {
      return invalid_argument(std::string("--model and --") + other + " exclude each other");
    }
  }
  return {};
}

}  // namespace

Status take_python_flags(std::map<std::string, std::string>& flags, ModelChoice& c) {
  const bool python = !c.synthetic && is_python_file(c.path);
  for (const char* name : {"class", "python", "model-option", "worker-timeout-ms"}) {
    if (!python && flags.count(name)) {
      return invalid_argument(std::string("--") + name +
                              " is for a Python model (--model FILE.py)");
    }
  }
  if (auto it = flags.find("model-option"); it != flags.end()) {
    // Repeated flags arrive one a line (cli::parse_flags).
    std::string all = it->second;
    flags.erase(it);
    size_t from = 0;
    for (;;) {
      const size_t nl = all.find('\n', from);
      const std::string one = all.substr(from, nl == std::string::npos ? nl : nl - from);
      const size_t eq = one.find('=');
      if (eq == std::string::npos || eq == 0) {
        return invalid_argument("--model-option expects KEY=VALUE, got '" + one + "'");
      }
      c.python.options.emplace_back(one.substr(0, eq), one.substr(eq + 1));
      if (nl == std::string::npos) break;
      from = nl + 1;
    }
  }
  return cli::take_fields(
      flags, {cli::text("class", c.python.class_name), cli::text("python", c.python.interpreter),
              cli::whole("worker-timeout-ms", 1, 86'400'000, c.python.worker_timeout_ms)});
}

std::string python_flags_help() {
  return "Python models (--model FILE.py, docs/python.md):\n"
         "  --class NAME              the class to run (default: the file's one class with a\n"
         "                            predict method)\n"
         "  --python PATH             the interpreter its workers run (default /usr/bin/python3)\n"
         "  --model-option KEY=VALUE  passed to the class's constructor; may be repeated\n"
         "  --worker-timeout-ms N     a predict running longer has its worker killed and\n"
         "                            restarted, and its batch answered 504 (default 30000)\n";
}

bool wants_lm(const std::map<std::string, std::string>& flags, const std::string& default_path) {
  if (flags.count("synthetic-lm") || flags.count("model-config")) return true;
  if (flags.count("synthetic")) return false;
  const auto it = flags.find("model");
  return is_generative_file(find_model(it == flags.end() ? default_path : it->second));
}

Expected<ModelChoice> take_model_flags(std::map<std::string, std::string>& flags,
                                       std::string default_path) {
  ModelChoice c;
  c.path = std::move(default_path);
  if (Status s = take_path(flags, c, "synthetic"); !s) return s.error();
  if (auto it = flags.find("synthetic"); it != flags.end()) {
    auto cost = parse_synthetic(it->second);
    if (!cost) return cost.error();
    c.synthetic = *cost;
    flags.erase(it);
  }
  if (Status s =
          cli::take_fields(flags, {cli::text("device", c.device), cli::text("warmup", c.warmup)});
      !s) {
    return s.error();
  }
  if (c.warmup != "auto" && c.warmup != "every" && c.warmup != "doubling") {
    return invalid_argument("--warmup must be auto, doubling or every, not '" + c.warmup + "'");
  }
  if (!c.synthetic) c.path = find_model(c.path);
  if (Status s = take_python_flags(flags, c); !s) return s.error();
  return c;
}

Expected<ModelChoice> take_lm_flags(std::map<std::string, std::string>& flags,
                                    std::string default_path) {
  ModelChoice c;
  c.path = std::move(default_path);
  if (Status s = take_path(flags, c, "synthetic-lm"); !s) return s.error();
  if (auto it = flags.find("synthetic-lm"); it != flags.end()) {
    const std::string text = it->second;
    const size_t comma = text.find(',');
    if (comma == std::string::npos) {
      return invalid_argument(
          "--synthetic-lm: expected STEP_US,TOKEN_US (for example 2000,20), got '" + text + "'");
    }
    auto step = cli::parse_number("synthetic-lm", text.substr(0, comma), 0, 1e7);
    if (!step) return step.error();
    auto token = cli::parse_number("synthetic-lm", text.substr(comma + 1), 0, 1e7);
    if (!token) return token.error();
    c.synthetic_lm = SyntheticLmCost{*step, *token};
    flags.erase(it);
  }
  if (Status s =
          cli::take_fields(flags, {cli::text("device", c.device),
                                   cli::number("cache-tokens", 16, 1 << 24, c.cache_tokens)});
      !s) {
    return s.error();
  }
  if (!c.synthetic_lm) c.path = find_model(c.path);
  return c;
}

std::string lm_flags_help() {
  return "Generative models (a --model whose sidecar says \"kind\": \"generative\"):\n"
         "  --synthetic-lm S,T        a weightless model: each step costs S + T per token us\n"
         "  --cache-tokens N          key/value cache size in token positions (default 16384)\n";
}

Expected<std::optional<PlanChoice>> take_plan_flags(std::map<std::string, std::string>& flags) {
  PlanChoice p;
  if (Status s = cli::take_fields(
          flags, {cli::text("model-config", p.model_config), cli::text("gpu", p.gpu),
                  cli::text("gpu-spec", p.gpu_spec), cli::number("tp", 1, 64, p.tp),
                  cli::text("dtype", p.dtype), cli::text("kv-dtype", p.kv_dtype),
                  cli::number("gpu-memory-utilization", 0.01, 1, p.memory_utilization),
                  cli::number("block-size", 1, 256, p.block_size),
                  cli::number("max-model-len", 1, 1 << 26, p.max_model_len)});
      !s) {
    return s.error();
  }
  if (p.model_config.empty()) {
    if (!p.gpu.empty() || !p.gpu_spec.empty()) {
      return invalid_argument(
          "--gpu plans a model that is not here: give its --model-config "
          "(a Hugging Face config.json, or models/llm-configs/NAME)");
    }
    return std::optional<PlanChoice>();
  }
  return std::optional<PlanChoice>(p);
}

std::string plan_flags_help() {
  return "A language model planned for a GPU that is not here (predicted only):\n"
         "  --model-config PATH       its Hugging Face config.json, or the folder holding it\n"
         "                            (models/llm-configs/ has Llama-3.1-8B and 70B, Qwen2.5-7B,\n"
         "                            Mistral-7B, Gemma-2-9B, Qwen3-8B)\n"
         "  --gpu NAME                a GPU from `batchscope gpus`, or --gpu-spec FILE\n"
         "  --tp N                    tensor parallel GPUs (default 1)\n"
         "  --dtype bf16|fp16|fp8     the weights' (default: the config's torch_dtype)\n"
         "  --kv-dtype bf16|fp16|fp8  the KV cache's (default: --dtype)\n"
         "  --gpu-memory-utilization F   the share of memory for weights and cache (0.9)\n"
         "  --block-size N            tokens per cache block (default 16)\n"
         "  --max-model-len N         the context (default: max_position_embeddings)\n";
}

bool take_cost_flag(const std::string& name, const std::string& value, CostChoice& choice,
                    Status& bad) {
  if (name == "cost") {
    choice.file = value;
  } else if (name == "recalibrate") {
    choice.recalibrate = true;
  } else if (name == "calibration-seconds") {
    bad = cli::read_number(name, value, 0.5, 600, choice.calibration_s);
  } else {
    return false;
  }
  return true;
}

std::string cost_flags_help() {
  return "  --cost FILE                a cost file to predict with (profile --json, bench "
         "--cost-out,\n"
         "                             a kept cost); default: the kept cost of this model on "
         "this\n"
         "                             machine, made on first use\n"
         "  --recalibrate              make the kept cost anew (profile and live calibration)\n"
         "  --calibration-seconds S    live traffic per lane count when one is made (default "
         "6)\n";
}

Expected<HistoryChoice> take_history_flags(std::map<std::string, std::string>& flags) {
  HistoryChoice c = default_history_choice();
  const bool kept = !c.off;
  if (auto it = flags.find("no-history"); it != flags.end()) {
    c.off = true;
    flags.erase(it);
  }
  if (auto it = flags.find("history"); it != flags.end()) {
    if (it->second.empty()) return invalid_argument("--history needs a file name");
    if (!kept) {
      return invalid_argument("--history " + it->second +
                              ": this build has no run history (it needs SQLite and OpenSSL)");
    }
    c.path = it->second;
    flags.erase(it);
  }
  if (auto it = flags.find("history-requests"); it != flags.end()) {
    auto n = cli::parse_number("history-requests", it->second, 0, 1e12);
    if (!n) return n.error();
    if (*n != static_cast<double>(static_cast<uint64_t>(*n)))
      return invalid_argument("--history-requests " + it->second + " is not a whole number");
    c.request_cap = static_cast<uint64_t>(*n);
    flags.erase(it);
  }
  return c;
}

std::string history_flags_help() {
  return "  --history FILE         keep this run in FILE (default $BATCHSCOPE_HISTORY, else\n"
         "                         $XDG_DATA_HOME/batchscope/history.sqlite)\n"
         "  --no-history           keep nothing\n"
         "  --history-requests N   keep at most N requests of a run (default 1000000; the\n"
         "                         rest are counted, and the run says it was cut)\n";
}

void allow_bare_record(std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--record" && (i + 1 == args.size() || args[i + 1].rfind("--", 0) == 0)) {
      args[i] = "--record=";
    }
  }
}

Expected<ServeRecordChoice> take_record_flags(std::map<std::string, std::string>& flags) {
  ServeRecordChoice c;
  auto history = take_history_flags(flags);
  if (!history) return history.error();
  c.history = *history;
  if (auto it = flags.find("record"); it != flags.end()) {
    c.on = true;
    if (!it->second.empty()) c.options.label = it->second;
    flags.erase(it);
  }
  if (auto it = flags.find("record-bodies"); it != flags.end()) {
    if (!c.on) return invalid_argument("--record-bodies needs --record");
    c.options.bodies = true;
    flags.erase(it);
  }
  if (auto it = flags.find("record-every"); it != flags.end() && !c.on) {
    return invalid_argument("--record-every " + it->second + " needs --record");
  }
  if (Status s = cli::take_fields(
          flags, {cli::number("record-every", 1, 7 * 24 * 3600, c.options.every_s)});
      !s) {
    return s.error();
  }
  return c;
}

std::string record_flags_help() {
  return "Recording what the clients send (docs/history.md):\n"
         "  --record [LABEL]          keeps every request as runs of kind serve in the run\n"
         "                            history, written as they go (sizes and timings only,\n"
         "                            never a body); LABEL names them (default: served clients)\n"
         "  --record-every S          one run per S seconds (default: one run until exit)\n"
         "  --record-bodies           keep each request's body too (runs export ID --format\n"
         "                            bodies writes them as JSON lines)\n" +
         history_flags_help();
}

}  // namespace batchscope

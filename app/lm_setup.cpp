// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/lm_setup.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "app/cli_args.h"
#include "app/install_paths.h"
#include "generation/synthetic_lm.h"

#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/metadata_json.h"
#include "torch/torch_lm.h"
#endif

namespace batchscope {

bool wants_lm(const std::map<std::string, std::string>& flags, const std::string& default_path) {
  if (flags.count("synthetic-lm")) return true;
  if (flags.count("synthetic")) return false;
#ifdef BATCHSCOPE_WITH_TORCH
  const auto it = flags.find("model");
  return is_generative_sidecar(find_model(it == flags.end() ? default_path : it->second));
#else
  (void)default_path;
  return false;
#endif
}

Expected<LmChoice> take_lm_flags(std::map<std::string, std::string>& flags,
                                 std::string default_path) {
  LmChoice c;
  c.path = std::move(default_path);
  if (auto it = flags.find("model"); it != flags.end()) {
    c.path = it->second;
    flags.erase(it);
    if (flags.count("synthetic-lm")) {
      return invalid_argument("--model and --synthetic-lm exclude each other");
    }
  }
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
    c.synthetic = std::make_pair(*step, *token);
    flags.erase(it);
  }
  if (auto it = flags.find("device"); it != flags.end()) {
    c.device = it->second;
    flags.erase(it);
  }
  if (auto it = flags.find("cache-tokens"); it != flags.end()) {
    auto n = cli::parse_number("cache-tokens", it->second, 16, 1 << 24);
    if (!n) return n.error();
    c.cache_tokens = static_cast<int>(*n);
    flags.erase(it);
  }
  if (!c.synthetic) c.path = find_model(c.path);
  return c;
}

Expected<LmSetup> make_lm(const LmChoice& choice) {
  LmSetup s;
  s.device = choice.device;
  if (choice.synthetic) {
    SyntheticLmOptions o;
    o.step_us = choice.synthetic->first;
    o.token_us = choice.synthetic->second;
    if (choice.cache_tokens > 0)
      o.num_blocks = (choice.cache_tokens + o.block_size - 1) / o.block_size;
    if (o.step_us > 0 || o.token_us > 0)
      o.spend = [](Duration d) { std::this_thread::sleep_for(d); };
    s.runner = std::make_unique<SyntheticLm>(o);
    s.device = "cpu";
    return s;
  }
#ifdef BATCHSCOPE_WITH_TORCH
  TorchOptions to;
  to.device = choice.device;
  to.lanes = std::max(1, choice.lanes);
  auto lm = TorchLm::load(choice.path, to, choice.cache_tokens);
  if (!lm) return lm.error();
  s.runner = std::move(*lm);
  return s;
#else
  return invalid_argument("this build has no LibTorch; use --synthetic-lm STEP_US,TOKEN_US");
#endif
}

LmFactory lm_factory(const LmChoice& choice) {
  return [choice](int lane) -> std::unique_ptr<LmRunner> {
    LmChoice c = choice;
    c.lanes = std::max(c.lanes, lane + 1);
    auto lm = make_lm(c);
    if (!lm) throw std::runtime_error(lm.error().message);
    return std::move(lm->runner);
  };
}

Expected<LmInfo> lm_info(const LmChoice& choice) {
  if (choice.synthetic) {
    SyntheticLmOptions o;
    LmInfo info;
    info.name = "synthetic_lm";
    info.context_length = o.context_length;
    info.block_size = o.block_size;
    info.num_blocks = choice.cache_tokens > 0
                          ? (choice.cache_tokens + o.block_size - 1) / o.block_size
                          : o.num_blocks;
    return info;
  }
#ifdef BATCHSCOPE_WITH_TORCH
  auto info = TorchLm::read_lm_sidecar(sidecar_path(choice.path));
  if (!info) return info.error();
  const int tokens = choice.cache_tokens > 0 ? choice.cache_tokens : TorchLm::kDefaultCacheTokens;
  info->num_blocks = (tokens + std::max(1, info->block_size) - 1) / std::max(1, info->block_size);
  return info;
#else
  return invalid_argument("this build has no LibTorch; use --synthetic-lm STEP_US,TOKEN_US");
#endif
}

std::string lm_flags_help() {
  return "Generative models (a --model whose sidecar says \"kind\": \"generative\"):\n"
         "  --synthetic-lm S,T        a weightless model: each step costs S + T per token us\n"
         "  --cache-tokens N          key/value cache size in token positions (default 16384)\n";
}

}  // namespace batchscope

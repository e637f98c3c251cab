// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generative model a command serves or measures: a TorchScript file
// whose sidecar says "kind": "generative" (--model models/tiny_lm.pt), or
// the weightless synthetic one (--synthetic-lm STEP_US,TOKEN_US: each step
// costs STEP_US + TOKEN_US per token it processes). --cache-tokens sets the
// key/value cache's size in token positions. Shared by `serve` and `bench`.

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "generation/gen_engine.h"
#include "generation/lm_runner.h"

namespace batchscope {

struct LmChoice {
  std::string path;
  std::optional<std::pair<double, double>> synthetic;  // step and token cost, microseconds
  std::string device = "cpu";
  int cache_tokens = 0;  // 0: the model's default
  // Engine lanes sharing the machine: a TorchScript model's OpenBLAS threads
  // are the cores over this, so that lanes x threads stay within the cores.
  int lanes = 1;
};

// True when `flags` ask for a generative model: --synthetic-lm, or a
// --model (else `default_path`) whose sidecar says generative.
bool wants_lm(const std::map<std::string, std::string>& flags, const std::string& default_path);
// Takes --model, --synthetic-lm, --device and --cache-tokens out of `flags`.
Expected<LmChoice> take_lm_flags(std::map<std::string, std::string>& flags,
                                 std::string default_path);

struct LmSetup {
  std::unique_ptr<LmRunner> runner;
  std::string device = "cpu";
};
Expected<LmSetup> make_lm(const LmChoice& choice);
// The engine's lanes beyond the first: each makes the model again, with
// its own cache (make_lm's error is thrown as that lane's message); lane i
// counts at least i + 1 lanes sharing the cores.
LmFactory lm_factory(const LmChoice& choice);
// The model's description (context, cache blocks) without loading it or
// allocating its cache: the synthetic model's, or the sidecar's.
Expected<LmInfo> lm_info(const LmChoice& choice);

// Help lines for the flags above.
std::string lm_flags_help();

}  // namespace batchscope

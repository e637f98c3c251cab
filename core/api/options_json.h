// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Batching options as JSON, for PUT /v1/config, `serve --config`, the
// window's saved configuration and `export --format json`:
//   {"strategy": "fifo", "max_batch_size": 32, "max_wait_us": 2000,
//    "queue_capacity": 1024, "request_timeout_ms": 30000, "num_lanes": 1,
//    "target_p99_ms": 50, "scheduling": "continuous", "max_num_seqs": 32,
//    "max_num_batched_tokens": 512}
// (the last three apply to generative models)
// A partial object changes only the fields it names; "max_wait_ms" is
// accepted in place of "max_wait_us". What GET /v1/config answers,
// {"version": N, "options": {...}}, is read as its "options", and a tune's
// result (`tune --json`, tensor or generative) as its "best.options", so
// every document any part of Batchscope writes can be read back anywhere.
// Unknown fields and wrong types are refused by name. Numbers are checked
// against their ranges (Options' table) before they are converted, and a
// refusal quotes the number as sent.
// Thread-safety: free functions without shared state.

#include <optional>
#include <string>
#include <string_view>

#include "common/options.h"
#include "common/serving_plan.h"
#include "common/status.h"

namespace batchscope {

Expected<Options> options_from_json(std::string_view json, Options base);
// options_to_json() is options.h's.

// What a tune's result says of its best besides the options: the traffic it
// was tuned under and its figures, as measured where a live confirmation
// chose it, else as predicted. Nullopt for any other document, or a tune
// with no best; a figure the result lacks stays 0.
struct TuneOutcome {
  std::string traffic;  // "poisson 1500 req/s"; empty: not said
  bool measured = false;
  bool generation = false;
  double p50_ms = 0, p99_ms = 0;  // end to end
  double throughput_rps = 0;      // completed requests per second
  // A generative tune's: at its SLO's quantile.
  int quantile = 99;
  double ttft_ms = 0, itl_ms = 0, tokens_per_s = 0;
  // Its "measured_on" (runs/machine_facts.h) in words (hardware_text); empty
  // where the result does not say.
  std::string hardware;
  // A generative tune's "lm" (its model's context and cache), "model_file"
  // and a planned one's "plan".
  std::optional<GenModelInfo> lm;
  std::string model_file;
  std::optional<ServingPlan> plan;
};
std::optional<TuneOutcome> tune_outcome_from_json(std::string_view json);

// The hardware behind `device`, in words, from machine_json()'s text: on a
// GPU "cuda:0 on NVIDIA H200 (0000:3b:00.0), NVIDIA driver 550.54.15" (every
// GPU the driver sees, when there are several), on the CPU "cpu: AMD EPYC
// 7B13, 2 cores"; the device alone where the machine says nothing of it.
std::string hardware_text(const std::string& device, std::string_view machine_json);

}  // namespace batchscope

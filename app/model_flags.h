// SPDX-License-Identifier: GPL-3.0-or-later
// The flags that say which model a command runs, and what it keeps: the
// model (--model, --synthetic, --synthetic-lm, --device, --warmup,
// --cache-tokens), the cost a prediction uses (--cost, --recalibrate,
// --calibration-seconds), the run history (--history, --no-history,
// --history-requests) and serve's recording (--record, --record-every,
// --record-bodies), each read into core/model's request types, with their
// help lines.
// Thread-safety: plain functions.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/history_keeping.h"
#include "model/kept_cost.h"
#include "model/local_model.h"
#include "model/planned_lm.h"
#include "model/serve_recording.h"

namespace batchscope {

// True when `flags` ask for a language model: --synthetic-lm, --model-config,
// or a --model (else `default_path`) whose sidecar says generative.
bool wants_lm(const std::map<std::string, std::string>& flags, const std::string& default_path);

// Takes --model (else `default_path`, found as model_paths.h finds it),
// --synthetic, --device and --warmup out of `flags`.
Expected<ModelChoice> take_model_flags(std::map<std::string, std::string>& flags,
                                       std::string default_path);
// Takes a Python model's --class, --python, --model-option (repeatable) and
// --worker-timeout-ms out of `flags` into `c`; refuses them for any other model.
Status take_python_flags(std::map<std::string, std::string>& flags, ModelChoice& c);
std::string python_flags_help();

// Takes --model, --synthetic-lm, --device and --cache-tokens out of `flags`.
Expected<ModelChoice> take_lm_flags(std::map<std::string, std::string>& flags,
                                    std::string default_path);
// Help lines for the language model's flags.
std::string lm_flags_help();

// Takes --model-config, --gpu, --gpu-spec, --tp, --dtype, --kv-dtype,
// --gpu-memory-utilization, --block-size and --max-model-len out of `flags`:
// a language model planned for a GPU that is not here; nullopt without
// --model-config (and an error naming the flag given without it).
Expected<std::optional<PlanChoice>> take_plan_flags(std::map<std::string, std::string>& flags);
std::string plan_flags_help();

// Reads --cost, --recalibrate and --calibration-seconds into `choice`; false
// when `name` is none of them. A bad value sets `bad`.
bool take_cost_flag(const std::string& name, const std::string& value, CostChoice& choice,
                    Status& bad);
std::string cost_flags_help();

// Reads and removes the history flags; errors quote the value.
Expected<HistoryChoice> take_history_flags(std::map<std::string, std::string>& flags);
std::string history_flags_help();

// serve's: --record [LABEL] (a bare --record is rewritten to --record= by
// allow_bare_record before the flags are parsed), --record-every S,
// --record-bodies, and the history flags.
void allow_bare_record(std::vector<std::string>& args);
Expected<ServeRecordChoice> take_record_flags(std::map<std::string, std::string>& flags);
std::string record_flags_help();

}  // namespace batchscope

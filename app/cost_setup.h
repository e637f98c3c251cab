// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A model's batch cost t(b) for the predictor: read from a file that
// `batchscope profile --json` wrote, exact for the synthetic model, or
// measured now (with LibTorch). Shared by `tune` and `bench --target predict`.
// Thread-safety: runs on the calling thread.

#include <cstdint>
#include <string>

#include "app/model_setup.h"
#include "tuning/cost_model.h"

namespace batchscope {

// `cost_file` empty: from the model. `max_batch`: the largest size to measure
// or to make exact. `command` names the caller in what it prints.
Expected<CostModel> load_cost_model(const ModelChoice& model, const std::string& cost_file,
                                    uint32_t max_batch, const char* command);

}  // namespace batchscope

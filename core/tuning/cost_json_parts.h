// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The cost file's readers and writers of its parts beyond the points: the
// send lag, the preprocess cost, and the small readers they and the file's
// own reader (cost_json.cpp) share. Each reader takes the object that holds
// its member, is quiet where the member is absent, and names the member and
// quotes the value it refuses, `prefix` first. Each writer appends
// ",\"member\":..." (nothing when there is nothing to write). Internal to
// core/tuning.
// Thread-safety: pure functions.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "tuning/cost_model.h"
#include "tuning/preprocess_cost.h"
#include "tuning/send_lag.h"

namespace batchscope::cost_detail {

// A JSON value as given, cut short so a message never echoes a whole document.
std::string excerpt(const nlohmann::json& v);
// An optional array of numbers `name` in `j` (empty where absent).
Expected<std::vector<double>> number_array(const nlohmann::json& j, const char* name,
                                           const std::string& prefix);
// An optional count `name` in `j` (0 where absent), at most 1e15.
Expected<uint64_t> optional_count(const nlohmann::json& j, const char* name,
                                  const std::string& prefix);
// ",\"name\":[...]", nothing for no values.
void append_array(std::string& out, const char* name, const std::vector<double>& v);

// "send_lag": {"base_us_quantiles": [...], "stalls": [{"per_s": r,
// "us_quantiles": [...]}, ...], "stalls_waiting": [...]} (send_lag.h).
Expected<SendLagModel> send_lag_from_json(const nlohmann::json& j, const std::string& prefix);
void append_send_lag(std::string& out, const SendLagModel& lag);

// "preprocess": {"lane_us_quantiles": [...], "lane_requests": n, "pool":
// [{"busy": k, "us_quantiles": [...], "requests": n}, ...]} (preprocess_cost.h).
Expected<PreprocessCost> preprocess_from_json(const nlohmann::json& j, const std::string& prefix);
void append_preprocess(std::string& out, const PreprocessCost& c);

}  // namespace batchscope::cost_detail

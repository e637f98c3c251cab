// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/step_cost.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

namespace batchscope {

namespace {

double median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double us_of(const StepRecord& s) {
  return std::chrono::duration<double, std::micro>(s.end - s.start).count();
}

bool measured(const StepRecord& s) { return s.start != TimePoint{} && s.end > s.start; }

}  // namespace

Expected<StepCost> measure_step_cost(std::span<const StepRecord> steps) {
  StepCost c;
  std::map<uint32_t, std::vector<double>> by_decodes;  // decode-only steps
  for (const StepRecord& s : steps) {
    if (!measured(s)) continue;
    ++c.steps;
    if (s.prefill_tokens == 0 && s.decodes > 0) by_decodes[s.decodes].push_back(us_of(s));
  }
  if (by_decodes.empty()) {
    return invalid_argument("the run recorded no model step that only decoded (" +
                            std::to_string(c.steps) + " steps): run longer to measure a step");
  }
  // Weighted least squares through each decode count's median.
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::map<uint32_t, std::vector<double>> buckets;
  for (auto& [decodes, us] : by_decodes) {
    c.decode_steps += us.size();
    const double w = static_cast<double>(us.size()), x = decodes;
    auto& bucket = buckets[std::bit_floor(decodes)];
    bucket.insert(bucket.end(), us.begin(), us.end());
    const double y = median(us);
    n += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  const double var = n * sxx - sx * sx;
  c.token_us = var > 0 ? std::max(0.0, (n * sxy - sx * sy) / var) : 0.0;
  c.step_us = std::max(0.0, (sy - c.token_us * sx) / n);
  for (auto& [from, us] : buckets) {
    c.rows.push_back({from, from * 2 - 1, us.size(), median(us)});
  }
  std::vector<double> prefill;  // each prefilling step's cost per prompt token beyond the line
  for (const StepRecord& s : steps) {
    if (!measured(s) || s.prefill_tokens == 0) continue;
    const double beyond = us_of(s) - c.step_us - c.token_us * s.decodes;
    prefill.push_back(std::max(0.0, beyond) / s.prefill_tokens);
  }
  if (!prefill.empty()) c.prefill_token_us = median(prefill);
  return c;
}

std::string step_cost_json(const StepCost& c, const std::string& model,
                           const std::string& device) {
  nlohmann::ordered_json j;
  j["model"] = model;
  j["device"] = device;
  j["steps"] = c.steps;
  j["decode_steps"] = c.decode_steps;
  j["step_us"] = c.step_us;
  j["token_us"] = c.token_us;
  j["prefill_token_us"] = c.prefill_token_us;
  char synthetic[64];
  std::snprintf(synthetic, sizeof synthetic, "%.1f,%.3f", c.step_us, c.token_us);
  j["synthetic_lm"] = synthetic;
  j["by_decodes"] = nlohmann::json::array();
  for (const StepCostRow& r : c.rows) {
    j["by_decodes"].push_back({{"decodes_from", r.decodes_from},
                               {"decodes_to", r.decodes_to},
                               {"steps", r.steps},
                               {"median_us", r.median_us}});
  }
  return j.dump(2) + "\n";
}

}  // namespace batchscope

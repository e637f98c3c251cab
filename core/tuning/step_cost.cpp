// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/step_cost.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
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

StepCost refine_step_cost(const StepCost& kept, const StepCost& seen, uint64_t cap) {
  if (seen.steps == 0) return kept;
  const double w_kept = static_cast<double>(std::min(kept.steps, cap));
  const double w_seen = static_cast<double>(seen.steps);
  const double total = w_kept + w_seen;
  StepCost out = kept;
  for (double StepCost::*f : {&StepCost::step_us, &StepCost::token_us, &StepCost::prefill_token_us}) {
    out.*f = (kept.*f * w_kept + seen.*f * w_seen) / total;
  }
  // A run with no prefill has no prompt-token cost to teach.
  if (seen.prefill_token_us <= 0) out.prefill_token_us = kept.prefill_token_us;
  out.steps = kept.steps + seen.steps;
  out.decode_steps = kept.decode_steps + seen.decode_steps;
  if (!seen.rows.empty()) out.rows = seen.rows;
  return out;
}

Expected<StepCost> parse_step_cost_json(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return invalid_argument("a step cost file is JSON; this is not");
  if (!j.is_object()) return invalid_argument("a step cost file is a JSON object");
  StepCost c;
  auto number = [&](const char* key, double& out) -> Status {
    const auto it = j.find(key);
    if (it == j.end()) return invalid_argument(std::string("the step cost has no \"") + key + "\"");
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 ||
        it->get<double>() >= 1e7) {
      return invalid_argument(std::string("\"") + key + "\" must be a number of microseconds from 0 "
                              "to 10 s, not " + it->dump().substr(0, 60));
    }
    out = it->get<double>();
    return Status::Ok();
  };
  for (auto [key, field] : {std::pair{"step_us", &StepCost::step_us},
                            std::pair{"token_us", &StepCost::token_us},
                            std::pair{"prefill_token_us", &StepCost::prefill_token_us}}) {
    if (Status s = number(key, c.*field); !s) return s.error();
  }
  auto count = [&](const char* key, uint64_t& out) {
    const auto it = j.find(key);
    if (it != j.end() && it->is_number_unsigned()) out = it->get<uint64_t>();
  };
  count("steps", c.steps);
  count("decode_steps", c.decode_steps);
  if (const auto rows = j.find("by_decodes"); rows != j.end() && rows->is_array()) {
    for (const auto& r : *rows) {
      if (!r.is_object()) continue;
      StepCostRow row;
      const auto from = r.find("decodes_from"), to = r.find("decodes_to"), n = r.find("steps"),
                 us = r.find("median_us");
      if (from == r.end() || to == r.end() || n == r.end() || us == r.end() ||
          !from->is_number_unsigned() || !to->is_number_unsigned() ||
          !n->is_number_unsigned() || !us->is_number()) {
        continue;
      }
      row.decodes_from = static_cast<uint32_t>(std::min<uint64_t>(from->get<uint64_t>(), UINT32_MAX));
      row.decodes_to = static_cast<uint32_t>(std::min<uint64_t>(to->get<uint64_t>(), UINT32_MAX));
      row.steps = n->get<uint64_t>();
      row.median_us = us->get<double>();
      c.rows.push_back(row);
    }
  }
  return c;
}

}  // namespace batchscope

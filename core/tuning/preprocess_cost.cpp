// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/preprocess_cost.h"

#include <nlohmann/json.hpp>

#include "common/text_out.h"
#include "tuning/cost_checks.h"

namespace batchscope {

namespace {

using Json = nlohmann::json;

std::string excerpt(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

Expected<std::vector<double>> numbers(const Json& j, const char* name, const std::string& at) {
  std::vector<double> out;
  const auto it = j.find(name);
  if (it == j.end()) return out;
  if (!it->is_array())
    return invalid_argument(at + name + " = " + excerpt(*it) + " must be an array");
  out.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_number()) {
      return invalid_argument(at + name + "[" + std::to_string(i) + "] = " + excerpt((*it)[i]) +
                              " must be a number");
    }
    out.push_back((*it)[i].get<double>());
  }
  return out;
}

void append_numbers(std::string& out, const std::vector<double>& v) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    append_json_number(out, v[i]);
  }
  out += ']';
}

}  // namespace

const std::vector<double>& PreprocessCost::pool_us(size_t busy) const {
  static const std::vector<double> kNone;
  if (pool.empty()) return kNone;
  const Pool* best = &pool.front();
  for (const Pool& p : pool) {
    if (p.busy <= busy) best = &p;
  }
  return best->us;
}

Status PreprocessCost::validate(const std::string& prefix) const {
  const std::string at = prefix + "preprocess.";
  if (Status s = cost_detail::check_quantiles(lane_us, "lane_us_quantiles", kMaxCostUs, at); !s) {
    return s;
  }
  uint32_t last = 0;
  for (size_t i = 0; i < pool.size(); ++i) {
    const std::string where = at + "pool[" + std::to_string(i) + "].";
    if (pool[i].busy <= last || pool[i].busy > kMaxCostLanes) {
      return invalid_argument(where + "busy = " + std::to_string(pool[i].busy) + " must be above " +
                              std::to_string(last) + " and at most " +
                              std::to_string(kMaxCostLanes));
    }
    last = pool[i].busy;
    if (pool[i].us.empty()) return invalid_argument(where + "us_quantiles is missing");
    if (Status s = cost_detail::check_quantiles(pool[i].us, "us_quantiles", kMaxCostUs, where);
        !s) {
      return s;
    }
  }
  return Status::Ok();
}

std::string PreprocessCost::to_json() const {
  std::string out = "{";
  if (!lane_us.empty()) {
    out += "\"lane_us_quantiles\":";
    append_numbers(out, lane_us);
  }
  if (!pool.empty()) {
    out += lane_us.empty() ? "\"pool\":[" : ",\"pool\":[";
    for (size_t i = 0; i < pool.size(); ++i) {
      out += i ? ",{\"busy\":" : "{\"busy\":";
      out += std::to_string(pool[i].busy) + ",\"us_quantiles\":";
      append_numbers(out, pool[i].us);
      out += '}';
    }
    out += ']';
  }
  return out + '}';
}

Expected<PreprocessCost> PreprocessCost::from_json(std::string_view json,
                                                   const std::string& prefix) {
  const std::string at = prefix + "preprocess";
  const Json j = Json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return invalid_argument(at + " = " + std::string(json.substr(0, 64)) + " must be an object");
  }
  PreprocessCost c;
  Expected<std::vector<double>> lane = numbers(j, "lane_us_quantiles", at + ".");
  if (!lane) return lane.error();
  c.lane_us = std::move(*lane);
  if (const auto p = j.find("pool"); p != j.end()) {
    if (!p->is_array())
      return invalid_argument(at + ".pool = " + excerpt(*p) + " must be an array");
    for (size_t i = 0; i < p->size(); ++i) {
      const Json& e = (*p)[i];
      const std::string where = at + ".pool[" + std::to_string(i) + "]";
      const auto busy = e.is_object() ? e.find("busy") : e.end();
      if (busy == e.end() || !busy->is_number_unsigned() || busy->get<uint64_t>() > kMaxCostLanes) {
        return invalid_argument(where + ".busy" +
                                (busy == e.end() ? std::string(" is missing")
                                                 : " = " + excerpt(*busy) +
                                                       " must be a whole number from 1 to " +
                                                       std::to_string(kMaxCostLanes)));
      }
      Expected<std::vector<double>> us = numbers(e, "us_quantiles", where + ".");
      if (!us) return us.error();
      c.pool.push_back({static_cast<uint32_t>(busy->get<uint64_t>()), std::move(*us)});
    }
  }
  if (Status s = c.validate(prefix); !s) return s.error();
  return c;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The cost file's parts beyond its points (cost_json_parts.h).
#include "tuning/cost_json_parts.h"

#include <utility>

#include "common/text_out.h"
#include "tuning/cost_checks.h"

namespace batchscope::cost_detail {

// A JSON value as given, cut short so a message never echoes a whole document.
std::string excerpt(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

// Reads an optional array of numbers `name` from `j`.
Expected<std::vector<double>> number_array(const nlohmann::json& j, const char* name,
                                           const std::string& prefix) {
  std::vector<double> out;
  const auto it = j.find(name);
  if (it == j.end()) return out;
  if (!it->is_array()) {
    return invalid_argument(prefix + name + " = " + excerpt(*it) + " must be an array");
  }
  out.reserve(it->size());  // bounded by the document, already in memory
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& v = (*it)[i];
    if (!v.is_number()) {
      return invalid_argument(prefix + name + "[" + std::to_string(i) + "] = " + excerpt(v) +
                              " must be a number");
    }
    out.push_back(v.get<double>());
  }
  return out;
}

// Reads an optional count `name` from `j` (0 where absent), at most 1e15.
Expected<uint64_t> optional_count(const nlohmann::json& j, const char* name,
                                  const std::string& prefix) {
  const auto it = j.find(name);
  if (it == j.end()) return uint64_t{0};
  if (!it->is_number_unsigned() || it->get<uint64_t>() > uint64_t{1'000'000'000'000'000}) {
    return invalid_argument(prefix + name + " = " + excerpt(*it) +
                            " must be a whole number from 0 to 1e15");
  }
  return it->get<uint64_t>();
}

// Reads the optional "send_lag": {"base_us_quantiles": [...], "stalls":
// [{"per_s": r, "us_quantiles": [...]}, ...]} (stalls indexed by busy lanes).
Expected<SendLagModel> send_lag_from_json(const nlohmann::json& j, const std::string& prefix) {
  SendLagModel out;
  const auto it = j.find("send_lag");
  if (it == j.end()) return out;
  const std::string at = prefix + "send_lag";
  if (!it->is_object()) return invalid_argument(at + " = " + excerpt(*it) + " must be an object");
  Expected<std::vector<double>> base = number_array(*it, "base_us_quantiles", at + ".");
  if (!base) return base.error();
  out.base_us = std::move(*base);
  for (const char* name : {"stalls", "stalls_waiting"}) {
    const auto st = it->find(name);
    if (st == it->end()) continue;
    if (!st->is_array()) {
      return invalid_argument(at + "." + name + " = " + excerpt(*st) + " must be an array");
    }
    std::vector<SendLagModel::Stalls>& into =
        std::string(name) == "stalls" ? out.by_busy : out.waiting;
    for (size_t k = 0; k < st->size(); ++k) {
      const nlohmann::json& e = (*st)[k];
      const std::string where = at + "." + name + "[" + std::to_string(k) + "]";
      if (!e.is_object())
        return invalid_argument(where + " = " + excerpt(e) + " must be an object");
      SendLagModel::Stalls stalls;
      if (const auto r = e.find("per_s"); r != e.end()) {
        if (!r->is_number()) {
          return invalid_argument(where + ".per_s = " + excerpt(*r) + " must be a number");
        }
        stalls.per_s = r->get<double>();
      }
      Expected<std::vector<double>> us = number_array(e, "us_quantiles", where + ".");
      if (!us) return us.error();
      stalls.us = std::move(*us);
      into.push_back(std::move(stalls));
    }
  }
  if (Status s = cost_detail::check_send_lag(out, prefix); !s) return s.error();
  return out;
}

void append_array(std::string& out, const char* name, const std::vector<double>& v) {
  if (v.empty()) return;
  out += ",\"";
  out += name;
  out += "\":[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    append_json_number(out, v[i]);
  }
  out += ']';
}

// Reads the optional "preprocess": {"lane_us_quantiles": [...], "pool":
// [{"busy": k, "us_quantiles": [...]}, ...]} (preprocess_cost.h).
Expected<PreprocessCost> preprocess_from_json(const nlohmann::json& j, const std::string& prefix) {
  PreprocessCost c;
  const auto it = j.find("preprocess");
  if (it == j.end()) return c;
  const std::string at = prefix + "preprocess";
  if (!it->is_object()) return invalid_argument(at + " = " + excerpt(*it) + " must be an object");
  Expected<std::vector<double>> lane = number_array(*it, "lane_us_quantiles", at + ".");
  if (!lane) return lane.error();
  c.lane_us = std::move(*lane);
  Expected<uint64_t> lane_n = optional_count(*it, "lane_requests", at + ".");
  if (!lane_n) return lane_n.error();
  c.lane_requests = *lane_n;
  if (const auto p = it->find("pool"); p != it->end()) {
    if (!p->is_array())
      return invalid_argument(at + ".pool = " + excerpt(*p) + " must be an array");
    for (size_t i = 0; i < p->size(); ++i) {
      const nlohmann::json& e = (*p)[i];
      const std::string where = at + ".pool[" + std::to_string(i) + "]";
      const auto busy = e.is_object() ? e.find("busy") : e.end();
      if (busy == e.end()) return invalid_argument(where + ".busy is missing");
      if (!busy->is_number_unsigned() || busy->get<uint64_t>() > kMaxCostLanes) {
        return invalid_argument(where + ".busy = " + excerpt(*busy) +
                                " must be a whole number from 1 to " +
                                std::to_string(kMaxCostLanes));
      }
      Expected<std::vector<double>> us = number_array(e, "us_quantiles", where + ".");
      if (!us) return us.error();
      Expected<uint64_t> n = optional_count(e, "requests", where + ".");
      if (!n) return n.error();
      c.pool.push_back({static_cast<uint32_t>(busy->get<uint64_t>()), std::move(*us), *n});
    }
  }
  if (Status s = c.validate(prefix); !s) return s.error();
  return c;
}

void append_preprocess(std::string& out, const PreprocessCost& c) {
  if (c.empty()) return;
  std::string members;  // each led by a comma
  append_array(members, "lane_us_quantiles", c.lane_us);
  if (c.lane_requests > 0) members += ",\"lane_requests\":" + std::to_string(c.lane_requests);
  if (!c.pool.empty()) {
    members += ",\"pool\":[";
    for (size_t i = 0; i < c.pool.size(); ++i) {
      members += i ? ",{\"busy\":" : "{\"busy\":";
      members += std::to_string(c.pool[i].busy);
      append_array(members, "us_quantiles", c.pool[i].us);
      if (c.pool[i].requests > 0) members += ",\"requests\":" + std::to_string(c.pool[i].requests);
      members += '}';
    }
    members += ']';
  }
  out += ",\"preprocess\":{" + members.substr(1) + '}';
}

void append_send_lag(std::string& out, const SendLagModel& lag) {
  if (lag.empty()) return;
  out += ",\"send_lag\":{\"base_us_quantiles\":[";
  for (size_t i = 0; i < lag.base_us.size(); ++i) {
    if (i) out += ',';
    append_json_number(out, lag.base_us[i]);
  }
  out += ']';
  for (const auto& [name, v] :
       {std::pair{"stalls", &lag.by_busy}, std::pair{"stalls_waiting", &lag.waiting}}) {
    out += ",\"";
    out += name;
    out += "\":[";
    for (size_t k = 0; k < v->size(); ++k) {
      out += k ? ",{\"per_s\":" : "{\"per_s\":";
      append_json_number(out, (*v)[k].per_s);
      append_array(out, "us_quantiles", (*v)[k].us);
      out += '}';
    }
    out += ']';
  }
  out += '}';
}

}  // namespace batchscope::cost_detail

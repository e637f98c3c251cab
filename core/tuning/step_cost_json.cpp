// SPDX-License-Identifier: GPL-3.0-or-later
// A step cost as JSON, and back (tuning/step_cost.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "tuning/step_cost.h"

namespace batchscope {

std::string step_cost_json(const StepCost& c, const std::string& model, const std::string& device) {
  nlohmann::ordered_json j;
  j["format"] = "batchscope-cost";
  j["kind"] = "generation-steps";
  j["version"] = kStepCostVersion;
  j["model"] = model;
  j["device"] = device;
  j["lanes"] = c.lanes;
  j["steps"] = c.steps;
  j["decode_steps"] = c.decode_steps;
  j["step_us"] = c.step_us;
  j["token_us"] = c.token_us;
  j["context_us"] = c.context_us;
  j["prefill_token_us"] = c.prefill_token_us;
  j["between_us"] = c.between_us;
  char synthetic[64];
  std::snprintf(synthetic, sizeof synthetic, "%.1f,%.3f", c.step_us, c.token_us);
  j["synthetic_lm"] = synthetic;
  j["spread"] = nlohmann::json::array();
  for (const StepSpreadPoint& p : c.spread) j["spread"].push_back({{"q", p.q}, {"ratio", p.ratio}});
  j["spreads"] = nlohmann::json::array();
  for (const StepSpreadBucket& b : c.spreads) {
    nlohmann::ordered_json e;
    if (b.prefill) {
      e["prefill"] = true;
    } else {
      e["decodes_from"] = b.decodes_from;
      e["decodes_to"] = b.decodes_to;
    }
    e["steps"] = b.steps;
    e["spread"] = nlohmann::json::array();
    for (const StepSpreadPoint& p : b.spread)
      e["spread"].push_back({{"q", p.q}, {"ratio", p.ratio}});
    j["spreads"].push_back(e);
  }
  j["by_decodes"] = nlohmann::json::array();
  for (const StepCostRow& r : c.rows) {
    j["by_decodes"].push_back({{"decodes_from", r.decodes_from},
                               {"decodes_to", r.decodes_to},
                               {"steps", r.steps},
                               {"median_us", r.median_us}});
  }
  j["grid"] = nlohmann::json::array();
  for (const StepGridPoint& g : c.grid) {
    j["grid"].push_back(
        {{"decodes", g.decodes}, {"position", g.position}, {"prefill", g.prefill}, {"us", g.us}});
  }
  j["by_lanes"] = nlohmann::json::array();
  for (const StepLaneFit& l : c.by_lanes) {
    j["by_lanes"].push_back({{"lanes", l.lanes},
                             {"steps", l.steps},
                             {"step_us", l.step_us},
                             {"token_us", l.token_us},
                             {"context_us", l.context_us},
                             {"prefill_token_us", l.prefill_token_us},
                             {"between_us", l.between_us}});
  }
  if (!c.evidence.empty()) {
    j["evidence"] = nlohmann::json::parse("[" + evidence_json(c.evidence) + "]");
  }
  return j.dump(2) + "\n";
}

namespace {

// The spread as read: q rising within (0, 1), ratios finite, above 0 and
// rising; anything else leaves the cost without one.
std::vector<StepSpreadPoint> read_spread(const nlohmann::json& j) {
  std::vector<StepSpreadPoint> out;
  const auto it = j.find("spread");
  if (it == j.end() || !it->is_array() || it->size() > 64) return out;
  for (const auto& p : *it) {
    const auto q = p.is_object() ? p.find("q") : p.end();
    const auto r = p.is_object() ? p.find("ratio") : p.end();
    if (q == p.end() || r == p.end() || !q->is_number() || !r->is_number()) return {};
    const StepSpreadPoint s{q->get<double>(), r->get<double>()};
    if (!(s.q > 0 && s.q < 1 && std::isfinite(s.ratio) && s.ratio > 0 && s.ratio < 1e3)) return {};
    if (!out.empty() && (s.q <= out.back().q || s.ratio < out.back().ratio)) return {};
    out.push_back(s);
  }
  return out;
}

// The spread buckets (version 6): at most 64, the decode ones rising and
// apart, at most one with a prefill, each with a valid spread.
Expected<std::vector<StepSpreadBucket>> read_spreads(const nlohmann::json& j) {
  std::vector<StepSpreadBucket> out;
  const auto it = j.find("spreads");
  if (it == j.end()) return out;
  if (!it->is_array() || it->size() > 64) {
    return invalid_argument("\"spreads\" must be a list of at most 64 buckets, not " +
                            it->dump().substr(0, 60));
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& p = (*it)[i];
    StepSpreadBucket b;
    bool ok = p.is_object();
    if (ok) {
      const auto pre = p.find("prefill"), from = p.find("decodes_from"), to = p.find("decodes_to"),
                 steps = p.find("steps");
      b.prefill = pre != p.end() && pre->is_boolean() && pre->get<bool>();
      ok = (pre == p.end() || pre->is_boolean()) &&
           (steps == p.end() || steps->is_number_unsigned());
      if (ok && !b.prefill) {
        ok = from != p.end() && to != p.end() && from->is_number_unsigned() &&
             to->is_number_unsigned() && from->get<uint64_t>() >= 1 &&
             from->get<uint64_t>() <= to->get<uint64_t>() && to->get<uint64_t>() < (1u << 24);
        if (ok) {
          b.decodes_from = static_cast<uint32_t>(from->get<uint64_t>());
          b.decodes_to = static_cast<uint32_t>(to->get<uint64_t>());
        }
      }
      if (ok && steps != p.end()) b.steps = steps->get<uint64_t>();
      b.spread = read_spread(p);
      ok = ok && !b.spread.empty();
      for (const StepSpreadBucket& k : out) {
        ok = ok && !(b.prefill && k.prefill) &&
             (b.prefill || k.prefill || k.decodes_to < b.decodes_from);
      }
    }
    if (!ok) {
      return invalid_argument("\"spreads\" entry " + std::to_string(i) +
                              " must be {\"decodes_from\", \"decodes_to\"} rising and apart, or "
                              "{\"prefill\": true} once, with \"steps\" and a \"spread\" of "
                              "rising quantiles, not " +
                              p.dump().substr(0, 80));
    }
    out.push_back(std::move(b));
  }
  return out;
}

// A profile's grid: at most 4096 points, each of counts and a time from 0
// to 10 s.
Expected<std::vector<StepGridPoint>> read_grid(const nlohmann::json& j) {
  std::vector<StepGridPoint> out;
  const auto it = j.find("grid");
  if (it == j.end()) return out;
  if (!it->is_array() || it->size() > 4096) {
    return invalid_argument("\"grid\" must be a list of at most 4096 points, not " +
                            it->dump().substr(0, 60));
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& p = (*it)[i];
    auto count = [&](const char* key, uint32_t& v) {
      const auto f = p.is_object() ? p.find(key) : p.end();
      if (f == p.end() || !f->is_number_unsigned() || f->get<uint64_t>() > (1u << 24)) return false;
      v = static_cast<uint32_t>(f->get<uint64_t>());
      return true;
    };
    StepGridPoint g;
    const auto us = p.is_object() ? p.find("us") : p.end();
    if (!count("decodes", g.decodes) || !count("position", g.position) ||
        !count("prefill", g.prefill) || us == p.end() || !us->is_number() ||
        !std::isfinite(us->get<double>()) || us->get<double>() < 0 || us->get<double>() >= 1e7) {
      return invalid_argument("\"grid\" entry " + std::to_string(i) +
                              " must be {\"decodes\", \"position\", \"prefill\", \"us\"} with "
                              "counts and a time from 0 to 10 s, not " +
                              p.dump().substr(0, 80));
    }
    g.us = us->get<double>();
    out.push_back(g);
  }
  return out;
}

// The lane count and the other lanes' scales (version 5).
Status read_lanes(const nlohmann::json& j, StepCost& c) {
  auto lanes_of = [](const nlohmann::json& v) -> std::optional<uint32_t> {
    if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > 64) return {};
    return static_cast<uint32_t>(v.get<uint64_t>());
  };
  if (const auto it = j.find("lanes"); it != j.end()) {
    const auto n = lanes_of(*it);
    if (!n) return invalid_argument("\"lanes\" must be 1..64, not " + it->dump().substr(0, 60));
    c.lanes = *n;
  }
  const auto it = j.find("by_lanes");
  if (it == j.end()) return Status::Ok();
  if (!it->is_array() || it->size() > 64) {
    return invalid_argument("\"by_lanes\" must be a list of at most 64 fits, not " +
                            it->dump().substr(0, 60));
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& p = (*it)[i];
    const auto lanes = p.is_object() ? p.find("lanes") : p.end();
    const auto steps = p.is_object() ? p.find("steps") : p.end();
    // 0: absent or out of range (lanes_of() takes 1..64).
    const uint32_t n = lanes != p.end() ? lanes_of(*lanes).value_or(0) : 0;
    StepLaneFit f;
    bool ok = n != 0 && n != c.lanes && (c.by_lanes.empty() || c.by_lanes.back().lanes < n) &&
              (steps == p.end() || steps->is_number_unsigned());
    for (auto [key, field] : {std::pair{"step_us", &StepLaneFit::step_us},
                              std::pair{"token_us", &StepLaneFit::token_us},
                              std::pair{"context_us", &StepLaneFit::context_us},
                              std::pair{"prefill_token_us", &StepLaneFit::prefill_token_us},
                              std::pair{"between_us", &StepLaneFit::between_us}}) {
      const auto v = ok ? p.find(key) : p.end();
      ok = ok && v != p.end() && v->is_number() && std::isfinite(v->get<double>()) &&
           v->get<double>() >= 0 && v->get<double>() < 1e7;
      if (ok) f.*field = v->get<double>();
    }
    if (!ok) {
      return invalid_argument("\"by_lanes\" entry " + std::to_string(i) +
                              " must be {\"lanes\": 1..64 rising and not the fit's own, "
                              "\"steps\", and step_us, token_us, context_us, prefill_token_us "
                              "and between_us from 0 to 10 s}, not " +
                              p.dump().substr(0, 80));
    }
    f.lanes = n;
    f.steps = steps != p.end() ? steps->get<uint64_t>() : 0;
    c.by_lanes.push_back(f);
  }
  return Status::Ok();
}

}  // namespace

Expected<StepCost> parse_step_cost_json(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return invalid_argument("a step cost file is JSON; this is not");
  if (!j.is_object()) return invalid_argument("a step cost file is a JSON object");
  int version = 1;
  if (const auto v = j.find("version"); v != j.end()) {
    if (!v->is_number_integer() || v->get<int64_t>() < 1) {
      return invalid_argument("\"version\" must be a whole number from 1, not " +
                              v->dump().substr(0, 60));
    }
    if (v->get<int64_t>() > kStepCostVersion) {
      return invalid_argument("the step cost has version " + v->dump() +
                              "; this batchscope reads versions up to " +
                              std::to_string(kStepCostVersion) + " (a newer batchscope wrote it)");
    }
    version = static_cast<int>(v->get<int64_t>());
  }
  StepCost c;
  auto number = [&](const char* key, double& out, bool required) -> Status {
    const auto it = j.find(key);
    if (it == j.end()) {
      if (!required) return Status::Ok();
      return invalid_argument(std::string("the step cost has no \"") + key + "\"");
    }
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 ||
        it->get<double>() >= 1e7) {
      return invalid_argument(std::string("\"") + key +
                              "\" must be a number of microseconds from 0 "
                              "to 10 s, not " +
                              it->dump().substr(0, 60));
    }
    out = it->get<double>();
    return Status::Ok();
  };
  for (auto [key, field] :
       {std::pair{"step_us", &StepCost::step_us}, std::pair{"token_us", &StepCost::token_us},
        std::pair{"prefill_token_us", &StepCost::prefill_token_us}}) {
    if (Status s = number(key, c.*field, true); !s) return s.error();
  }
  if (version >= 4) {
    for (auto [key, field] : {std::pair{"context_us", &StepCost::context_us},
                              std::pair{"between_us", &StepCost::between_us}}) {
      if (Status s = number(key, c.*field, false); !s) return s.error();
    }
    c.spread = read_spread(j);
    auto grid = read_grid(j);
    if (!grid) return grid.error();
    c.grid = std::move(*grid);
  }
  if (version >= 5) {
    if (Status s = read_lanes(j, c); !s) return s.error();
  }
  if (version >= 6) {
    auto spreads = read_spreads(j);
    if (!spreads) return spreads.error();
    c.spreads = std::move(*spreads);
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
          !from->is_number_unsigned() || !to->is_number_unsigned() || !n->is_number_unsigned() ||
          !us->is_number()) {
        continue;
      }
      row.decodes_from =
          static_cast<uint32_t>(std::min<uint64_t>(from->get<uint64_t>(), UINT32_MAX));
      row.decodes_to = static_cast<uint32_t>(std::min<uint64_t>(to->get<uint64_t>(), UINT32_MAX));
      row.steps = n->get<uint64_t>();
      row.median_us = us->get<double>();
      c.rows.push_back(row);
    }
  }
  if (const auto ev = j.find("evidence"); ev != j.end()) {
    auto evidence = evidence_from_json(ev->dump(), "");
    if (!evidence) return evidence.error();
    c.evidence = std::move(*evidence);
  }
  return c;
}

}  // namespace batchscope

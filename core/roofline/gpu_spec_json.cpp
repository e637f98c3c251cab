// SPDX-License-Identifier: GPL-3.0-or-later
// --gpu-spec FILE: a GPU's figures as JSON, read and written.
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

#include "common/file_text.h"
#include "common/text_out.h"
#include "roofline/gpu_table.h"

namespace batchscope {

namespace {

constexpr uintmax_t kMaxSpecBytes = 1u << 20;

}  // namespace

Expected<GpuSpec> parse_gpu_spec(std::string_view json, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(where + " is not JSON: " + e.what());
  }
  if (!j.is_object()) {
    return invalid_argument(where + " must be a JSON object, not " + j.dump().substr(0, 80));
  }
  GpuSpec g;
  auto text = [&](const char* key, std::string& out, bool required) -> Status {
    const auto it = j.find(key);
    if (it == j.end() && !required) return Status();
    if (it == j.end() || !it->is_string() || it->get<std::string>().empty() ||
        it->get<std::string>().size() > 1000) {
      return invalid_argument(
          where + ": \"" + key + "\" must be a text of 1 to 1000 characters, " +
          (it == j.end() ? std::string("and is missing") : "not " + it->dump().substr(0, 80)));
    }
    out = it->get<std::string>();
    return Status();
  };
  auto number = [&](const char* key, double& out, bool required, double lo) -> Status {
    const auto it = j.find(key);
    if (it == j.end() && !required) return Status();
    if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()) ||
        it->get<double>() < lo || it->get<double>() > 1e7) {
      std::string msg = where + ": \"" + key + "\" must be a number ";
      msg += lo > 0 ? "above 0" : "from 0";
      msg += " to 1e7, ";
      msg += it == j.end() ? "and is missing" : "not " + it->dump().substr(0, 80);
      return invalid_argument(msg);
    }
    out = it->get<double>();
    return Status();
  };
  for (const Status& s :
       {text("name", g.name, true), text("title", g.title, false), text("family", g.family, true),
        text("interconnect", g.interconnect, false), text("source", g.source, true),
        number("memory_gb", g.memory_gb, true, 1e-9),
        number("bandwidth_gbs", g.bandwidth_gbs, true, 1e-9),
        number("tflops_bf16", g.tflops_bf16, true, 1e-9),
        number("tflops_fp16", g.tflops_fp16, true, 1e-9),
        number("tflops_fp8", g.tflops_fp8, false, 0),
        number("interconnect_gbs", g.interconnect_gbs, false, 1e-9)}) {
    if (!s.ok()) return s.error();
  }
  if (const auto k = j.find("constants"); k != j.end()) {
    if (!k->is_object()) {
      return invalid_argument(where + ": \"constants\" must be an object, not " +
                              k->dump().substr(0, 80));
    }
    RooflineConstants c;
    struct Term {
      const char* key;
      double RooflineConstants::*field;
      double lo, hi;
    };
    for (const Term& t : {Term{"compute_efficiency", &RooflineConstants::compute_efficiency, 0, 1},
                          Term{"memory_efficiency", &RooflineConstants::memory_efficiency, 0, 1},
                          Term{"overhead_us", &RooflineConstants::overhead_us, 0, 1e6},
                          Term{"allreduce_us", &RooflineConstants::allreduce_us, 0, 1e6},
                          Term{"request_us", &RooflineConstants::request_us, 0, 1e6}}) {
      const auto v = k->find(t.key);
      if (v == k->end() && t.field == &RooflineConstants::request_us) continue;
      const bool efficiency = t.hi == 1;
      if (v == k->end() || !v->is_number() || !std::isfinite(v->get<double>()) ||
          v->get<double>() > t.hi || v->get<double>() < t.lo ||
          (efficiency && v->get<double>() == 0)) {
        return invalid_argument(
            where + ": \"constants\"." + t.key + " must be a number " +
            (efficiency ? "in (0, 1]" : "from 0 to 1e6") + ", " +
            (v == k->end() ? std::string("and is missing") : "not " + v->dump().substr(0, 80)));
      }
      c.*t.field = v->get<double>();
    }
    c.fitted_on = "given by " + where;
    if (const auto f = k->find("fitted_on"); f != k->end() && f->is_string()) {
      c.fitted_on = f->get<std::string>().substr(0, 1000);
    }
    g.constants = c;
  }
  if (g.family != "ampere" && g.family != "ada" && g.family != "hopper" &&
      g.family != "blackwell") {
    return invalid_argument(
        where + ": \"family\" must be ampere, ada, hopper or blackwell, not \"" + g.family + "\"");
  }
  if (g.title.empty()) g.title = g.name;
  return g;
}

Expected<GpuSpec> read_gpu_spec(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return invalid_argument("--gpu-spec: cannot read " + path);
  if (size > kMaxSpecBytes) {
    return invalid_argument("--gpu-spec: " + path + " is " + std::to_string(size) +
                            " bytes; a GPU's figures are at most " + std::to_string(kMaxSpecBytes) +
                            " bytes");
  }
  auto text = read_file_text(path);
  if (!text) return text.error();
  return parse_gpu_spec(*text, "--gpu-spec " + path);
}

std::string gpu_spec_json(const GpuSpec& g) {
  nlohmann::json j = {{"name", g.name},
                      {"title", g.title},
                      {"family", g.family},
                      {"memory_gb", g.memory_gb},
                      {"bandwidth_gbs", g.bandwidth_gbs},
                      {"tflops_bf16", g.tflops_bf16},
                      {"tflops_fp16", g.tflops_fp16},
                      {"tflops_fp8", g.tflops_fp8},
                      {"source", g.source}};
  if (g.interconnect_gbs > 0) j["interconnect_gbs"] = g.interconnect_gbs;
  if (!g.interconnect.empty()) j["interconnect"] = g.interconnect;
  if (g.constants) {
    j["constants"] = {{"compute_efficiency", g.constants->compute_efficiency},
                      {"memory_efficiency", g.constants->memory_efficiency},
                      {"overhead_us", g.constants->overhead_us},
                      {"allreduce_us", g.constants->allreduce_us},
                      {"request_us", g.constants->request_us},
                      {"fitted_on", g.constants->fitted_on}};
  }
  return j.dump(2);
}

}  // namespace batchscope

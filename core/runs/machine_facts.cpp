// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/machine_facts.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "common/allocator.h"

namespace batchscope {
namespace {

// The text after "KEY:" on the first line of `path` that starts with KEY.
std::string field_of(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto from = line.find_first_not_of(" \t", colon + 1);
    return from == std::string::npos ? std::string() : line.substr(from);
  }
  return {};
}

// The NVIDIA kernel module's version, from "NVRM version: NVIDIA UNIX x86_64
// Kernel Module  550.54.15  Tue Mar ..."; empty without the driver.
std::string nvidia_driver(const std::string& proc) {
  const std::string text = field_of(proc + "/driver/nvidia/version", "NVRM version");
  const auto at = text.find("Kernel Module");
  if (at == std::string::npos) return text;
  std::string rest = text.substr(at + 13);
  const auto from = rest.find_first_not_of(' ');
  if (from == std::string::npos) return text;
  rest = rest.substr(from);
  return rest.substr(0, rest.find(' '));
}

}  // namespace

std::string machine_json(const std::string& proc) {
  nlohmann::json j;
  const std::string cpu = field_of(proc + "/cpuinfo", "model name");
  j["cpu"] = cpu.empty() ? "unknown" : cpu;
  j["cores"] = std::thread::hardware_concurrency();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) j["host"] = host;
  utsname u{};
  if (uname(&u) == 0) j["kernel"] = std::string(u.sysname) + " " + u.release;
  j["allocator"] = allocator_name();
  // GPUs the NVIDIA driver sees, and its version: what a CUDA run ran on.
  if (const std::string driver = nvidia_driver(proc); !driver.empty()) {
    j["nvidia_driver"] = driver;
    std::vector<std::string> gpus;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(proc + "/driver/nvidia/gpus", ec)) {
      const std::string model = field_of(e.path().string() + "/information", "Model");
      if (!model.empty()) gpus.push_back(model + " (" + e.path().filename().string() + ")");
    }
    std::sort(gpus.begin(), gpus.end());
    if (!gpus.empty()) j["gpus"] = gpus;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string with_measured_on(std::string json_object, const std::string& device,
                             const std::string& proc) {
  const auto trim = [&json_object] {
    while (!json_object.empty() && std::isspace(static_cast<unsigned char>(json_object.back())))
      json_object.pop_back();
  };
  trim();
  if (json_object.empty() || json_object.back() != '}') return json_object;
  json_object.pop_back();
  trim();
  if (!json_object.empty() && json_object.back() != '{') json_object += ',';
  json_object += "\"measured_on\":{\"device\":";
  json_object +=
      nlohmann::json(device).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  json_object += ",\"machine\":" + machine_json(proc) + "}}";
  return json_object;
}

}  // namespace batchscope

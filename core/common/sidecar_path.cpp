// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/sidecar_path.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace batchscope {

std::string sidecar_beside(const std::string& model_path) {
  const auto dot = model_path.rfind('.');
  const auto slash = model_path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return model_path + ".json";
  }
  return model_path.substr(0, dot) + ".json";
}

std::string sidecar_in_config(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::string base;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x == '/') {
    base = x;
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    base = std::string(h) + "/.config";
  } else {
    return {};
  }
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(model_path, ec), ec);
  if (ec) abs = fs::absolute(model_path, ec);
  if (ec) return {};
  return (fs::path(base) / "batchscope" / "sidecars" /
          fs::path(sidecar_beside(abs.string())).relative_path())
      .string();
}

std::string sidecar_path(const std::string& model_path) {
  std::error_code ec;
  std::string beside = sidecar_beside(model_path);
  if (std::filesystem::exists(beside, ec)) return beside;
  std::string config = sidecar_in_config(model_path);
  if (!config.empty() && std::filesystem::exists(config, ec)) return config;
  return beside;
}

}  // namespace batchscope

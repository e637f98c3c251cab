// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/model_paths.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace batchscope {
namespace fs = std::filesystem;

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string models_dir() {
  std::error_code ec;
  if (const char* env = std::getenv("BATCHSCOPE_MODELS"); env && *env) {
    return fs::is_directory(env, ec) ? fs::canonical(env, ec).string() : std::string();
  }
  if (const std::string exe = executable_dir(); !exe.empty()) {
    const fs::path shipped = fs::path(exe).parent_path() / "share" / "batchscope" / "models";
    if (fs::is_directory(shipped, ec)) return fs::canonical(shipped, ec).string();
  }
  if (fs::is_directory("models", ec)) return fs::canonical("models", ec).string();
  return {};
}

std::string find_model(const std::string& value) {
  std::error_code ec;
  if (value.empty() || fs::exists(value, ec)) return value;
  const fs::path given(value);
  if (given.is_absolute()) return value;
  const std::string dir = models_dir();
  if (dir.empty()) return value;
  fs::path rest = given.lexically_normal();
  if (auto it = rest.begin(); it != rest.end() && *it == "models") {
    fs::path tail;
    for (++it; it != rest.end(); ++it) tail /= *it;
    rest = tail;
  }
  std::vector<fs::path> tries = {fs::path(dir) / rest, fs::path(dir) / given.filename()};
  if (!given.has_extension() && !given.has_parent_path())
    tries.push_back(fs::path(dir) / (value + ".pt"));
  for (const fs::path& p : tries) {
    if (!p.empty() && fs::is_regular_file(p, ec)) return p.string();
  }
  return value;
}

}  // namespace batchscope

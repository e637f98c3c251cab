// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/file_text.h"

#include <filesystem>
#include <fstream>
#include <iterator>

namespace batchscope {

Expected<std::string> read_file_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return invalid_argument("cannot read " + path + " (a folder)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("cannot read " + path);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return invalid_argument("cannot read " + path);
  return text;
}

}  // namespace batchscope

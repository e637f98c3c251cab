// SPDX-License-Identifier: GPL-3.0-or-later
// The main of a fuzz target in builds without libFuzzer: runs
// LLVMFuzzerTestOneInput once on every file in the folders (or files) given,
// so the seed corpus and every saved crash replay as an ordinary test under
// gcc, ASan and UBSan alike. A missing folder replays nothing: a target has a
// regressions folder only once something was found.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    std::error_code ec;
    if (fs::is_regular_file(arg, ec)) {
      files.push_back(arg);
    } else if (fs::is_directory(arg, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(arg)) {
        // Hidden files (.gitkeep) are not inputs.
        if (e.is_regular_file() && e.path().filename().string().front() != '.') {
          files.push_back(e.path());
        }
      }
    } else {
      std::fprintf(stderr, "replay: %s does not exist; nothing to replay there\n", argv[i]);
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", f.c_str());
      return 2;
    }
    // An exact-size copy, as libFuzzer gives, so that ASan sees a read past the end.
    auto data = std::make_unique<uint8_t[]>(bytes.size());
    std::copy(bytes.begin(), bytes.end(), data.get());
    // Named first: if the input crashes the process, the name is the last line.
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", f.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(data.get(), bytes.size());
  }
  std::printf("replay: %zu inputs, no failure\n", files.size());
  return 0;
}

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where the suites find the shipped TorchScript models (models/) and the
// torch suites' own data files (tests/torch/data/).

#include <string>

namespace batchscope::test {

inline const std::string kModels = std::string(BATCHSCOPE_SOURCE_DIR) + "/models/";
inline const std::string kData = std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/torch/data/";

}  // namespace batchscope::test

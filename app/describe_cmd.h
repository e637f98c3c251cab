// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope describe`: writes the JSON sidecar of a TorchScript model that
// has none, from its forward arguments and one forward pass on zeros.

#include <string>
#include <vector>

namespace batchscope {

int run_describe(const std::vector<std::string>& args);
std::string describe_help();

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope serve`: the engine and a model behind the HTTP listener, headless.

#include <string>
#include <vector>

namespace batchscope {

int run_serve(int argc, char** argv, const std::vector<std::string>& args);
std::string serve_help();

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope demo`: serves Poisson traffic through the engine and a synthetic
// model, prints a one-line summary per second, retunes the options live half
// way through, and checks that every admitted request was answered once.

#include <string>
#include <vector>

namespace batchscope {

int run_demo(const std::vector<std::string>& args);
std::string demo_help();

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope gui`: the workbench window over an engine and a model.

#include <string>
#include <vector>

namespace batchscope {

int run_gui(int argc, char** argv, const std::vector<std::string>& args);
std::string gui_help();
// True when a window can be shown (an X or Wayland display, or a Qt platform set).
bool display_available();

}  // namespace batchscope

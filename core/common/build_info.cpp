// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/build_info.h"

#include <batchscope_commit.h>  // build/generated/, written at every build by cmake/commit.cmake

namespace batchscope {

const char* build_version() { return BATCHSCOPE_VERSION; }

const char* build_commit() { return BATCHSCOPE_COMMIT; }

const char* build_licence() { return "GPL-3.0-or-later"; }

std::string build_label() {
  std::string label = build_version();
  if (*build_commit() != '\0') label += std::string(" (git ") + build_commit() + ")";
  return label;
}

std::string licence_notice() {
  return std::string("Licence: ") + build_licence() +
         " (GNU GPL version 3 or later, https://www.gnu.org/licenses/gpl-3.0.html).\n"
         "This is free software: you are free to change and redistribute it.\n"
         "There is NO WARRANTY, to the extent permitted by law.\n";
}

}  // namespace batchscope

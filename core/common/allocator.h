// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Which allocator serves this process's malloc and operator new.

#include <string>

namespace batchscope {

// "jemalloc 5.3.0" when jemalloc is in use (linked in, or
// preloaded), otherwise "system malloc".
std::string allocator_name();

}  // namespace batchscope

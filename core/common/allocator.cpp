// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/allocator.h"

#include <dlfcn.h>

#include <cstddef>

namespace batchscope {

std::string allocator_name() {
  // jemalloc's control interface; looked up at run time so that a preloaded
  // jemalloc is seen too.
  using Mallctl = int (*)(const char*, void*, size_t*, void*, size_t);
  auto mallctl = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
  if (mallctl == nullptr) return "system malloc";
  const char* version = nullptr;
  size_t size = sizeof(version);
  if (mallctl("version", &version, &size, nullptr, 0) != 0 || version == nullptr) {
    return "jemalloc";
  }
  const std::string v = version;  // "5.3.0-0-g<commit>": the release is enough
  return "jemalloc " + v.substr(0, v.find('-'));
}

}  // namespace batchscope

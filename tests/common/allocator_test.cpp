// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/allocator.h"

#include <gtest/gtest.h>

namespace batchscope {
namespace {

TEST(Allocator, NameSaysWhichAllocatorServesThisProcess) {
  const std::string name = allocator_name();
#ifdef BATCHSCOPE_JEMALLOC
  EXPECT_EQ(name.rfind("jemalloc 5", 0), 0u) << name;
#else
  EXPECT_EQ(name, "system malloc");
#endif
}

}  // namespace
}  // namespace batchscope

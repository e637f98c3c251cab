// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>

#include "torch/torch_info.h"

namespace batchscope {
namespace {

TEST(TorchInfo, ReportsVersionAndThreads) {
  const TorchInfo t = torch_info();
  // "1.13.1" from Debian, "2.11.0" from a PyTorch wheel: MAJOR.MINOR...
  ASSERT_FALSE(t.torch_version.empty());
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(t.torch_version[0]))) << t.torch_version;
  EXPECT_NE(t.torch_version.find('.'), std::string::npos) << t.torch_version;
  EXPECT_GE(t.intra_op_threads, 1);
  EXPECT_GE(t.inter_op_threads, 1);
}

// scripts/setup installs OpenBLAS; without it batching gains little and every
// figure the workbench shows would mislead. This fails if it went missing.
TEST(TorchInfo, TheBlasInUseIsOpenBlas) {
  const TorchInfo t = torch_info();
  ASSERT_FALSE(t.blas_library.empty()) << "no library provides sgemm_";
  EXPECT_TRUE(std::filesystem::exists(t.blas_library)) << t.blas_library;
  EXPECT_NE(t.blas_library.find("openblas"), std::string::npos) << t.blas_library;
  EXPECT_TRUE(t.blas_is_fast) << t.blas_name;
}

}  // namespace
}  // namespace batchscope

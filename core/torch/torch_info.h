// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the LibTorch runtime in this process is built on: its version, the
// BLAS library that actually serves matrix products, and its thread counts.
// Batching pays off only with a fast BLAS (Debian's reference BLAS gains ~1.3x
// at batch 32 where OpenBLAS gains ~16x), so this is shown to the user.
// Thread-safety: thread-safe.

#include <string>

namespace batchscope {

struct TorchInfo {
  std::string torch_version;  // "1.13.0"
  std::string blas_library;   // resolved path of the library providing sgemm_
  std::string blas_name;      // "OpenBLAS (pthread)", "reference BLAS", ...
  bool blas_is_fast = false;  // an optimised BLAS (OpenBLAS, BLIS, MKL)
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  int blas_threads = 0;  // OpenBLAS's pool size on the calling thread; 0 if not OpenBLAS
};

TorchInfo torch_info();

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// Includes torch before anything else: LibTorch uses the identifier `slots`,
// which Qt defines as a macro (this target never includes Qt).
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include "torch/torch_info.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>

namespace batchscope {

namespace {

std::string resolved_library_of(const char* symbol) {
  void* p = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (!p || dladdr(p, &info) == 0 || !info.dli_fname) return {};
  char buf[PATH_MAX];
  // Debian selects the BLAS through a chain of alternatives symlinks.
  if (realpath(info.dli_fname, buf)) return buf;
  return info.dli_fname;
}

}  // namespace

TorchInfo torch_info() {
  TorchInfo t;
  t.torch_version = TORCH_VERSION;
  t.intra_op_threads = at::get_num_threads();
  t.inter_op_threads = at::get_num_interop_threads();
  t.blas_library = resolved_library_of("sgemm_");
  using GetFn = int (*)();
  if (auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"))) {
    t.blas_threads = get();
  }
  const std::string& lib = t.blas_library;
  auto has = [&](const char* s) { return lib.find(s) != std::string::npos; };
  if (lib.empty()) {
    t.blas_name = "none found (LibTorch uses its own kernels)";
  } else if (has("openblas")) {
    t.blas_name = has("pthread")  ? "OpenBLAS (pthread)"
                  : has("openmp") ? "OpenBLAS (OpenMP)"
                                  : "OpenBLAS";
    t.blas_is_fast = true;
  } else if (has("blis")) {
    t.blas_name = "BLIS";
    t.blas_is_fast = true;
  } else if (has("mkl")) {
    t.blas_name = "Intel MKL";
    t.blas_is_fast = true;
  } else if (has("libtorch") && at::hasMKL()) {
    // A PyTorch wheel links MKL into LibTorch itself.
    t.blas_name = "Intel MKL (inside LibTorch)";
    t.blas_is_fast = true;
  } else if (has("atlas")) {
    t.blas_name = "ATLAS";
    t.blas_is_fast = true;
  } else {
    t.blas_name = "reference BLAS (slow: install libopenblas0-pthread)";
  }
  return t;
}

}  // namespace batchscope

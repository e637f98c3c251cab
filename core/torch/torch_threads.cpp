// SPDX-License-Identifier: GPL-3.0-or-later
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include "torch/torch_threads.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <thread>

namespace batchscope {

namespace {

// OpenBLAS keeps its own thread pool beside LibTorch's; match it to the
// intra-op count so lanes x BLAS threads stay within the cores.
void set_blas_threads(int n) {
  using SetFn = void (*)(int);
  static auto fn = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (fn) fn(n);
}

}  // namespace

TorchThreadCounts torch_thread_counts(const TorchOptions& options) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  TorchThreadCounts c;
  c.intra_op = std::max(1, options.intra_op_threads);
  c.blas = options.blas_threads > 0 ? options.blas_threads
                                    : std::max(1, cores / std::max(1, options.lanes));
  return c;
}

void configure_torch_thread(const TorchThreadCounts& counts) {
  // LibTorch's OpenMP pool size is per calling thread: set it on each.
  thread_local int configured = -1;
  thread_local int configured_blas = -1;
  if (configured != counts.intra_op) {
    at::set_num_threads(counts.intra_op);
    configured = counts.intra_op;
  }
  if (configured_blas != counts.blas) {
    set_blas_threads(counts.blas);
    configured_blas = counts.blas;
  }
}

void set_inter_op_threads_once(int n) {
  static std::once_flag once;
  std::call_once(once, [n] {
    try {
      at::set_num_interop_threads(n);
    } catch (const std::exception&) {
      // Inter-op work has already begun in this process; its count stays.
    }
  });
}

std::string torch_error_message(const std::exception& e) {
  if (auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Thread settings shared by the TorchScript runners (TorchModel, TorchLm),
// and the text of a LibTorch exception.
//
// LibTorch's intra-op (OpenMP) pool size is a setting of each calling thread,
// and OpenBLAS keeps its own pool beside it. A runner applies its counts on
// every thread that runs it, so that lanes x threads stays within the cores;
// the applied counts are remembered per thread, so repeating them costs
// nothing. Inter-op threads are process-wide and settable once.
// Thread-safety: configure_torch_thread() changes the calling thread's
// LibTorch count (and OpenBLAS's process-wide one); set_inter_op_threads_once()
// may be called from any thread, and only the first call takes effect.

#include <exception>
#include <string>

#include "torch/torch_model.h"

namespace batchscope {

struct TorchThreadCounts {
  int intra_op = 1;  // LibTorch intra-op threads on each thread that runs a model
  int blas = 1;      // OpenBLAS threads
};

// The counts that `options` asks for, with its defaults filled in.
TorchThreadCounts torch_thread_counts(const TorchOptions& options);

// Applies `counts` to the calling thread (and OpenBLAS), once per change.
void configure_torch_thread(const TorchThreadCounts& counts);

// Sets LibTorch's inter-op threads if nothing in the process has yet; later
// calls, and a call after inter-op work began, keep the count in force.
void set_inter_op_threads_once(int n);

// A LibTorch error's message without its C++ backtrace; what() otherwise.
std::string torch_error_message(const std::exception& e);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A TorchScript model loaded through LibTorch, and the engine runner over it.
//
// Loading reads NAME.json beside NAME.pt, loads the module onto the device,
// checks the metadata against the module with a dry run, and warms up over
// the batch sizes it will see, so a loaded model is ready to serve at full
// speed. A batch is run by stacking each request's inputs into one tensor per
// input (one copy per request, into pinned host memory when the device is a
// GPU, then one asynchronous copy to the device), one forward under inference
// mode, and splitting each output back per request (a single tensor, a tuple
// or a dict of them, in the metadata's order). A LibTorch error fails that
// batch with its message; the model stays loaded.
//
// Threads: LibTorch's intra-op threads are set on each thread that runs the
// model, and OpenBLAS's thread count to match, so that lanes x threads does
// not oversubscribe the cores. Headers show engine types only: no torch type
// leaks out of this target.
// Thread-safety: a TorchModel is used by one thread at a time (one per lane).

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "batching/engine.h"
#include "common/model_metadata.h"

namespace batchscope {

struct TorchOptions {
  // "cpu" or "cuda:N"; CUDA only where LibTorch reports a device.
  std::string device = "cpu";
  // LibTorch intra-op (OpenMP) threads per lane; 0 picks 1. Debian's LibTorch
  // parallelises elementwise work with OpenMP, whose idle threads spin and
  // steal the cores from OpenBLAS's own threads: more than one here made a
  // 1024-wide MLP twelve times slower at batch 64 on 2 cores.
  int intra_op_threads = 0;
  // OpenBLAS threads (the matrix products); 0 picks max(1, cores / lanes).
  int blas_threads = 0;
  // LibTorch inter-op threads (TorchScript fork/wait). Process-wide and
  // settable once, before any inter-op work: the first model loaded sets it,
  // later loads keep it. 0 picks 1.
  int inter_op_threads = 0;
  // Lanes sharing the machine, for the default above.
  int lanes = 1;
  // Warm up over batch sizes 1, 2, 4, ... up to this (0: the model's maximum).
  uint32_t warmup_max_batch = 0;
  // Warm up over every size from 1 up to that instead: what a shape costs the
  // first time it runs (a GPU library's plan for it) is then paid at load.
  bool warmup_every_size = false;
  // Called on the loading thread after each warm-up batch size, with that
  // size and the largest, so a caller can show how far loading has got.
  std::function<void(uint32_t batch, uint32_t max_batch)> on_warmup;
  // Asked on the loading thread before the module loads and between warm-up
  // batch sizes; once it says true, load() stops there and returns
  // kCancelled, so a caller that gives up waits for one step at most.
  std::function<bool()> cancelled;
};

class TorchModel {
 public:
  // Loads `model_path` and its sidecar; errors name the file and what is
  // wrong. A load that options.cancelled stops returns kCancelled.
  static Expected<std::unique_ptr<TorchModel>> load(const std::string& model_path,
                                                    const TorchOptions& options = {});
  ~TorchModel();

  const ModelMetadata& metadata() const;
  const std::string& device() const;
  int intra_op_threads() const;
  int blas_threads() const;
  int inter_op_threads() const;  // in force for the process

  // One output set per request, in order, or the error that failed the batch.
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs);

  // Runs the warm-up sizes (TorchOptions' warmup_max_batch and
  // warmup_every_size) on the calling thread, unless that thread has warmed
  // this model before. load() warms on the loading thread; a thread that serves the model
  // calls this first, as PyTorch keeps some state per thread (cuDNN's plans:
  // about 5 ms for each size a GPU thread runs the first time).
  Status warm_up_here(const std::function<void(uint32_t, uint32_t)>& on_size = {},
                      const std::function<bool()>& cancelled = {});

 private:
  struct Impl;
  explicit TorchModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Devices LibTorch can run on here: "cpu", then "cuda:0", "cuda:1", ...
std::vector<std::string> available_devices();

// A runner factory that loads one model instance per lane. Loading errors are
// thrown from the factory, which the engine reports.
RunnerFactory torch_runner_factory(std::string model_path, TorchOptions options);

}  // namespace batchscope

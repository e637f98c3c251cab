// SPDX-License-Identifier: GPL-3.0-or-later
// The Python lane's own cost per batch: one worker process, a predict that
// returns its input (tests/bench/data/empty.py), batches of B requests of
// 512 FP32 each sent one after another through the shared-memory region.
// Prints the round trip's median and p99 (stacking the inputs into the
// region, the two wake-ups, the worker's reading of the table, its writing
// of the outputs, and the split into one result per request), predict's own
// time as the worker measured it, and the bytes copied per batch. Run it
// under `strace -f -c` for the system calls per batch (scripts/bench-python).
// Usage: bench_python [BATCH [BATCHES [PYTHON]]]   (default 32 20000 /usr/bin/python3)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "python/python_runner.h"

int main(int argc, char** argv) {
  using namespace batchscope;
  const int batch = argc > 1 ? std::atoi(argv[1]) : 32;
  const int batches = argc > 2 ? std::atoi(argv[2]) : 20000;
  PythonSpec spec;
  spec.file = std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/bench/data/empty.py";
  spec.worker_script = std::string(BATCHSCOPE_SOURCE_DIR) + "/core/python/batchscope_worker.py";
  if (argc > 3) spec.python = argv[3];
  auto h = describe_python(spec);
  if (!h) {
    std::fprintf(stderr, "bench_python: %s\n", h.error().message.c_str());
    return 1;
  }
  WorkerSetup w;
  w.spec = spec;
  w.metadata = h->metadata;
  w.warm_batch = static_cast<uint32_t>(batch);
  w.threads = 1;
  PythonRunner runner(w, 0);
  if (Status s = runner.prepare(); !s) {
    std::fprintf(stderr, "bench_python: %s\n", s.message().c_str());
    return 1;
  }
  std::vector<float> row(512);
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(i);
  std::vector<Tensors> requests;
  for (int i = 0; i < batch; ++i) requests.push_back({Tensor::from_floats(row, {512})});
  std::vector<double> round_us, predict_us;
  for (int i = 0; i < batches; ++i) {
    std::vector<Tensors> in = requests;  // run() may move from its inputs
    const auto t0 = std::chrono::steady_clock::now();
    auto out = runner.run(std::span<Tensors>(in));
    const auto t1 = std::chrono::steady_clock::now();
    if (!out || out->size() != static_cast<size_t>(batch) ||
        (*out)[batch - 1][0].as<float>()[7] != 7) {
      std::fprintf(stderr, "bench_python: a wrong answer: %s\n",
                   out ? "wrong values" : out.error().message.c_str());
      return 1;
    }
    round_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    predict_us.push_back(static_cast<double>(runner.last_predict_ns()) / 1000.0);
  }
  auto at = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
  };
  const size_t bytes = static_cast<size_t>(batch) * 512 * sizeof(float);
  std::printf(
      "batch %d x 512 FP32, %d batches: round trip median %.1f us, p99 %.1f us; "
      "predict itself median %.1f us\n",
      batch, batches, at(round_us, 0.5), at(round_us, 0.99), at(predict_us, 0.5));
  std::printf(
      "bytes copied per batch: inputs %zu (into the region, once); outputs %zu (into "
      "the region by the worker) + %zu (out of it, one result per request)\n",
      bytes, bytes, bytes);
  return 0;
}

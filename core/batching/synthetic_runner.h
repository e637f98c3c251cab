// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A stand-in model with a known cost, for tests, benchmarks and demos: a batch
// of b requests costs a + c*b + l*ln(b + 1) microseconds (plus optional
// seeded jitter; the log term is the classic shape of a model whose batch
// cost grows slower than its size),
// spent busy-spinning (it holds a core, like real compute) or sleeping.
// Each output is a deterministic function of its own input (every element
// x becomes 2x + 1, as FP32), so a caller can tell that each request got its
// own result. Inputs must be FP32; anything else fails the batch.
//
// Thread-safety: one instance per lane (the engine's contract); the shared
// cost parameters are immutable.

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>

#include "batching/engine.h"
#include "common/model_metadata.h"

namespace batchscope {

struct SyntheticCost {
  double fixed_us = 0;     // a: cost of a batch regardless of size
  double per_item_us = 0;  // c: cost of each request in it
  double log_us = 0;       // l: a further l * ln(b + 1)
  double jitter = 0;       // relative jitter, uniform in [-jitter, +jitter]
  bool busy_spin = true;   // spin on the steady clock, or sleep
  uint64_t seed = 1;

  double cost_us(size_t batch) const {
    const double b = static_cast<double>(batch);
    return fixed_us + per_item_us * b + (log_us > 0 ? log_us * std::log(b + 1.0) : 0.0);
  }
};

class SyntheticRunner final : public Runner {
 public:
  SyntheticRunner(SyntheticCost cost, int lane);
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override;

  static RunnerFactory factory(SyntheticCost cost);
  // Its metadata: FP32 [-1, 128] in and out, batches up to kMaxBatchSize.
  static ModelMetadata metadata();
  // The expected output for an input: what run() returns for it.
  static Tensor expected_output(const Tensor& input);

 private:
  SyntheticCost cost_;
  std::mt19937_64 rng_;
};

}  // namespace batchscope

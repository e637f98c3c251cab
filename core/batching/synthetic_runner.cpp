// SPDX-License-Identifier: GPL-3.0-or-later
#include "batching/synthetic_runner.h"

#include <chrono>
#include <thread>

namespace batchscope {

SyntheticRunner::SyntheticRunner(SyntheticCost cost, int lane)
    : cost_(cost), rng_(cost.seed * 1000003u + static_cast<uint64_t>(lane)) {}

RunnerFactory SyntheticRunner::factory(SyntheticCost cost) {
  return [cost](int lane) { return std::make_unique<SyntheticRunner>(cost, lane); };
}

ModelMetadata SyntheticRunner::metadata() {
  ModelMetadata m;
  m.name = "synthetic";
  m.description = "The engine's synthetic model: every input x answers 2x + 1.";
  m.max_batch_size = kMaxBatchSize;
  TensorSpec spec;
  spec.shape = {-1, 128};
  spec.name = "data";
  m.inputs = {spec};
  spec.name = "output";
  m.outputs = {spec};
  return m;
}

Tensor SyntheticRunner::expected_output(const Tensor& input) {
  Tensor out(DType::kFloat32, input.shape());
  auto x = input.as<float>();
  auto y = out.as<float>();
  for (size_t i = 0; i < x.size(); ++i) y[i] = 2.0f * x[i] + 1.0f;
  return out;
}

Expected<std::vector<Tensors>> SyntheticRunner::run(std::span<Tensors> inputs) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (const Tensors& in : inputs) {
    for (const Tensor& t : in) {
      if (t.dtype() != DType::kFloat32) {
        return Error{
            ErrorCode::kModelError,
            std::string("the synthetic model takes FP32 input, got ") + dtype_name(t.dtype())};
      }
    }
  }
  std::vector<Tensors> outputs;
  outputs.reserve(inputs.size());
  for (Tensors& in : inputs) {
    Tensors out;
    out.reserve(in.size());
    for (const Tensor& t : in) out.push_back(expected_output(t));
    outputs.push_back(std::move(out));
  }
  double us = cost_.cost_us(inputs.size());
  if (cost_.jitter > 0) {
    std::uniform_real_distribution<double> u(-cost_.jitter, cost_.jitter);
    us *= 1.0 + u(rng_);
  }
  if (us > 0) {
    const auto until = start + std::chrono::nanoseconds(static_cast<int64_t>(us * 1000.0));
    if (cost_.busy_spin) {
      while (Clock::now() < until) {
      }
    } else {
      std::this_thread::sleep_until(until);
    }
  }
  return outputs;
}

}  // namespace batchscope

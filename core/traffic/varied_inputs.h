// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Requests for a model whose inputs vary in length (a text model's tokens):
// seeded inputs whose lengths are drawn from a distribution, the same forms
// as a generative workload's prompt lengths (gen_workload.h).
// Thread-safety: free functions without shared state.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/model_metadata.h"
#include "traffic/gen_workload.h"

namespace batchscope {

// The inputs bench and tune send in turn to a model whose inputs vary in
// length: request i is input i % kVariedPool.
inline constexpr size_t kVariedPool = 1024;

// `count` requests, request i from seed `seed + i`, its length drawn from
// `lengths` (cut to the model's largest).
std::vector<Tensors> varied_inputs(const ModelMetadata& model, const LengthDist& lengths,
                                   uint64_t seed, size_t count);

// The lengths of varied_inputs(model, lengths, seed, count), request by
// request (request_length() of each), without making the inputs: what the
// predictor replays for the same traffic.
std::vector<uint32_t> varied_lengths(const ModelMetadata& model, const LengthDist& lengths,
                                     uint64_t seed, size_t count);

// The lengths drawn where none are given: lognormal with median 32 and sigma
// 1, up to the model's largest (256 where it has none).
LengthDist default_lengths(const ModelMetadata& model);

}  // namespace batchscope

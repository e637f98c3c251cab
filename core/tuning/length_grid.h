// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How a batch's run time grows with the length it is padded to, for a model
// whose inputs vary in length (a text model's tokens): t(b, L) measured over
// a grid of batch sizes and lengths (`profile` on such a model), kept as the
// time t(b, L) - t(b, reference) that a batch of b padded to L takes beyond
// a cost model's t(b), itself measured at the reference length. So every
// other part of a cost (jitter, lanes, overhead, a live refinement of t(b))
// stays as it is, and a batch of b padded to L costs t(b) + extra_us(b, L).
// The length adds work; it does not multiply what a batch costs anyway (a
// live t(b) holds per-batch work a profile does not see: on
// text_classifier, a ratio priced one request of 256 tokens at 7.1 ms where
// it ran in 4.9, the difference at 4.5).
//
// Between grid points t(b, L) is read from straight lines in log2(b) and
// in L; b outside the grid's sizes is held at the nearest; L beyond the
// longest measured follows the last two lengths' line (never below 0), and
// below the shortest is held there (a batch that short costs what its
// fixed share costs).
//
// JSON (a cost file's "length_grid"): {"reference": 16, "batches": [1, 2,
// ...], "lengths": [16, 32, ...], "median_us": [[t(b1, L1), t(b1, L2), ...],
// ...]}, a row per batch size.
// Thread-safety: a plain value; const methods may run on any thread.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "runs/records.h"

namespace batchscope {

// The most batch sizes or lengths a grid holds.
inline constexpr size_t kMaxGridAxis = 64;

struct LengthGrid {
  uint32_t reference = 16;        // the length t(b) was measured at; one of `lengths`
  std::vector<uint32_t> batches;  // rising, >= 1
  std::vector<uint32_t> lengths;  // rising, >= 1
  std::vector<double> median_us;  // batches.size() rows of lengths.size(), each 0..kMaxCostUs

  bool empty() const { return batches.empty(); }
  bool operator==(const LengthGrid&) const = default;

  // Ok for an empty grid or a valid one; otherwise kInvalidArgument naming
  // the field and quoting the value ("length_grid.lengths[2] = 8 must be
  // above 32").
  Status validate() const;

  // t(b, length) - t(b, reference) in microseconds (below 0 for a length
  // shorter than the reference); 0 for an empty grid or length 0 (a request
  // whose length does not vary).
  double extra_us(size_t batch, uint32_t length) const;
  // t(b, length) as measured, read the same way; 0 for an empty grid.
  double us(size_t batch, uint32_t length) const;

  // The JSON object above; "{}" for an empty grid.
  std::string to_json() const;
  // Reads the object above, validated; errors start with `prefix`.
  static Expected<LengthGrid> from_json(std::string_view json, const std::string& prefix = {});
};

// `d` and `extra_us` more, rounded to the nanosecond and never below 0: a
// batch's run time at its padded length on a virtual clock.
inline Duration lengthen(Duration d, double extra_us) {
  return std::max(Duration(0), d + Duration(std::llround(extra_us * 1000.0)));
}

// `batches` as if each had been padded to the grid's reference length: its
// run time (run_end - run_start) less grid.extra_us(size, longest), at least
// a microsecond, by moving run_start later (run_end, and so its answers'
// times, are kept).
// The batches as they are where the grid is empty.
std::vector<BatchRecord> at_reference_length(std::span<const BatchRecord> batches,
                                             const LengthGrid& grid);

// True when some batch recorded a length (its requests' inputs varied).
bool has_lengths(std::span<const BatchRecord> batches);

}  // namespace batchscope

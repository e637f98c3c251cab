// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A profile's measured steps as a price, for the steps a straight-line fit
// cannot follow (a language model on a CPU costs far more per cached token
// once a step's keys and values outgrow the caches). Decode steps are read
// from the rectangle of (decodes, position) points, joined by straight lines
// in log2(decodes) and log2(position + 1); prefill steps from the prefill
// points, joined by straight lines in tokens. Outside its span a price is
// held at the nearest edge; the caller adds the fit's difference from there.
// Thread-safety: immutable after construction.

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "tuning/step_cost.h"

namespace batchscope {

class StepGrid {
 public:
  StepGrid() = default;
  // Points off the rectangle of decode points (some (decodes, position) of
  // its axes missing) leave it without one; prefill points need two.
  explicit StepGrid(std::span<const StepGridPoint> points);

  bool has_decodes() const { return !us_.empty(); }
  bool has_prefill() const { return prefill_tokens_.size() >= 2; }
  size_t size() const { return size_; }
  // The cheapest step measured: a step's share that does not grow.
  double floor_us() const { return floor_; }

  // A decode-only step's price at the point clamped into the span, and that
  // point (decodes, position).
  double decode_us(double decodes, double position, double& at_decodes, double& at_position) const;
  // A prefill-only step's price at `tokens` clamped into the span, and the
  // tokens it was read at.
  double prefill_us(double tokens, double& at_tokens) const;
  // This grid on a machine `factor` times as slow: every price scaled.
  StepGrid scaled(double factor) const;

 private:
  std::vector<double> d_, p_;                        // the axes, log2
  std::vector<double> us_;                           // d_.size() rows of p_.size()
  std::vector<double> prefill_tokens_, prefill_us_;  // rising in tokens
  double floor_ = 0;
  size_t size_ = 0;
};

}  // namespace batchscope

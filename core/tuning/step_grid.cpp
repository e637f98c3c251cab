// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/step_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace batchscope {

namespace {

// Where `x` falls on the rising `axis`: the index below it and the weight of
// the one above, clamped to the ends.
std::pair<size_t, double> locate(const std::vector<double>& axis, double x) {
  if (axis.size() == 1 || x <= axis.front()) return {0, 0.0};
  if (x >= axis.back()) return {axis.size() - 2, 1.0};
  const size_t hi =
      static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), x) - axis.begin());
  const size_t lo = hi - 1;
  return {lo, (x - axis[lo]) / (axis[hi] - axis[lo])};
}

}  // namespace

StepGrid::StepGrid(std::span<const StepGridPoint> points) {
  std::map<std::pair<uint32_t, uint32_t>, double> decode;
  std::map<uint32_t, double> prefill;
  floor_ = std::numeric_limits<double>::infinity();
  for (const StepGridPoint& g : points) {
    if (g.decodes > 0 && g.prefill == 0) {
      decode[{g.decodes, g.position}] = g.us;
    } else if (g.decodes == 0 && g.prefill > 0) {
      prefill[g.prefill] = g.us;
    } else {
      continue;
    }
    floor_ = std::min(floor_, g.us);
    ++size_;
  }
  if (size_ == 0) floor_ = 0;
  for (const auto& [tokens, us] : prefill) {
    prefill_tokens_.push_back(tokens);
    prefill_us_.push_back(us);
  }
  std::vector<uint32_t> ds, ps;
  for (const auto& [key, us] : decode) {
    if (ds.empty() || ds.back() != key.first) ds.push_back(key.first);
    ps.push_back(key.second);
  }
  std::sort(ps.begin(), ps.end());
  ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
  if (ds.empty() || decode.size() != ds.size() * ps.size()) return;  // not a rectangle
  for (uint32_t d : ds) {
    for (uint32_t p : ps) us_.push_back(decode.at({d, p}));
  }
  for (uint32_t d : ds) d_.push_back(std::log2(static_cast<double>(d)));
  for (uint32_t p : ps) p_.push_back(std::log2(static_cast<double>(p) + 1));
}

double StepGrid::decode_us(double decodes, double position, double& at_decodes,
                           double& at_position) const {
  const double x = std::log2(std::max(decodes, 1.0));
  const double y = std::log2(std::max(position, 0.0) + 1);
  const auto [i, wx] = locate(d_, x);
  const auto [j, wy] = locate(p_, y);
  const size_t cols = p_.size();
  auto at = [&](size_t r, size_t c) {
    return us_[std::min(r, d_.size() - 1) * cols + std::min(c, cols - 1)];
  };
  const double lo = at(i, j) * (1 - wy) + at(i, j + 1) * wy;
  const double hi = at(i + 1, j) * (1 - wy) + at(i + 1, j + 1) * wy;
  at_decodes = std::exp2(std::clamp(x, d_.front(), d_.back()));
  at_position = std::exp2(std::clamp(y, p_.front(), p_.back())) - 1;
  return lo * (1 - wx) + hi * wx;
}

double StepGrid::prefill_us(double tokens, double& at_tokens) const {
  const auto [i, w] = locate(prefill_tokens_, tokens);
  at_tokens = std::clamp(tokens, prefill_tokens_.front(), prefill_tokens_.back());
  return prefill_us_[i] * (1 - w) + prefill_us_[i + 1] * w;
}

StepGrid StepGrid::scaled(double factor) const {
  StepGrid g = *this;
  for (double& us : g.us_) us *= factor;
  for (double& us : g.prefill_us_) us *= factor;
  g.floor_ *= factor;
  return g;
}

}  // namespace batchscope

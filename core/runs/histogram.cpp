// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace batchscope {

namespace {

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

}  // namespace

size_t LogHistogram::bucket_index(uint64_t value) {
  if (value < kSubBuckets) return static_cast<size_t>(value);
  // The top bit picks the power of two; the kSubBucketBits bits below it
  // pick the linear sub-bucket inside that power.
  const int top = static_cast<int>(std::bit_width(value)) - 1;  // >= kSubBucketBits
  const int shift = top - kSubBucketBits;
  const uint64_t sub = (value >> shift) & (kSubBuckets - 1);
  return static_cast<size_t>(kSubBuckets + static_cast<uint64_t>(shift) * kSubBuckets + sub);
}

uint64_t LogHistogram::bucket_lower(size_t index) {
  if (index < kSubBuckets) return index;
  const uint64_t shift = (index - kSubBuckets) / kSubBuckets;
  const uint64_t sub = (index - kSubBuckets) % kSubBuckets;
  return (kSubBuckets + sub) << shift;
}

uint64_t LogHistogram::bucket_upper(size_t index) {
  if (index < kSubBuckets) return index;
  const uint64_t shift = (index - kSubBuckets) / kSubBuckets;
  // lower + width - 1; for the very last bucket this is exactly UINT64_MAX.
  return bucket_lower(index) + ((uint64_t{1} << shift) - 1);
}

void LogHistogram::cover(size_t lo, size_t hi) {
  if (counts_.empty()) {
    base_ = lo;
    counts_.assign(hi - lo + 1, 0);
    return;
  }
  if (lo < base_) {
    counts_.insert(counts_.begin(), base_ - lo, 0);
    base_ = lo;
  }
  if (hi >= base_ + counts_.size()) counts_.resize(hi - base_ + 1, 0);
}

void LogHistogram::record(uint64_t value, uint64_t count) {
  if (count == 0) return;
  const size_t index = bucket_index(value);
  if (counts_.empty() || index < base_ || index >= base_ + counts_.size()) cover(index, index);
  counts_[index - base_] += count;
  count_ += count;
  sum_ = saturating_add(sum_, saturating_mul(value, count));
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void LogHistogram::record(Duration d) {
  record(d.count() < 0 ? 0 : static_cast<uint64_t>(d.count()));
}

void LogHistogram::merge(const LogHistogram& other) {
  if (other.empty()) return;
  if (empty()) {
    *this = other;
    return;
  }
  cover(other.base_, other.base_ + other.counts_.size() - 1);
  const size_t offset = other.base_ - base_;
  for (size_t i = 0; i < other.counts_.size(); ++i) counts_[offset + i] += other.counts_[i];
  count_ += other.count_;
  sum_ = saturating_add(sum_, other.sum_);
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void LogHistogram::clear() {
  // Keeps the capacity: a window histogram that is cleared is usually refilled
  // with values in the same range.
  counts_.clear();
  base_ = 0;
  count_ = 0;
  sum_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
}

uint64_t LogHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  if (!(q > 0.0)) return min_;  // also catches NaN
  if (q >= 1.0) return max_;
  const double exact = q * static_cast<double>(count_);
  const double wanted = std::ceil(exact - exact * 1e-12);
  uint64_t rank = wanted < 1.0 ? 1 : static_cast<uint64_t>(wanted);
  rank = std::min(rank, count_);

  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const size_t index = base_ + i;
      const uint64_t lower = bucket_lower(index);
      const uint64_t mid = lower + (bucket_upper(index) - lower) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;  // unreachable while counts_ sums to count_
}

bool LogHistogram::operator==(const LogHistogram& other) const {
  if (count_ != other.count_ || sum_ != other.sum_ || min() != other.min() || max_ != other.max_)
    return false;
  if (count_ == 0) return true;
  return base_ == other.base_ && counts_ == other.counts_;
}

std::vector<double> even_quantiles(std::vector<double> v, size_t parts) {
  std::vector<double> q;
  if (v.empty() || parts == 0) return q;
  std::sort(v.begin(), v.end());
  q.reserve(parts + 1);
  for (size_t i = 0; i <= parts; ++i) {
    const double pos = static_cast<double>(i) * static_cast<double>(v.size() - 1) / parts;
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    q.push_back(v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo)));
  }
  return q;
}

std::vector<double> monotone_fit(const std::vector<double>& values,
                                 const std::vector<double>& weights) {
  struct Block {
    double mean, weight;
    size_t count;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < values.size(); ++i) {
    blocks.push_back({values[i], i < weights.size() ? weights[i] : 1.0, 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean > blocks.back().mean) {
      const Block last = blocks.back();
      blocks.pop_back();
      Block& prev = blocks.back();
      const double w = prev.weight + last.weight;
      prev.mean = (prev.mean * prev.weight + last.mean * last.weight) / w;
      prev.weight = w;
      prev.count += last.count;
    }
  }
  std::vector<double> out;
  out.reserve(values.size());
  for (const Block& b : blocks) out.insert(out.end(), b.count, b.mean);
  return out;
}

}  // namespace batchscope

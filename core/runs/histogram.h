// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// LogHistogram: a mergeable histogram of non-negative integers (latencies in
// nanoseconds, batch sizes) whose quantiles carry a bounded relative error.
//
// Buckets are log-linear: values below 128 each get their own bucket; above
// that every power of two [2^h, 2^(h+1)) is split into 128 equal sub-buckets,
// so a bucket is never wider than 1/128 of its lower bound. A quantile reports
// its bucket's midpoint clamped to the exact observed min and max, which keeps
// the relative error of every quantile at or below 1/256 (about 0.4%). Values
// below 256 are exact.
//
// Under load: record() is a bit scan plus an increment, with no floating
// point. Counts are stored only over the range of buckets touched so far, so
// a histogram whose values span a few octaves costs a few KiB rather than the
// 58 KiB a dense table of all 7424 buckets would. Growing that range is the
// only allocation and happens at most once per new lowest or highest bucket.
// merge() is a linear pass over the other histogram's range.
//
// Thread-safety: a plain value; not synchronised. Const methods may be called
// concurrently with each other, not with a mutation.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/clock.h"

namespace batchscope {

class LogHistogram {
 public:
  // Buckets below kExactLimit are one value wide; above it the sub-bucket
  // count per power of two sets the precision.
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;
  static constexpr uint64_t kExactLimit = 2 * kSubBuckets;  // values < 256 are exact
  static constexpr size_t kBucketCount = kSubBuckets + (64 - kSubBucketBits) * kSubBuckets;

  void record(uint64_t value, uint64_t count = 1);
  // Negative durations (clock skew between stage stamps) count as 0.
  void record(Duration d);

  void merge(const LogHistogram& other);
  void clear();

  bool empty() const { return count_ == 0; }
  uint64_t count() const { return count_; }
  // 0 when empty.
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  // Saturates at UINT64_MAX (584 years of nanoseconds) instead of wrapping.
  uint64_t sum() const { return sum_; }
  double mean() const {
    return count_ == 0 ? 0.0 : static_cast<double>(sum_) / static_cast<double>(count_);
  }

  // Nearest-rank quantile: the value at 1-based rank ceil(q * count), at least
  // 1, among the recorded values in ascending order, reported as its bucket's
  // midpoint clamped to [min, max]. q <= 0 gives min() and q >= 1 gives max()
  // exactly; an empty histogram gives 0. The rank ignores a relative 1e-12 of
  // q * count so that decimal q such as 0.07 (stored slightly above 0.07)
  // does not skip to the next rank.
  uint64_t quantile(double q) const;

  // Calls f(lower, upper, count) for each non-empty bucket in ascending order.
  // Both bounds are inclusive: the bucket holds the integers lower..upper.
  // Inclusive bounds let the top bucket end at UINT64_MAX without overflow and
  // map directly onto Prometheus' "le" buckets.
  template <class F>
  void for_each_bucket(F f) const {
    for (size_t i = 0; i < counts_.size(); ++i) {
      if (counts_[i] != 0) {
        const size_t index = base_ + i;
        f(bucket_lower(index), bucket_upper(index), counts_[i]);
      }
    }
  }

  // Bucket geometry, public for exporters that need fixed bucket edges.
  static size_t bucket_index(uint64_t value);
  static uint64_t bucket_lower(size_t index);
  static uint64_t bucket_upper(size_t index);

  // Heap bytes held by the counts, for footprint reports.
  size_t memory_bytes() const { return counts_.capacity() * sizeof(uint64_t); }

  // Same recorded multiset of buckets and the same exact statistics.
  bool operator==(const LogHistogram& other) const;

 private:
  // Makes counts_ cover [lo, hi] (bucket indices), keeping existing counts.
  void cover(size_t lo, size_t hi);

  // counts_[i] is the count of bucket base_ + i. The range is exactly the
  // lowest to the highest non-empty bucket, so equal contents compare equal.
  std::vector<uint64_t> counts_;
  size_t base_ = 0;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

// The parts + 1 evenly spaced quantiles p0, p1/parts, ..., p100 of `v`
// (sorted here), interpolated linearly between ranks; empty when v is. The
// exact figures a cost model keeps of a few thousand measured times.
std::vector<double> even_quantiles(std::vector<double> v, size_t parts = 64);

// `values` made non-decreasing by pooling adjacent violators: the weighted
// least-squares monotone fit (weights: equal when empty, else one each,
// above 0). A cost curve whose larger batch measured cheaper, by noise.
std::vector<double> monotone_fit(const std::vector<double>& values,
                                 const std::vector<double>& weights = {});

}  // namespace batchscope

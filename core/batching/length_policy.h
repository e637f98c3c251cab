// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The padding policies' rules (Options::padding) over any queue of requests
// of varying length, shared by the engine (basic_engine_padding.h) and the
// predictor (tuning/predictor.cpp), so that the two choose alike by
// construction. A queue is read through two callables: length_at(i) and
// arrival_at(i) of the request at queue position i (0 is the oldest).
//
// longest: first come first batched (the fifo cut). buckets: each length
// bucket is a queue of its own under the strategy's limits: it dispatches
// when it holds a full batch or its oldest has waited max_wait, the oldest
// such bucket first, and a batch never mixes buckets. sorted: the strategy
// decides when and how many as for longest; the batch is the oldest request
// and the queued ones nearest its length, among the first 4 x max_batch_size
// queued, the older first on a tie. The oldest always goes, so no request
// waits behind others forever.
// Thread-safety: pure functions; the caller holds whatever guards its queue.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "batching/strategy.h"
#include "common/options.h"

namespace batchscope {

// What the buckets rule decided, and what the caller keeps to wake its
// leader: the requests counted per bucket, and the count at which an
// admission into one bucket makes a full batch there.
struct BucketChoice {
  Decision decision = Decision::idle();
  int bucket = -1;  // the bucket to cut from; -1 when none dispatches
  std::array<uint32_t, kMaxLengthBuckets + 1> count{};
  uint32_t wake_at = 1;
};

// The buckets rule for a queue of `queued` requests. A wait has
// wake_at_size SIZE_MAX: a bucket filling wakes the leader instead (the
// caller counts admissions per bucket against wake_at), and a new bucket's
// first request waits longer than every head already queued.
template <class LengthAt, class ArrivalAt>
BucketChoice decide_in_buckets(const Options& o, const Limits& lim, const QueueView& q,
                               TimePoint now, size_t queued, LengthAt length_at,
                               ArrivalAt arrival_at) {
  BucketChoice c;
  std::array<TimePoint, kMaxLengthBuckets + 1> oldest{};
  for (size_t i = 0; i < queued; ++i) {
    const size_t k = length_bucket(o, length_at(i));
    if (c.count[k]++ == 0) oldest[k] = arrival_at(i);
  }
  c.wake_at =
      static_cast<uint32_t>(std::min<size_t>(std::max<size_t>(lim.max_batch, 1), UINT32_MAX));
  TimePoint until = kNever;
  for (size_t k = 0; k < c.count.size(); ++k) {
    if (c.count[k] == 0) continue;
    QueueView one = q;
    one.size = c.count[k];
    one.oldest_arrival = oldest[k];
    const Decision d = decide_fifo(one, now, lim);
    if (d.kind == Decision::Kind::kDispatch) {
      if (c.bucket < 0 || oldest[k] < oldest[static_cast<size_t>(c.bucket)]) {
        c.decision = d;
        c.bucket = static_cast<int>(k);
      }
    } else if (d.kind == Decision::Kind::kWait) {
      until = std::min(until, d.until);
    }
  }
  if (c.bucket < 0 && until != kNever) c.decision = Decision::wait(until, SIZE_MAX);
  return c;
}

// The queue positions, rising, of the n (at most) requests a cut takes
// under o.padding (buckets or sorted; `bucket` is the buckets rule's, or -1
// for the head's). `picked` is cleared first and reused.
template <class LengthAt>
void pick_by_length(const Options& o, size_t n, size_t queued, int bucket, LengthAt length_at,
                    std::vector<size_t>& picked) {
  picked.clear();
  if (queued == 0 || n == 0) return;
  if (o.padding == Padding::kBuckets) {
    const size_t k =
        bucket >= 0 ? static_cast<size_t>(bucket) : length_bucket(o, length_at(size_t{0}));
    for (size_t i = 0; i < queued && picked.size() < n; ++i) {
      if (length_bucket(o, length_at(i)) == k) picked.push_back(i);
    }
    return;
  }
  const size_t window = std::min(queued, std::max<size_t>(n, 4 * size_t{o.max_batch_size}));
  const int64_t head = length_at(size_t{0});
  const auto distance = [&](size_t i) { return std::llabs(int64_t{length_at(i)} - head); };
  for (size_t i = 1; i < window; ++i) picked.push_back(i);
  const auto nearer = [&](size_t a, size_t b) {
    const int64_t da = distance(a), db = distance(b);
    return da != db ? da < db : a < b;
  };
  if (picked.size() > n - 1) {
    std::nth_element(picked.begin(), picked.begin() + static_cast<std::ptrdiff_t>(n - 1),
                     picked.end(), nearer);
    picked.resize(n - 1);
  }
  picked.push_back(0);
  std::sort(picked.begin(), picked.end());
}

}  // namespace batchscope

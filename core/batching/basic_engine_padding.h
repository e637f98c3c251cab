// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BasicEngine, the padding policies for requests of varying length
// (Options::padding): which queued requests a batch takes, and, for
// buckets, when each bucket dispatches. Included through basic_engine_impl.h.
//
// longest: first come first batched (the fifo cut). buckets: each length
// bucket is a queue of its own under the strategy's limits: it dispatches
// when it holds a full batch or its oldest has waited max_wait, and a batch
// never mixes buckets. sorted: the strategy decides when and how many as for
// longest; the batch is the oldest request and the queued ones nearest its
// length, among the first 4 x max_batch_size queued, the older first on a
// tie. The oldest always goes, so no request waits behind others forever.

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "batching/basic_engine.h"

namespace batchscope {

template <class In, class Out>
Decision BasicEngine<In, Out>::decide_buckets_locked(const QueueView& q, TimePoint now) {
  const Limits lim = strategy_->limits(q, options_);
  std::array<uint32_t, kMaxLengthBuckets + 1> count{};
  std::array<TimePoint, kMaxLengthBuckets + 1> oldest{};
  for (size_t i = 0; i < queue_.size(); ++i) {
    const size_t k = length_bucket(options_, queue_[i].length);
    if (count[k]++ == 0) oldest[k] = queue_[i].times.arrival;
  }
  bucket_count_ = count;
  bucket_wake_at_ = engine_detail::u32(std::max<size_t>(lim.max_batch, 1));
  cut_bucket_ = -1;
  Decision best = Decision::idle();
  TimePoint until = kNever;
  for (size_t k = 0; k < count.size(); ++k) {
    if (count[k] == 0) continue;
    QueueView one = q;
    one.size = count[k];
    one.oldest_arrival = oldest[k];
    const Decision d = decide_fifo(one, now, lim);
    if (d.kind == Decision::Kind::kDispatch) {
      if (cut_bucket_ < 0 || oldest[k] < oldest[static_cast<size_t>(cut_bucket_)]) {
        best = d;
        cut_bucket_ = static_cast<int>(k);
      }
    } else if (d.kind == Decision::Kind::kWait) {
      until = std::min(until, d.until);
    }
  }
  if (cut_bucket_ >= 0) return best;
  // A bucket filling wakes the leader (admit_locked); a new bucket's first
  // request waits longer than every head already queued.
  if (until != kNever) return Decision::wait(until, SIZE_MAX);
  return Decision::idle();
}

template <class In, class Out>
void BasicEngine<In, Out>::pick_locked(size_t n, std::vector<size_t>& picked) {
  picked.clear();
  if (options_.padding == Padding::kBuckets) {
    const size_t k = cut_bucket_ >= 0 ? static_cast<size_t>(cut_bucket_)
                                      : length_bucket(options_, queue_.front().length);
    for (size_t i = 0; i < queue_.size() && picked.size() < n; ++i) {
      if (length_bucket(options_, queue_[i].length) == k) picked.push_back(i);
    }
  } else {  // sorted
    const size_t window =
        std::min(queue_.size(), std::max<size_t>(n, 4 * size_t{options_.max_batch_size}));
    const int64_t head = queue_.front().length;
    const auto distance = [&](size_t i) { return std::llabs(queue_[i].length - head); };
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
  cut_bucket_ = -1;
}

template <class In, class Out>
void BasicEngine<In, Out>::take_picked_locked(const std::vector<size_t>& picked,
                                              RingQueue<Pending>& batch) {
  size_t j = 0;
  for (size_t i = 0; i < queue_.size(); ++i) {
    if (j < picked.size() && picked[j] == i) {
      batch.push_back(std::move(queue_[i]));
      ++j;
    } else {
      spare_.push_back(std::move(queue_[i]));
    }
  }
  queue_.clear();
  queue_.swap(spare_);
}

}  // namespace batchscope

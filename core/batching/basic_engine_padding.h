// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BasicEngine, the padding policies for requests of varying length
// (Options::padding): which queued requests a batch takes, and, for
// buckets, when each bucket dispatches. The rules are length_policy.h's,
// which the predictor shares. Included through basic_engine_impl.h.

#include <vector>

#include "batching/basic_engine.h"
#include "batching/length_policy.h"

namespace batchscope {

template <class In, class Out>
Decision BasicEngine<In, Out>::decide_buckets_locked(const QueueView& q, TimePoint now) {
  const BucketChoice c = decide_in_buckets(
      options_, strategy_->limits(q, options_), q, now, queue_.size(),
      [this](size_t i) {
        mu_.assert_held();  // called back by decide_in_buckets, under this function's lock
        return queue_[i].length;
      },
      [this](size_t i) {
        mu_.assert_held();  // the same
        return queue_[i].times.arrival;
      });
  bucket_count_ = c.count;
  bucket_wake_at_ = c.wake_at;
  cut_bucket_ = c.bucket;
  return c.decision;
}

template <class In, class Out>
void BasicEngine<In, Out>::pick_locked(size_t n, std::vector<size_t>& picked) {
  pick_by_length(
      options_, n, queue_.size(), cut_bucket_,
      [this](size_t i) {
        mu_.assert_held();  // called back by pick_by_length, under this function's lock
        return queue_[i].length;
      },
      picked);
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

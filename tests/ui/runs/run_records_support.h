// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Hand-built engine records for the Runs panel's tests.

#include <chrono>

#include "runs/records.h"

namespace batchscope {

// `n` batches of `k` requests, one every 5 ms from `first` on: batch i's
// requests arrive 100 µs apart, it is cut 50 µs after the last and runs
// `run_us`. Every request succeeds.
inline RecordBatch make_records(TimePoint first, uint64_t first_id, int n, int k,
                                int64_t run_us = 600) {
  RecordBatch out;
  for (int i = 0; i < n; ++i) {
    BatchRecord b;
    b.id = first_id + static_cast<uint64_t>(i);
    b.size = static_cast<uint32_t>(k);
    b.oldest_arrival = first + milliseconds(5) * i;
    b.batched = b.oldest_arrival + microseconds(100 * (k - 1) + 50);
    b.run_start = b.batched;
    b.run_end = b.run_start + microseconds(run_us);
    for (int j = 0; j < k; ++j) {
      RequestRecord r;
      r.id = b.id * 1000 + static_cast<uint64_t>(j);
      r.batch_id = b.id;
      r.batch_size = b.size;
      r.times.arrival = r.times.admitted = b.oldest_arrival + microseconds(100 * j);
      r.times.batched = r.times.run_start = b.batched;
      r.times.run_end = r.times.completed = b.run_end;
      out.requests.push_back(r);
    }
    out.batches.push_back(b);
    out.depth.push_back({b.batched, 0, static_cast<uint32_t>(k)});
  }
  return out;
}

}  // namespace batchscope

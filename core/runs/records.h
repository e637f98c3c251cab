// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Fixed-size records that the engine emits for every request and batch. All
// latency figures derive from these stage timestamps. The metrics aggregator
// folds them into windows; run exports write them out.
// Thread-safety: plain values.

#include <cstdint>
#include <vector>

#include "common/clock.h"

namespace batchscope {

using RequestId = uint64_t;

// When a request passed each stage. A stage it never reached stays at the
// zero TimePoint (for example `run_start` of a timed-out request).
struct StageTimes {
  TimePoint arrival{};    // submit() was called
  TimePoint admitted{};   // entered the admission queue
  TimePoint batched{};    // cut into a batch
  TimePoint run_start{};  // its batch started running
  TimePoint run_end{};    // its batch finished running
  TimePoint completed{};  // its callback was invoked
  // Prepared by a stage before it was queued (a preprocess pool): when a
  // process took it (admitted: when it came back); zero otherwise.
  TimePoint prepare_start{};
  // The runner ran something after the model for each request (a Python
  // model's postprocess): when that began, within the run; zero otherwise.
  TimePoint post_start{};
  // The runner prepared the batch's requests before the model (a Python
  // model's lane at preprocess_workers 0): when the model began, within
  // the run; zero otherwise.
  TimePoint model_start{};
};

enum class Outcome : uint8_t {
  kOk,
  kRejected,  // queue full, or submitted while stopping
  kTimedOut,
  kCancelled,
  kModelError,
  kShuttingDown,
  kInvalid,  // refused before admission: the input does not fit the model
};
inline constexpr int kOutcomeCount = 7;
const char* outcome_name(Outcome o);

// Why a batch was cut.
enum class BatchReason : uint8_t {
  kFull,     // max_batch_size requests were waiting
  kTimeout,  // the oldest request had waited max_wait
  kDrain,    // the engine was stopping and emptied its queue
};
inline constexpr int kBatchReasonCount = 3;
const char* batch_reason_name(BatchReason r);

struct RequestRecord {
  RequestId id = 0;
  uint64_t batch_id = 0;  // 0 when it never rode in a batch
  StageTimes times;
  uint32_t batch_size = 0;
  Outcome outcome = Outcome::kOk;
};

struct BatchRecord {
  uint64_t id = 0;
  uint32_t size = 0;
  BatchReason reason = BatchReason::kFull;
  uint16_t lane = 0;
  bool failed = false;             // the runner returned an error or threw
  uint32_t queue_depth_after = 0;  // requests left queued after the cut
  TimePoint oldest_arrival{};      // arrival of its first request
  TimePoint batched{};
  TimePoint run_start{};
  TimePoint run_end{};
  // The lane prepared the batch's requests before the model (a Python
  // model's lane at preprocess_workers 0): when the model began; zero
  // otherwise.
  TimePoint model_start{};
  // Requests of varying length (a text model's tokens): the longest, to
  // which the batch is padded, and the sum of their lengths. 0 where lengths
  // do not vary.
  uint32_t longest = 0;
  uint64_t length_sum = 0;
};

// The share of a padded batch that is padding: (size x longest - sum) /
// (size x longest); 0 where lengths do not vary.
inline double padding_waste(const BatchRecord& b) {
  const double padded = static_cast<double>(b.size) * b.longest;
  return padded > 0 ? 1.0 - static_cast<double>(b.length_sum) / padded : 0.0;
}

// When a batch finished, or when it was cut if it never ran: the moment
// windows file it under.
inline TimePoint finished_at(const BatchRecord& b) {
  return b.run_end != TimePoint{} ? b.run_end : b.batched;
}

// Queue depth at an instant, and the peak since the previous sample; and
// the requests a stage was preparing then, not yet queued (a Python model's
// preprocess pool; 0 without one).
struct DepthSample {
  TimePoint time{};
  uint32_t depth = 0;
  uint32_t peak = 0;
  uint32_t preparing = 0;
};

// What the engine hands over on each drain; vectors are swapped, not copied.
struct RecordBatch {
  std::vector<RequestRecord> requests;
  std::vector<BatchRecord> batches;
  std::vector<DepthSample> depth;
  uint64_t dropped = 0;  // records lost because nobody drained in time
  void clear() {
    requests.clear();
    batches.clear();
    depth.clear();
    dropped = 0;
  }
};

}  // namespace batchscope

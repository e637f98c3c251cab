// SPDX-License-Identifier: GPL-3.0-or-later
// The predictor's simulation (predictor.h): the engine's lanes, queue and
// strategy, and the load driver's sends, as events on a virtual clock. Each
// handler mirrors a piece of BasicEngine (basic_engine_lanes.h,
// basic_engine_queue.h, basic_engine_deadlines.h) or of the load driver,
// named in its comment. Its own header for predictor.cpp alone.
// Thread-safety: one simulation runs on one thread.

#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "batching/length_policy.h"
#include "batching/rate_estimator.h"
#include "batching/strategy.h"
#include "runs/records.h"
#include "tuning/predict_sends.h"
#include "tuning/predictor.h"

namespace batchscope::predict_detail {

// BasicEngine's default bound on the batch records and depth samples it
// buffers; bench drains them only at the end of a run.
constexpr size_t kRecordCapacity = size_t{1} << 20;
// LoadOptions::drain_timeout's default: how long bench waits for answers
// after it stops sending.
constexpr Duration kDrainTimeout = std::chrono::seconds(60);

// splitmix64, uniform in [-1, 1): seeded, and the same on every platform
// (unlike std::*_distribution).
struct Jitter {
  uint64_t s;
  double next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
};

// The steps of a batch size's jitter table: the quantiles a profile keeps.
constexpr size_t kJitterSteps = 64;

struct Queued {
  uint32_t request;  // index into the run's requests
  TimePoint arrival;
  uint32_t length;     // 0 where lengths do not vary
  TimePoint admitted;  // arrival, or when the preprocess pool gave it back
};

// A request in the preprocess pool.
struct PoolJob {
  uint32_t request;  // index into the run's requests
  TimePoint arrival;
};

struct Lane {
  bool busy = false;
  TimePoint end = kNever;
  TimePoint back = kNever;        // answering its batch until then (the turnaround)
  std::vector<uint32_t> members;  // its batch's requests: positions in the admission order
  BatchRecord batch;
};

// Free lanes waiting to lead, the one free longest first.
class Followers {
 public:
  explicit Followers(size_t lanes) : ring_(lanes) {}
  bool empty() const { return count_ == 0; }
  void push(size_t lane) { ring_[(head_ + count_++) % ring_.size()] = lane; }
  size_t pop() {
    const size_t lane = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --count_;
    return lane;
  }

 private:
  std::vector<size_t> ring_;
  size_t head_ = 0, count_ = 0;
};

class Simulation {
 public:
  explicit Simulation(const PredictSpec& spec);
  RunData run();

 private:
  size_t queue_size() const { return queue_.size() - head_; }
  // The request at queue position i (0: the oldest).
  const Queued& queued(size_t i) const { return admitted_[queue_[head_ + i]]; }
  TimePoint head_expiry() const {
    return head_ < queue_.size() ? queued(0).arrival + timeout_ : kNever;
  }
  TimePoint drain_until() const {
    const TimePoint t = sends_.drain_start();
    return t == kNever ? kNever : t + kDrainTimeout;
  }

  void timer(TimePoint t);
  void arrive(TimePoint t);
  // Into the batching queue: at arrival, or when the pool gave it back.
  void admit(uint32_t request, TimePoint arrival, TimePoint t);
  // The preprocess pool (PreprocessPool): free processes take the oldest
  // waiting requests; process `p` gives its request back at t.
  void pool_start(TimePoint t);
  void pool_done(size_t p, TimePoint t);
  size_t staged() const { return pool_busy_ + (pool_wait_.size() - pool_head_); }
  // What preparing `n` requests adds to a lane's batch (preprocess_workers 0).
  Duration lane_prepare(size_t n);
  void complete(size_t lane, TimePoint t);
  void back(size_t lane, TimePoint t);
  void stop(TimePoint t);
  void lead(size_t lane, TimePoint t);
  bool lead_once(size_t lane, TimePoint t);
  void cut(size_t n, BatchReason reason, TimePoint t, size_t lane);
  // Moves the queued requests at positions `picked` (rising) into `members`.
  void take(const std::vector<size_t>& picked, std::vector<uint32_t>& members);
  void take_expired(TimePoint t);
  Duration run_time(size_t batch, size_t busy, uint32_t longest);
  void finish();

  const PredictSpec& spec_;
  const Options& o_;
  std::unique_ptr<Strategy> strategy_;
  RateEstimator rate_;
  Sends sends_;
  Jitter jitter_;
  Jitter overhead_;  // draws each request's measured overhead
  // The lanes' turnaround measured with this configuration's lanes.
  const Turnaround turnaround_;
  size_t returning_ = 0;  // lanes in their turnaround
  const bool jittered_;
  const Duration timeout_;
  // The load driver's stalls, where the cost measured them.
  std::optional<SendLagDraw> lag_;
  // By lanes busy (1 up to the most measured at once, at most num_lanes;
  // one table when none was) and batch size.
  std::vector<std::vector<Duration>> cost_;   // without jitter
  std::vector<std::vector<double>> cost_us_;  // with jitter
  // By batch size, with jitter: run time over t(b) at u = 0, 1/64, ..., 1,
  // filled the first time a batch of that size runs (a run sees few sizes).
  std::vector<std::array<double, kJitterSteps + 1>> factors_;
  std::vector<bool> has_factors_;
  // The streak's slow part (a unit Gaussian AR(1)); NaN before the first draw.
  double slow_ = std::numeric_limits<double>::quiet_NaN();
  double gaussian();
  // The quantile a batch's run time is drawn at: uniform, or from a Gaussian
  // correlated with the batches before (CostModel::streak()).
  // The quantile of a batch's jitter, and in `state` the slow state's
  // factor (1 without one).
  double jitter_quantile(double& state);
  RunData run_;
  std::vector<Queued> admitted_;  // every admitted request, in admission order
  // The queue: positions in admitted_, oldest first, from head_ on (a
  // padding policy may take some from the middle).
  std::vector<uint32_t> queue_;
  size_t head_ = 0;
  std::vector<uint32_t> spare_;  // what a cut from the middle leaves behind
  std::vector<size_t> picked_;
  // Lengths vary: the padding policy picks; buckets: the engine's
  // per-bucket counts since the leader last decided (basic_engine.h).
  const bool lengths_;
  std::array<uint32_t, kMaxLengthBuckets + 1> bucket_count_{};
  uint32_t bucket_wake_at_ = 0;
  int cut_bucket_ = -1;
  // The preprocess pool, where the options run one and the cost measured
  // it; else requests are admitted as they arrive. A lane prepares its
  // batch itself at preprocess_workers 0 where the cost measured that.
  const bool pooled_;
  const bool lane_prepares_;
  std::vector<TimePoint> pool_end_;  // by process: when its request is back; kNever when free
  std::vector<PoolJob> pool_job_;    // by process: its request
  std::vector<PoolJob> pool_wait_;   // waiting for a process, oldest from pool_head_
  size_t pool_head_ = 0;
  size_t pool_busy_ = 0;
  Jitter prep_;  // draws each request's preprocess time
  std::vector<Lane> lanes_;
  size_t busy_ = 0;
  Followers followers_;
  int leader_ = -1;  // the lane parked as leader, -1 when none
  TimePoint leader_until_ = kNever;
  size_t wake_at_size_ = 1;
  uint64_t next_batch_id_ = 1;
  uint32_t peak_depth_ = 0;
  bool stopping_ = false;
  std::vector<RequestRecord> records_;    // one batch's, for observe()
  std::vector<uint32_t> record_lengths_;  // their lengths, where they vary
  TimePoint last_event_;
  TimePoint latest_done_;
};

}  // namespace batchscope::predict_detail

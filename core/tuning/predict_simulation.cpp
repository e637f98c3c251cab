// SPDX-License-Identifier: GPL-3.0-or-later
// The predictor's event loop (predict_simulation.h). Each handler mirrors a
// piece of BasicEngine (basic_engine_lanes.h, basic_engine_queue.h,
// basic_engine_deadlines.h) or of the load driver, named in its comment.

#include "tuning/predict_simulation.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>
#include <utility>

#include "common/saturate.h"
#include "tuning/adaptive_planner.h"

namespace batchscope::predict_detail {

namespace {

AdaptivePlanner planner_for(const PredictSpec& spec) {
  if (spec.plan_on_cost && spec.options.strategy == StrategyKind::kAdaptive) {
    return plan_on_cost(spec.plan_cost ? *spec.plan_cost : spec.cost);
  }
  return make_adaptive_plan;
}

}  // namespace

Simulation::Simulation(const PredictSpec& spec)
    : spec_(spec),
      o_(spec.options),
      strategy_(make_strategy(spec.options.strategy, planner_for(spec))),
      sends_(spec.arrivals, spec.start),
      jitter_{spec.seed},
      overhead_{spec.seed ^ 0x5deece66dULL},
      turnaround_(spec.cost.turnaround(spec.options.num_lanes)),
      jittered_(spec.cost.has_jitter()),
      timeout_(milliseconds(spec.options.request_timeout_ms)),
      lengths_(!spec.lengths.empty()),
      pooled_(spec.options.preprocess_workers > 0 && !spec.cost.preprocess().pool.empty()),
      lane_prepares_(spec.options.preprocess_workers == 0 &&
                     !spec.cost.preprocess().lane_us.empty()),
      pool_end_(pooled_ ? spec.options.preprocess_workers : 0, kNever),
      pool_job_(pool_end_.size()),
      prep_{spec.seed ^ 0x9fb21c651e98df25ULL},
      lanes_(spec.options.num_lanes),
      followers_(spec.options.num_lanes),
      records_(spec.options.max_batch_size),
      record_lengths_(lengths_ ? spec.options.max_batch_size : 0),
      last_event_(spec.start),
      latest_done_(spec.start) {
  const size_t max_batch = o_.max_batch_size;
  // Beyond the most lanes measured every count costs the same: no table.
  const size_t tables = spec.cost.lanes().empty()
                            ? 1
                            : std::min<size_t>(lanes_.size(), spec.cost.lanes().back().lanes);
  cost_.resize(tables);
  cost_us_.resize(jittered_ ? tables : 0);
  for (size_t busy = 1; busy <= tables; ++busy) {
    for (size_t b = 0; b <= max_batch; ++b) {
      cost_[busy - 1].push_back(spec.cost.cost(b, busy, lanes_.size()));
      if (jittered_) cost_us_[busy - 1].push_back(spec.cost.cost_us(b, busy, lanes_.size()));
    }
  }
  if (jittered_) {
    factors_.resize(max_batch + 1);
    has_factors_.resize(max_batch + 1);
  }
  if (const SendLagModel& lag = spec.cost.send_lag(o_.num_lanes); !lag.empty()) {
    lag_.emplace(lag, spec.seed ^ 0x2545f4914f6cdd1dULL);
  }
  const size_t expected = expected_sends(spec.arrivals);
  run_.requests.reserve(expected);
  admitted_.reserve(expected);
  if (pooled_) pool_wait_.reserve(expected);
  queue_.reserve(expected);
  for (Lane& l : lanes_) l.members.reserve(max_batch);
  run_.config.pattern = spec.arrivals.describe();
  run_.config.target = "predict";
  run_.config.model = spec.cost.describe();
  run_.config.options = o_;
  run_.config.duration_s = spec.arrivals.duration_s;
  run_.config.seed = spec.arrivals.seed;
  run_.start = spec.start;
  // Lanes start in order; the first leads (parked, idle) and the rest follow.
  leader_ = 0;
  for (size_t lane = 1; lane < lanes_.size(); ++lane) followers_.push(lane);
}

RunData Simulation::run() {
  for (;;) {
    const TimePoint t_timer = leader_ >= 0 ? leader_until_ : head_expiry();
    TimePoint t_done = kNever;
    size_t done_lane = 0;
    for (size_t i = 0; busy_ > 0 && i < lanes_.size(); ++i) {
      const Lane& l = lanes_[i];
      if (l.busy &&
          (l.end < t_done || (l.end == t_done && l.batch.id < lanes_[done_lane].batch.id))) {
        t_done = l.end;
        done_lane = i;
      }
    }
    TimePoint t_back = kNever;
    size_t back_lane = 0;
    for (size_t i = 0; returning_ > 0 && i < lanes_.size(); ++i) {
      if (lanes_[i].back < t_back) t_back = lanes_[i].back, back_lane = i;
    }
    TimePoint t_pool = kNever;
    size_t pool_p = 0;
    for (size_t i = 0; pool_busy_ > 0 && i < pool_end_.size(); ++i) {
      if (pool_end_[i] < t_pool) t_pool = pool_end_[i], pool_p = i;
    }
    const TimePoint t_send = sends_.next();
    const bool outstanding = busy_ > 0 || queue_size() > 0 || staged() > 0;
    const TimePoint t_stop = !stopping_ && outstanding ? drain_until() : kNever;
    const TimePoint t = std::min({t_timer, t_done, t_back, t_pool, t_send, t_stop});
    if (t == kNever) break;
    last_event_ = t;
    if (t_timer == t) {
      timer(t);
    } else if (t_done == t) {
      complete(done_lane, t);
    } else if (t_back == t) {
      back(back_lane, t);
    } else if (t_pool == t) {
      pool_done(pool_p, t);
    } else if (t_send == t) {
      // Meant to go now: it goes now, or when the driver's stall ends.
      // A lane on a timer: the leader parked while requests wait for a batch.
      const bool timed = leader_ >= 0 && queue_size() > 0;
      if (!lag_ ||
          sends_.delay_to(lag_->send(sends_.intended(), busy_, timed, sends_.last_sent()), t)) {
        arrive(t);
      }
    } else {
      stop(t);
    }
  }
  finish();
  return std::move(run_);
}

// The parked leader's deadline (lead), or with no leader the reaper's.
void Simulation::timer(TimePoint t) {
  if (leader_ >= 0) {
    lead(static_cast<size_t>(leader_), t);
  } else {
    take_expired(t);
  }
}

// submit(), as the load driver calls it.
void Simulation::arrive(TimePoint t) {
  const size_t index = run_.requests.size();
  RunRequest& r = run_.requests.emplace_back();
  r.index = index;
  r.intended = sends_.intended();
  r.sent = t;
  sends_.sent(t);
  // submit_staged(): requests being prepared count against the capacity.
  if (queue_size() + staged() >= o_.queue_capacity) {
    r.done = t;
    r.outcome = Outcome::kRejected;
    sends_.rejected();
    return;
  }
  if (pooled_) {
    pool_wait_.push_back({static_cast<uint32_t>(index), t});
    pool_start(t);
    return;
  }
  admit(static_cast<uint32_t>(index), t, t);
}

// PreprocessPool::process_loop: each free process takes the oldest request
// waiting, and runs it for a draw of the pool's time with that many
// processes (and lanes) busy.
void Simulation::pool_start(TimePoint t) {
  for (size_t p = 0; p < pool_end_.size() && pool_head_ < pool_wait_.size(); ++p) {
    if (pool_end_[p] != kNever) continue;
    ++pool_busy_;
    const std::vector<double>& q = spec_.cost.preprocess().pool_us(pool_busy_ + busy_);
    const double us = CostModel::quantile_of(q, 0.5 * (prep_.next() + 1.0));
    pool_end_[p] = t + std::max(Duration(1), Duration(std::llround(us * 1000.0)));
    pool_job_[p] = pool_wait_[pool_head_++];
  }
  if (pool_head_ == pool_wait_.size()) {
    pool_wait_.clear();
    pool_head_ = 0;
  }
}

// BasicEngine::prepared(): admitted with its arrival, once prepared.
void Simulation::pool_done(size_t p, TimePoint t) {
  const PoolJob job = pool_job_[p];
  pool_end_[p] = kNever;
  --pool_busy_;
  pool_start(t);
  admit(job.request, job.arrival, t);
}

// admit_locked(): queued, and the leader woken as the engine wakes it.
void Simulation::admit(uint32_t index, TimePoint arrival, TimePoint t) {
  const uint32_t length = lengths_ ? spec_.lengths[index % spec_.lengths.size()] : 0;
  admitted_.push_back({index, arrival, length, t});
  queue_.push_back(saturate_u32(admitted_.size() - 1));
  // A full batch in one bucket: the leader decides again (admit_locked).
  const bool filled = bucket_wake_at_ > 0 && o_.padding == Padding::kBuckets &&
                      ++bucket_count_[length_bucket(o_, length)] >= bucket_wake_at_;
  rate_.observe(t);
  peak_depth_ = std::max(peak_depth_, saturate_u32(queue_size()));
  const TimePoint expires = arrival + timeout_;
  if (leader_ >= 0) {
    if (queue_size() >= wake_at_size_ || expires < leader_until_ || filled) {
      lead(static_cast<size_t>(leader_), t);
    }
  } else if (!followers_.empty()) {
    lead(followers_.pop(), t);
  }
}

// run_batch_locked() after the runner returns, then the lane's way back to lane_loop.
void Simulation::complete(size_t lane, TimePoint t) {
  Lane& l = lanes_[lane];
  l.busy = false;
  l.end = kNever;
  --busy_;
  const BatchRecord& b = l.batch;
  // The overhead of answering a batch this size (by its size band).
  const std::vector<double>& overhead = spec_.cost.overheads_us(o_.num_lanes, b.size);
  const bool measured = !overhead.empty();
  TimePoint latest = t;
  for (size_t k = 0; k < b.size; ++k) {
    TimePoint completed = t + spec_.engine_overhead;
    if (measured) {
      const double us = CostModel::quantile_of(overhead, 0.5 * (overhead_.next() + 1.0));
      completed += Duration(std::llround(us * 1000.0));
    }
    latest = std::max(latest, completed);
    const Queued& q = admitted_[l.members[k]];
    RunRequest& r = run_.requests[q.request];
    r.done = completed;
    r.outcome = Outcome::kOk;
    r.batch_id = b.id;
    r.batch_size = b.size;
    RequestRecord& rec = records_[k];
    rec.id = l.members[k] + 1;  // the engine numbers admitted requests from 1
    rec.batch_id = b.id;
    rec.times = {q.arrival, q.admitted, b.batched, b.run_start, b.run_end, completed};
    rec.batch_size = b.size;
    rec.outcome = Outcome::kOk;
    if (lengths_) record_lengths_[k] = q.length;
    sends_.answered(completed);
  }
  latest_done_ = std::max(latest_done_, latest);
  if (run_.batches.size() < kRecordCapacity) run_.batches.push_back(b);
  strategy_->observe(b, std::span<const RequestRecord>(records_.data(), b.size),
                     std::span<const uint32_t>(record_lengths_.data(), lengths_ ? b.size : 0), o_);
  // The strategy's slow work takes no virtual time: done and applied at once.
  if (StrategyTask task = strategy_->take_task()) {
    if (StrategyApply apply = task()) apply(*strategy_);
  }
  const double turn_us = turnaround_.us(b.size);
  if (turn_us > 0) {
    l.back = t + Duration(std::max<int64_t>(1, std::llround(turn_us * 1000.0)));
    ++returning_;
    return;
  }
  back(lane, t);
}

// lane_loop once run_batch_locked() has answered every request: the lane leads
// again, or follows the leader there is.
void Simulation::back(size_t lane, TimePoint t) {
  if (lanes_[lane].back != kNever) {
    lanes_[lane].back = kNever;
    --returning_;
  }
  if (leader_ >= 0) {
    followers_.push(lane);
  } else {
    lead(lane, t);
  }
}

// stop(StopMode::kDrain) after the load driver gave up waiting: the leader
// wakes and every later decision dispatches what is queued.
void Simulation::stop(TimePoint t) {
  stopping_ = true;
  if (leader_ >= 0) lead(static_cast<size_t>(leader_), t);
}

// lane_loop around lead_locked(): a lane that cuts a batch hands the lead to a
// follower while requests remain.
void Simulation::lead(size_t lane, TimePoint t) {
  while (lead_once(lane, t) && !followers_.empty() && queue_size() > 0) lane = followers_.pop();
}

// One lead_locked(): true when it cut a batch for `lane`, false when `lane` parked
// as the leader.
bool Simulation::lead_once(size_t lane, TimePoint t) {
  take_expired(t);
  leader_ = -1;
  if (stopping_ && queue_size() == 0) return false;  // lane_should_exit_locked
  QueueView q;
  q.size = queue_size();
  if (q.size > 0) q.oldest_arrival = queued(0).arrival;
  q.arrival_rate_per_s = rate_.rate(t);
  q.fast_rate_per_s = rate_.fast_rate(t);
  q.idle_lanes = saturate_u32(lanes_.size() - busy_);
  Decision d;
  if (stopping_) {
    d = Decision::dispatch(std::min<size_t>(q.size, o_.max_batch_size), BatchReason::kDrain);
    cut_bucket_ = -1;  // buckets: the head's
  } else if (o_.padding == Padding::kBuckets) {
    const BucketChoice c = decide_in_buckets(
        o_, strategy_->limits(q, o_), q, t, q.size, [this](size_t i) { return queued(i).length; },
        [this](size_t i) { return queued(i).arrival; });
    bucket_count_ = c.count;
    bucket_wake_at_ = c.wake_at;
    cut_bucket_ = c.bucket;
    d = c.decision;
  } else {
    bucket_wake_at_ = 0;
    d = strategy_->decide(q, t, o_);
  }
  if (d.kind == Decision::Kind::kDispatch && d.count > 0) {
    cut(std::min(d.count, q.size), d.reason, t, lane);
    return true;
  }
  const bool wait = d.kind == Decision::Kind::kWait;
  leader_ = static_cast<int>(lane);
  leader_until_ = std::min(wait ? d.until : kNever, head_expiry());
  wake_at_size_ = wait ? d.wake_at_size : 1;
  return false;
}

void Simulation::cut(size_t n, BatchReason reason, TimePoint t, size_t lane) {
  const uint32_t depth_before = saturate_u32(queue_size());
  Lane& l = lanes_[lane];
  BatchRecord& b = l.batch;
  b = BatchRecord{};
  // A padding policy may take requests from the middle of the queue; where
  // lengths do not vary, each takes the head's n as longest does (cut_locked()).
  if (lengths_ && o_.padding != Padding::kLongest) {
    pick_by_length(
        o_, n, queue_size(), cut_bucket_, [this](size_t i) { return queued(i).length; }, picked_);
    n = picked_.size();
  } else {
    picked_.clear();
  }
  cut_bucket_ = -1;
  b.oldest_arrival = queued(picked_.empty() ? 0 : picked_.front()).arrival;
  take(picked_, l.members);
  if (picked_.empty()) {
    for (size_t k = 0; k < n; ++k) l.members.push_back(queue_[head_ + k]);
    head_ += n;
  }
  if (head_ == queue_.size()) {
    queue_.clear();
    head_ = 0;
  }
  for (uint32_t m : l.members) {
    b.longest = std::max(b.longest, admitted_[m].length);
    b.length_sum += admitted_[m].length;
  }
  b.id = next_batch_id_++;
  b.size = saturate_u32(n);
  b.reason = reason;
  b.lane = static_cast<uint16_t>(lane);
  b.batched = t;
  b.queue_depth_after = saturate_u32(queue_size());
  if (run_.depth.size() < kRecordCapacity) {
    run_.depth.push_back({t, depth_before, std::max(peak_depth_, depth_before)});
  }
  b.run_start = t;
  b.run_end = t + run_time(n, busy_ + 1, b.longest);
  if (lane_prepares_) b.run_end += lane_prepare(n);
  l.busy = true;
  l.end = b.run_end;
  ++busy_;
  sends_.unblock(t);
}

void Simulation::take(const std::vector<size_t>& picked, std::vector<uint32_t>& members) {
  members.clear();
  if (picked.empty()) return;
  if (picked.back() + 1 == picked.size()) {  // rising: positions 0..n-1, the head's
    for (size_t k = 0; k < picked.size(); ++k) members.push_back(queue_[head_ + k]);
    head_ += picked.size();
    return;
  }
  spare_.clear();
  size_t j = 0;
  for (size_t i = 0; i < queue_size(); ++i) {
    if (j < picked.size() && picked[j] == i) {
      members.push_back(queue_[head_ + i]);
      ++j;
    } else {
      spare_.push_back(queue_[head_ + i]);
    }
  }
  queue_.swap(spare_);
  head_ = 0;
}

void Simulation::take_expired(TimePoint t) {
  const size_t before = head_;
  for (; head_ < queue_.size() && queued(0).arrival + timeout_ <= t; ++head_) {
    RunRequest& r = run_.requests[queued(0).request];
    r.done = t;
    r.outcome = Outcome::kTimedOut;
    sends_.answered(t);
  }
  if (head_ != before) {
    if (head_ == queue_.size()) {
      queue_.clear();
      head_ = 0;
    }
    latest_done_ = std::max(latest_done_, t);
    sends_.unblock(t);
  }
}

double Simulation::gaussian() {
  // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
  const double u1 = 1.0 - 0.5 * (jitter_.next() + 1.0);
  const double u2 = 0.5 * (jitter_.next() + 1.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

double Simulation::jitter_quantile(double& state) {
  const JitterStreak& k = spec_.cost.streak(o_.num_lanes);
  state = 1.0;
  if (k.weight <= 0) return 0.5 * (jitter_.next() + 1.0);
  slow_ =
      std::isnan(slow_) ? gaussian() : k.rho * slow_ + std::sqrt(1 - k.rho * k.rho) * gaussian();
  if (k.sigma > 0) {  // the slow state multiplies; the size's own jitter is drawn apart
    state = std::exp(k.sigma * slow_);
    return 0.5 * (jitter_.next() + 1.0);
  }
  const double z = std::sqrt(k.weight) * slow_ + std::sqrt(1 - k.weight) * gaussian();
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

// At least a nanosecond: a batch that took no time would let a closed loop
// send again at the same instant, for ever.
Duration Simulation::run_time(size_t batch, size_t busy, uint32_t longest) {
  const size_t table = std::min(busy, cost_.size()) - 1;
  const double extra_us = spec_.cost.length_extra_us(batch, longest);
  Duration d;
  if (batch >= cost_[table].size() || !jittered_) {
    d = batch >= cost_[table].size() ? spec_.cost.cost(batch, busy, lanes_.size())
                                     : cost_[table][batch];
    if (extra_us != 0.0) d = lengthen(d, extra_us);
  } else {
    auto& f = factors_[batch];
    if (!has_factors_[batch]) {
      for (size_t k = 0; k <= kJitterSteps; ++k) {
        f[k] = spec_.cost.jitter_factor(batch, static_cast<double>(k) / kJitterSteps);
      }
      has_factors_[batch] = true;
    }
    double state = 1.0;
    const double pos = jitter_quantile(state) * kJitterSteps;
    const size_t lo = std::min(static_cast<size_t>(pos), kJitterSteps - 1);
    const double factor = f[lo] + (f[lo + 1] - f[lo]) * (pos - static_cast<double>(lo));
    const double us = (cost_us_[table][batch] + extra_us) * factor * state;
    d = Duration(std::llround(std::clamp(us, 0.0, kMaxCostUs) * 1000.0));
  }
  return std::max(d, Duration(1));
}

Duration Simulation::lane_prepare(size_t n) {
  const std::vector<double>& q = spec_.cost.preprocess().lane_us;
  double us = 0;
  for (size_t k = 0; k < n; ++k) us += CostModel::quantile_of(q, 0.5 * (prep_.next() + 1.0));
  return Duration(std::llround(std::min(us, kMaxCostUs) * 1000.0));
}

// Ledger::drain(), then the depth sample drain_records() takes after stop().
void Simulation::finish() {
  const TimePoint gave_up = drain_until();
  if (gave_up != kNever && latest_done_ > gave_up) {
    for (RunRequest& r : run_.requests) {
      if (r.done <= gave_up) continue;
      r.done = gave_up;
      r.outcome = Outcome::kModelError;
      r.batch_id = 0;
      r.batch_size = 0;
    }
  }
  const TimePoint end = std::max(last_event_, std::min(latest_done_, gave_up));
  const uint32_t depth = saturate_u32(queue_size());
  run_.depth.push_back({end, depth, std::max(peak_depth_, depth)});
}

}  // namespace batchscope::predict_detail

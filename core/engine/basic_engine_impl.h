#pragma once
// Definitions of BasicEngine's members. Included by the few files that
// instantiate the template (engine.cpp, batched_fn.h), not by its users.

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "basic_engine.h"

namespace batchscope {

namespace engine_detail {
inline uint32_t u32(size_t v) { return static_cast<uint32_t>(std::min<size_t>(v, UINT32_MAX)); }
}  // namespace engine_detail

template <class In, class Out>
BasicEngine<In, Out>::BasicEngine(RunnerFactory factory, Options options,
                                  std::shared_ptr<Clock> clock)
    : factory_(std::move(factory)),
      clock_(clock ? std::move(clock) : std::make_shared<SteadyClock>()),
      options_(options),
      strategy_(make_strategy(options.strategy)) {}

template <class In, class Out>
BasicEngine<In, Out>::~BasicEngine() {
  stop(StopMode::kFail);
}

template <class In, class Out>
Status BasicEngine<In, Out>::start() {
  Options o;
  {
    std::lock_guard g(mu_);
    if (started_) return invalid_argument("the engine was already started");
    o = options_;
  }
  if (Status s = o.validate(); !s) return s;
  std::vector<std::unique_ptr<Runner>> runners;
  for (uint32_t i = 0; i < o.num_lanes; ++i) {
    std::string why;
    try {
      runners.push_back(factory_(static_cast<int>(i)));
    } catch (const std::exception& e) {
      runners.push_back(nullptr);
      why = e.what();
    }
    if (!runners.back()) {
      return Error{ErrorCode::kModelError, "could not make the runner for lane " +
                                               std::to_string(i) + (why.empty() ? "" : ": " + why)};
    }
  }
  {
    std::lock_guard g(mu_);
    started_ = true;
    target_lanes_ = o.num_lanes;
  }
  reaper_ = std::thread([this] { reaper_loop(); });
  spawn_lanes(o.num_lanes, std::move(runners));
  return Status::Ok();
}

template <class In, class Out>
void BasicEngine<In, Out>::spawn_lanes(uint32_t count, std::vector<std::unique_ptr<Runner>> runners) {
  std::lock_guard lg(lanes_mu_);
  if (threads_.size() < count) threads_.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    {
      std::lock_guard g(mu_);
      if (stopping_ || i >= target_lanes_) return;
      if (lane_running_.size() <= i) lane_running_.resize(i + 1, false);
      if (lane_running_[i]) continue;
      lane_running_[i] = true;
    }
    if (threads_[i].joinable()) threads_[i].join();  // a retired lane on its way out
    std::unique_ptr<Runner> r = i < runners.size() ? std::move(runners[i]) : nullptr;
    threads_[i] = std::thread([this, i, r = std::move(r)]() mutable {
      lane_thread(static_cast<int>(i), std::move(r));
    });
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::lane_thread(int lane, std::unique_ptr<Runner> runner) {
  if (!runner) {
    std::string why;
    try {
      runner = factory_(lane);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!runner) {
      std::lock_guard g(mu_);
      lane_error_ = "could not make the runner for lane " + std::to_string(lane) +
                    (why.empty() ? "" : ": " + why);
      lane_running_[lane] = false;
      return;
    }
  }
  lane_loop(lane, *runner);
  runner.reset();  // a model instance is released on the thread that used it
}

template <class In, class Out>
bool BasicEngine<In, Out>::lane_should_exit(int lane) const {
  if (static_cast<uint32_t>(lane) >= target_lanes_) return true;
  return stopping_ && (stop_mode_ == StopMode::kFail || queue_.empty());
}

template <class In, class Out>
void BasicEngine<In, Out>::lane_loop(int lane, Runner& runner) {
  LaneScratch s;
  BatchRecord batch;
  std::unique_lock lk(mu_);
  ++live_lanes_;
  while (!lane_should_exit(lane)) {
    if (leader_present_) {
      ++followers_waiting_;
      follower_cv_.wait(lk);
      --followers_waiting_;
      continue;
    }
    leader_present_ = true;
    promote_pending_ = false;
    const bool got_batch = lead(lane, lk, s, batch);
    leader_present_ = false;
    // Hand the lead on only when there is work for it; otherwise the next
    // arrival promotes a follower, so an idle engine sleeps without churn.
    if (followers_waiting_ > 0 && !promote_pending_ && (!queue_.empty() || !got_batch)) {
      promote_pending_ = true;
      ++counters_.wakeups;
      follower_cv_.notify_one();
    }
    if (!promote_pending_ && !queue_.empty()) arm_reaper_locked(earliest_expiry());
    if (!got_batch) break;
    ++busy_lanes_;
    run_batch(runner, lk, s, batch);
    --busy_lanes_;
  }
  // A follower woken to lead may be this exiting lane; pass the turn on.
  if (!leader_present_ && followers_waiting_ > 0) {
    promote_pending_ = true;
    ++counters_.wakeups;
    follower_cv_.notify_one();
  }
  --live_lanes_;
  lane_running_[lane] = false;
}

template <class In, class Out>
bool BasicEngine<In, Out>::lead(int lane, std::unique_lock<std::mutex>& lk, LaneScratch& s,
                                BatchRecord& batch) {
  for (;;) {
    if (lane_should_exit(lane)) return false;
    TimePoint now = clock_->now();
    take_expired(now, s.unrun);
    if (!s.unrun.empty()) {
      lk.unlock();
      fail_all(s.unrun, ErrorCode::kTimedOut, "", now);
      lk.lock();
      continue;
    }
    const QueueView q = view(now);
    Decision d;
    if (stopping_) {
      d = Decision::dispatch(std::min<size_t>(q.size, options_.max_batch_size), BatchReason::kDrain);
    } else {
      d = strategy_->decide(q, now, options_);
    }
    if (d.kind == Decision::Kind::kDispatch && d.count > 0) {
      cut(d.count, d.reason, now, lane, s, batch);
      return true;
    }
    TimePoint until = d.kind == Decision::Kind::kWait ? d.until : kNever;
    until = std::min(until, earliest_expiry());
    wake_at_size_ = d.kind == Decision::Kind::kWait ? d.wake_at_size : 1;
    leader_until_ = until;
    leader_parked_ = true;
    wake_pending_ = false;
    clock_->wait_until(lk, leader_cv_, until);
    leader_parked_ = false;
    wake_pending_ = false;
  }
}

template <class In, class Out>
QueueView BasicEngine<In, Out>::view(TimePoint now) const {
  QueueView q;
  q.size = queue_.size();
  if (!queue_.empty()) q.oldest_arrival = queue_.front().times.arrival;
  q.arrival_rate_per_s = arrivals_.rate(now);
  return q;
}

template <class In, class Out>
void BasicEngine<In, Out>::cut(size_t n, BatchReason reason, TimePoint now, int lane,
                               LaneScratch& s, BatchRecord& b) {
  n = std::min(n, queue_.size());
  const uint32_t depth_before = engine_detail::u32(queue_.size());
  s.inputs.clear();
  s.metas.clear();
  b = BatchRecord{};
  b.oldest_arrival = queue_.front().times.arrival;
  for (size_t i = 0; i < n; ++i) {
    Pending& p = queue_.front();
    s.inputs.push_back(std::move(p.input));
    s.metas.push_back(Meta{p.id, std::move(p.done), p.times});
    queue_.pop_front();
  }
  if (expiries_.size() > 2 * queue_.size() + 64) {  // drop departed requests' entries
    expiries_.clear();
    for (const Pending& p : queue_) expiries_.push_back({p.expires, p.id});
    std::make_heap(expiries_.begin(), expiries_.end(), std::greater<>());
  }
  b.id = next_batch_id_++;
  b.size = engine_detail::u32(n);
  b.reason = reason;
  b.lane = static_cast<uint16_t>(lane);
  b.batched = now;
  b.queue_depth_after = engine_detail::u32(queue_.size());
  ++counters_.batches;
  ++counters_.batches_by_reason[static_cast<int>(reason)];
  if (records_.depth.size() < record_capacity_) {
    records_.depth.push_back({now, depth_before, std::max(peak_depth_, depth_before)});
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::run_batch(Runner& runner, std::unique_lock<std::mutex>& lk,
                                     LaneScratch& s, BatchRecord& batch) {
  lk.unlock();
  const size_t n = s.inputs.size();
  batch.run_start = clock_->now();
  Expected<std::vector<Out>> result = Error{ErrorCode::kInternal, "the runner did not run"};
  try {
    result = runner.run(std::span<In>(s.inputs));
  } catch (const std::exception& e) {
    result = Error{ErrorCode::kModelError, std::string("the model failed: ") + e.what()};
  } catch (...) {
    result = Error{ErrorCode::kModelError, "the model failed with an unknown exception"};
  }
  batch.run_end = clock_->now();
  if (result.ok() && result->size() != n) {
    result = Error{ErrorCode::kModelError, "the runner returned " + std::to_string(result->size()) +
                                               " outputs for a batch of " + std::to_string(n)};
  }
  batch.failed = !result.ok();
  const TimePoint completed = clock_->now();
  s.records.clear();
  for (Meta& m : s.metas) {
    StageTimes& t = m.times;
    t.batched = batch.batched;
    t.run_start = batch.run_start;
    t.run_end = batch.run_end;
    t.completed = completed;
    s.records.push_back({m.id, batch.id, t, batch.size,
                         batch.failed ? Outcome::kModelError : Outcome::kOk});
  }
  lk.lock();
  // Counted before the callbacks run, so a caller that saw its response also
  // sees it in the counters.
  (batch.failed ? counters_.model_errors : counters_.ok) += n;
  if (batch.failed) ++counters_.failed_batches;
  for (const RequestRecord& r : s.records) record_request(r);
  if (records_.batches.size() < record_capacity_) {
    records_.batches.push_back(batch);
  } else if (record_capacity_ > 0) {
    ++records_.dropped;
    ++counters_.records_dropped;
  }
  strategy_->observe(batch, s.records, options_);
  lk.unlock();
  uint64_t callback_failures = 0;
  for (size_t i = 0; i < n; ++i) {
    Meta& m = s.metas[i];
    Response<Out> r{m.id,
                    batch.failed ? Expected<Out>(result.error())
                                 : Expected<Out>(std::move(result.value()[i])),
                    m.times, batch.id, batch.size};
    try {
      m.done(std::move(r));
    } catch (...) {
      ++callback_failures;
    }
    m.done = nullptr;  // release captured state on this thread, now
  }
  lk.lock();
  counters_.callback_exceptions += callback_failures;
}

template <class In, class Out>
void BasicEngine<In, Out>::record_request(const RequestRecord& r) {
  if (records_.requests.size() < record_capacity_) {
    records_.requests.push_back(r);
  } else if (record_capacity_ > 0) {
    ++records_.dropped;
    ++counters_.records_dropped;
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::record_unrun(const Pending& p, Outcome outcome, TimePoint now) {
  RequestRecord r{p.id, 0, p.times, 0, outcome};
  r.times.completed = now;
  record_request(r);
}

template <class In, class Out>
typename std::deque<typename BasicEngine<In, Out>::Pending>::iterator
BasicEngine<In, Out>::find_queued(RequestId id) {
  auto it = std::lower_bound(queue_.begin(), queue_.end(), id,
                             [](const Pending& p, RequestId v) { return p.id < v; });
  return (it != queue_.end() && it->id == id) ? it : queue_.end();
}

template <class In, class Out>
void BasicEngine<In, Out>::take_expired(TimePoint now, std::vector<Pending>& out) {
  while (!expiries_.empty() && expiries_.front().expires <= now) {
    std::pop_heap(expiries_.begin(), expiries_.end(), std::greater<>());
    const RequestId id = expiries_.back().id;
    expiries_.pop_back();
    auto it = find_queued(id);
    if (it == queue_.end()) continue;
    out.push_back(std::move(*it));
    queue_.erase(it);
  }
  for (const Pending& p : out) record_unrun(p, Outcome::kTimedOut, now);
  counters_.timed_out += out.size();
}

template <class In, class Out>
TimePoint BasicEngine<In, Out>::earliest_expiry() {
  while (!expiries_.empty() && find_queued(expiries_.front().id) == queue_.end()) {
    std::pop_heap(expiries_.begin(), expiries_.end(), std::greater<>());
    expiries_.pop_back();
  }
  return expiries_.empty() ? kNever : expiries_.front().expires;
}

template <class In, class Out>
void BasicEngine<In, Out>::fail_all(std::vector<Pending>& pending, ErrorCode code,
                                    const std::string& message, TimePoint now) {
  for (Pending& p : pending) {
    std::string why = message;
    if (code == ErrorCode::kTimedOut) {
      why = "timed out after " + std::to_string(to_ms(now - p.times.arrival)) +
            " ms in the queue before reaching the model";
    }
    StageTimes t = p.times;
    t.completed = now;
    try {
      p.done(Response<Out>{p.id, Error{code, std::move(why)}, t, 0, 0});
    } catch (...) {
      std::lock_guard g(mu_);
      ++counters_.callback_exceptions;
    }
  }
  pending.clear();
}

template <class In, class Out>
void BasicEngine<In, Out>::wake_leader_locked() {
  if (leader_parked_ && !wake_pending_) {
    wake_pending_ = true;
    ++counters_.wakeups;
    leader_cv_.notify_one();
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::arm_reaper_locked(TimePoint expires) {
  if (reaper_parked_ && !reaper_wake_pending_ && expires < reaper_until_) {
    reaper_wake_pending_ = true;
    ++counters_.wakeups;
    reaper_cv_.notify_one();
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::reaper_loop() {
  std::vector<Pending> expired;
  std::unique_lock lk(mu_);
  while (!reaper_exit_) {
    const TimePoint now = clock_->now();
    take_expired(now, expired);
    if (!expired.empty()) {
      lk.unlock();
      fail_all(expired, ErrorCode::kTimedOut, "", now);
      lk.lock();
      continue;
    }
    // A present leader arms deadlines itself.
    reaper_until_ = (leader_present_ || promote_pending_) ? kNever : earliest_expiry();
    reaper_parked_ = true;
    reaper_wake_pending_ = false;
    clock_->wait_until(lk, reaper_cv_, reaper_until_);
    reaper_parked_ = false;
    reaper_wake_pending_ = false;
  }
}

template <class In, class Out>
Expected<RequestId> BasicEngine<In, Out>::submit(In input, Done done, SubmitOptions so) {
  const TimePoint arrival = clock_->now();
  std::unique_lock lk(mu_);
  ++counters_.submitted;
  Error reject;
  if (!started_ || stopping_) {
    reject = {ErrorCode::kShuttingDown,
              started_ ? "the engine is shutting down" : "the engine is not running"};
  } else if (queue_.size() >= options_.queue_capacity) {
    reject = {ErrorCode::kQueueFull, "the queue is full (" + std::to_string(queue_.size()) +
                                         " waiting, queue_capacity " +
                                         std::to_string(options_.queue_capacity) + ")"};
  } else {
    const RequestId id = next_id_++;
    StageTimes times;
    times.arrival = arrival;
    times.admitted = clock_->now();
    TimePoint expires = arrival + milliseconds(options_.request_timeout_ms);
    if (so.deadline) expires = std::min(expires, *so.deadline);
    queue_.push_back(Pending{id, std::move(input), std::move(done), times, expires});
    expiries_.push_back({expires, id});
    std::push_heap(expiries_.begin(), expiries_.end(), std::greater<>());
    arrivals_.observe(arrival);
    peak_depth_ = std::max(peak_depth_, engine_detail::u32(queue_.size()));
    ++counters_.admitted;
    if (queue_.size() >= wake_at_size_ || expires < leader_until_) {
      wake_leader_locked();
    }
    if (!leader_present_ && followers_waiting_ > 0 && !promote_pending_) {
      promote_pending_ = true;
      ++counters_.wakeups;
      follower_cv_.notify_one();
    }
    if (!leader_present_ && !promote_pending_) arm_reaper_locked(expires);
    return id;
  }
  ++counters_.rejected;
  RequestRecord r;
  r.times.arrival = r.times.admitted = r.times.completed = arrival;
  r.outcome = Outcome::kRejected;
  record_request(r);
  lk.unlock();
  StageTimes t = r.times;
  done(Response<Out>{0, reject, t, 0, 0});
  return reject;
}

template <class In, class Out>
bool BasicEngine<In, Out>::cancel(RequestId id) {
  std::vector<Pending> gone;
  TimePoint now = clock_->now();
  {
    std::lock_guard g(mu_);
    auto it = find_queued(id);
    if (it == queue_.end()) return false;
    gone.push_back(std::move(*it));
    queue_.erase(it);
    ++counters_.cancelled;
    record_unrun(gone.back(), Outcome::kCancelled, now);
  }
  fail_all(gone, ErrorCode::kCancelled, "cancelled before it reached the model", now);
  return true;
}

template <class In, class Out>
Status BasicEngine<In, Out>::set_options(const Options& o) {
  if (Status s = o.validate(); !s) return s;
  bool grow = false;
  {
    std::lock_guard g(mu_);
    if (o.strategy != options_.strategy) strategy_ = make_strategy(o.strategy);
    const bool shrink = o.num_lanes < target_lanes_;
    options_ = o;
    ++version_;
    if (started_ && !stopping_) {
      grow = o.num_lanes > target_lanes_;
      target_lanes_ = o.num_lanes;
    }
    wake_leader_locked();
    if (shrink) follower_cv_.notify_all();
  }
  if (grow) spawn_lanes(o.num_lanes, {});
  return Status::Ok();
}

template <class In, class Out>
EngineStatus BasicEngine<In, Out>::status() const {
  const TimePoint now = clock_->now();
  std::lock_guard g(mu_);
  EngineStatus s;
  s.options = options_;
  s.options_version = version_;
  const QueueView q = view(now);
  s.limits = strategy_->limits(q, options_);
  s.queue_depth = queue_.size();
  s.busy_lanes = busy_lanes_;
  s.live_lanes = live_lanes_;
  s.arrival_rate_per_s = q.arrival_rate_per_s;
  s.running = started_ && !stopping_;
  s.quiescent = busy_lanes_ == 0 && leader_parked_ && !wake_pending_ && !promote_pending_ &&
                leader_until_ > now && reaper_parked_ && !reaper_wake_pending_ &&
                reaper_until_ > now;
  s.idle_until = s.quiescent ? std::min(leader_until_, reaper_until_) : now;
  s.lane_error = lane_error_;
  s.counters = counters_;
  return s;
}

template <class In, class Out>
void BasicEngine<In, Out>::drain_records(RecordBatch& out) {
  out.clear();
  const TimePoint now = clock_->now();
  std::lock_guard g(mu_);
  std::swap(out, records_);
  const uint32_t depth = engine_detail::u32(queue_.size());
  out.depth.push_back({now, depth, std::max(peak_depth_, depth)});
  peak_depth_ = depth;
}

template <class In, class Out>
void BasicEngine<In, Out>::set_record_capacity(size_t n) {
  std::lock_guard g(mu_);
  record_capacity_ = n;
}

template <class In, class Out>
void BasicEngine<In, Out>::stop(StopMode mode) {
  std::vector<Pending> failed;
  const TimePoint now = clock_->now();
  {
    std::lock_guard g(mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_mode_ = mode;
    }
    if (stop_mode_ == StopMode::kFail) {
      for (Pending& p : queue_) failed.push_back(std::move(p));
      queue_.clear();
      expiries_.clear();
    }
    leader_cv_.notify_all();
    follower_cv_.notify_all();
  }
  std::unique_lock lg(lanes_mu_);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  lg.unlock();
  {
    std::lock_guard g(mu_);
    reaper_exit_ = true;
    reaper_cv_.notify_all();
  }
  if (reaper_.joinable()) reaper_.join();
  // Whatever no lane was left to run (none could start, say) fails now.
  {
    std::lock_guard g(mu_);
    for (Pending& p : queue_) failed.push_back(std::move(p));
    queue_.clear();
    expiries_.clear();
    for (const Pending& p : failed) record_unrun(p, Outcome::kShuttingDown, now);
    counters_.shutdown += failed.size();
  }
  fail_all(failed, ErrorCode::kShuttingDown, "the engine stopped before this request ran", now);
}

}  // namespace batchscope

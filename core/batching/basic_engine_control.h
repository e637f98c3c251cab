// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BasicEngine, the controls: construction, start, validator, options, status,
// records and stop.
// Included through basic_engine_impl.h.

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "batching/basic_engine.h"

namespace batchscope {

template <class In, class Out>
BasicEngine<In, Out>::BasicEngine(RunnerFactory factory, Options options,
                                  std::shared_ptr<Clock> clock)
    : factory_(std::move(factory)),
      plan_inline_(clock != nullptr),
      clock_(clock ? std::move(clock) : std::make_shared<SteadyClock>()),
      options_(options),
      strategy_(make_strategy(options.strategy, nullptr)) {
  engine_detail::make_adaptive(mu_.native());
}

template <class In, class Out>
BasicEngine<In, Out>::~BasicEngine() {
  stop(StopMode::kFail);
}

template <class In, class Out>
Status BasicEngine<In, Out>::start() {
  Options o;
  {
    MutexLock g(mu_);
    if (started_) return invalid_argument("the engine was already started");
    o = options_;
    if (Status s = check_planner_locked(o); !s) return s;  // reads adaptive_planner_
  }
  if (Status s = o.validate(); !s) return s;
  if (stage_) {
    if (Status s = stage_->configure(o); !s) return s;
  }
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
    MutexLock g(mu_);
    started_ = true;
    target_lanes_ = o.num_lanes;
    reaper_ = std::thread([this] { reaper_loop(); });  // it waits for mu_ to begin
  }
  spawn_lanes(o.num_lanes, std::move(runners));
  // Serving starts once each lane has prepared its runner on its own thread.
  MutexLock lk(mu_);
  while (!(lanes_prepared_ >= std::min(o.num_lanes, target_lanes_) || stopping_)) {
    prepared_cv_.wait(lk.unique());
  }
  if (lanes_ready_ == 0 && !stopping_) {
    // Not one lane can serve: say why, as when a runner cannot be made.
    return Error{ErrorCode::kModelError, lane_error_};
  }
  return Status::Ok();
}

template <class In, class Out>
Status BasicEngine<In, Out>::set_validator(Validator v) {
  MutexLock g(mu_);
  if (started_) return invalid_argument("the validator must be set before start()");
  validator_ = std::move(v);
  return Status::Ok();
}

template <class In, class Out>
Status BasicEngine<In, Out>::set_length_of(LengthOf f) {
  MutexLock g(mu_);
  if (started_) return invalid_argument("the length function must be set before start()");
  length_of_ = std::move(f);
  return Status::Ok();
}

template <class In, class Out>
Status BasicEngine<In, Out>::set_prepare_stage(std::shared_ptr<PrepareStage> stage) {
  MutexLock g(mu_);
  if (started_) return invalid_argument("the prepare stage must be set before start()");
  stage_ = std::move(stage);
  return Status::Ok();
}

template <class In, class Out>
Status BasicEngine<In, Out>::set_adaptive_planner(AdaptivePlanner planner) {
  MutexLock g(mu_);
  if (started_) return invalid_argument("the adaptive planner must be set before start()");
  adaptive_planner_ = std::move(planner);
  strategy_ = make_strategy(options_.strategy, adaptive_planner_);
  ++strategy_generation_;
  return Status::Ok();
}

template <class In, class Out>
Status BasicEngine<In, Out>::check_planner_locked(const Options& o) const {
  if (o.strategy != StrategyKind::kAdaptive || adaptive_planner_) return Status::Ok();
  return invalid_argument(
      "strategy = adaptive needs a planner, and this engine was given none "
      "(set_adaptive_planner before start)");
}

template <class In, class Out>
Status BasicEngine<In, Out>::set_options(const Options& o) {
  if (Status s = o.validate(); !s) return s;
  bool grow = false;
  {
    MutexLock g(mu_);
    if (Status s = check_planner_locked(o); !s) return s;
    if (o.strategy != options_.strategy) {
      strategy_ = make_strategy(o.strategy, adaptive_planner_);
      ++strategy_generation_;
    }
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
  if (stage_) return stage_->configure(o);
  return Status::Ok();
}

template <class In, class Out>
EngineStatus BasicEngine<In, Out>::status() const {
  const TimePoint now = clock_->now();
  MutexLock g(mu_);
  EngineStatus s;
  s.options = options_;
  s.options_version = version_;
  const QueueView q = view_locked(now);
  s.limits = strategy_->limits(q, options_);
  s.queue_depth = queue_.size();
  s.preparing = staged_;
  s.busy_lanes = busy_lanes_;
  s.live_lanes = live_lanes_;
  s.arrival_rate_per_s = q.arrival_rate_per_s;
  s.running = started_ && !stopping_;
  const bool leader_at_rest =
      leader_present_ ? leader_parked_ && !wake_pending_ && leader_until_ > now : true;
  const uint32_t resting = followers_waiting_ + (leader_present_ ? 1 : 0);
  s.at_rest = leader_at_rest && !promote_pending_ && live_lanes_ == busy_lanes_ + resting &&
              reaper_parked_ && !reaper_wake_pending_ && reaper_until_ > now && !planner_busy_;
  s.quiescent = s.at_rest && busy_lanes_ == 0 && leader_present_;
  const TimePoint leader_until = leader_present_ ? leader_until_ : kNever;
  s.idle_until = s.at_rest ? std::min(leader_until, reaper_until_) : now;
  s.lane_error = lane_error_;
  s.counters = counters_;
  return s;
}

template <class In, class Out>
void BasicEngine<In, Out>::drain_records(RecordBatch& out) {
  out.clear();
  const TimePoint now = clock_->now();
  MutexLock g(mu_);
  std::swap(out, records_);
  const uint32_t depth = saturate_u32(queue_.size());
  out.depth.push_back({now, depth, std::max(peak_depth_, depth)});
  peak_depth_ = depth;
}

template <class In, class Out>
void BasicEngine<In, Out>::set_record_capacity(size_t n) {
  MutexLock g(mu_);
  record_capacity_ = n;
}

template <class In, class Out>
void BasicEngine<In, Out>::stop(StopMode mode) {
  std::vector<Pending> failed;
  {
    // Requests in the prepare stage come back before the queue closes, so
    // that a drain runs them and the stage never calls into a gone engine.
    MutexLock g(mu_);
    closing_ = true;
    while (staged_ > 0) staged_cv_.wait(g.unique());
  }
  const TimePoint now = clock_->now();
  {
    MutexLock g(mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_mode_ = mode;
    }
    if (stop_mode_ == StopMode::kFail) {
      take_all_locked(failed);
    }
    leader_bell_.ring();
    follower_cv_.notify_all();
    prepared_cv_.notify_all();
  }
  MutexLock lg(lanes_mu_);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  lg.unlock();
  // Each thread is moved out under the lock and joined without it (it takes
  // the lock to leave), so that stops on two threads never join one twice.
  std::thread reaper;
  {
    MutexLock g(mu_);
    reaper_exit_ = true;
    reaper = std::move(reaper_);
    reaper_cv_.notify_all();
  }
  if (reaper.joinable()) reaper.join();
  std::thread planner;
  {
    MutexLock g(mu_);
    planner_exit_ = true;
    planner_task_ = nullptr;
    planner = std::move(planner_);
    planner_cv_.notify_all();
  }
  if (planner.joinable()) planner.join();
  // Whatever no lane was left to run (none could start, say) fails now.
  {
    MutexLock g(mu_);
    take_all_locked(failed);
    for (const Pending& p : failed) record_unrun_locked(p, Outcome::kShuttingDown, now);
    counters_.shutdown += failed.size();
  }
  fail_all(failed, ErrorCode::kShuttingDown, "the engine stopped before this request ran", now);
}

}  // namespace batchscope

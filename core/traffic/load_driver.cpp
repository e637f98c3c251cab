// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/load_driver.h"

#include <condition_variable>
#include <deque>
#include <optional>
#include <unordered_map>

#include "common/mutex.h"
#include "traffic/progress_beat.h"

namespace batchscope {

Outcome outcome_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kQueueFull: return Outcome::kRejected;
    case ErrorCode::kTimedOut: return Outcome::kTimedOut;
    case ErrorCode::kCancelled: return Outcome::kCancelled;
    case ErrorCode::kShuttingDown: return Outcome::kShuttingDown;
    case ErrorCode::kInvalidArgument: return Outcome::kInvalid;
    case ErrorCode::kModelError:
    case ErrorCode::kUnavailable:
    case ErrorCode::kModelTimedOut:
    case ErrorCode::kInternal: return Outcome::kModelError;
  }
  return Outcome::kModelError;
}

void EngineTarget::send(uint64_t index, Done done) {
  engine_.submit(payload_(index), [done = std::move(done)](TensorResponse&& r) {
    Result res;
    res.outcome = r.result.ok() ? Outcome::kOk : outcome_of(r.result.error().code);
    res.batch_id = r.batch_id;
    res.batch_size = r.batch_size;
    done(res);
  });
}

namespace {

// The requests of a run while it is under way; completions fill them in.
class Ledger {
 public:
  Ledger(Clock& clock, const LoadOptions& o)
      : clock_(clock), keep_(o.keep_requests), counters_(o.counters), stop_(o.stop) {}

  uint64_t add(TimePoint intended, TimePoint sent) {
    MutexLock g(mu_);
    const uint64_t index = next_++;
    RunRequest& r = keep_ ? reqs_.emplace_back() : live_[index];
    r.index = index;
    r.intended = intended;
    r.sent = sent;
    ++outstanding_;
    if (counters_) ++counters_->sent;
    return index;
  }

  void done(uint64_t index, const LoadTarget::Result& res) {
    MutexLock g(mu_);
    if (closed_) return;  // an answer after the drain gave up: already counted as failed
    const TimePoint now = clock_.now();  // the clock may be gone once closed
    if (counters_) {
      (res.outcome == Outcome::kOk         ? counters_->ok
       : res.outcome == Outcome::kRejected ? counters_->rejected
                                           : counters_->failed)++;
    }
    if (!keep_) {
      live_.erase(index);
      --outstanding_;
      cv_.notify_all();
      return;
    }
    RunRequest& r = reqs_[index];
    answered_.push_back(index);
    r.done = now;
    r.outcome = res.outcome;
    r.http_status = res.http_status;
    r.batch_id = res.batch_id;
    r.batch_size = res.batch_size;
    --outstanding_;
    cv_.notify_all();
  }

  // Waits (through the clock) until `t`, or until fewer than `below` are
  // outstanding when below > 0, or until a stop is asked for (looked at
  // every kStopPoll). Returns the time then.
  TimePoint wait(TimePoint t, size_t below) {
    MutexLock lk(mu_);
    while (clock_.now() < t && (below == 0 || outstanding_ >= below) && !stopping()) {
      clock_.wait_until(lk.unique(), cv_, stop_ ? std::min(t, clock_.now() + kStopPoll) : t);
    }
    return clock_.now();
  }

  // Waits for every answer, at most until `until`; what is still missing is
  // recorded as an error then.
  // Afterwards late answers are ignored, so the ledger may go while the
  // target still holds callbacks into it (they share ownership).
  void drain(TimePoint until) {
    MutexLock lk(mu_);
    while (outstanding_ > 0 && clock_.now() < until) clock_.wait_until(lk.unique(), cv_, until);
    closed_ = true;
    if (outstanding_ == 0) return;
    if (counters_) counters_->failed += outstanding_;
    const TimePoint now = clock_.now();
    for (RunRequest& r : reqs_) {
      if (r.done == TimePoint{}) {
        r.done = now;
        r.outcome = Outcome::kModelError;
      }
    }
  }

  // The requests answered since the last call, in the order answered.
  std::vector<RunRequest> take_answered() {
    MutexLock g(mu_);
    std::vector<RunRequest> out;
    out.reserve(answered_.size());
    for (uint64_t i : answered_) out.push_back(reqs_[i]);
    answered_.clear();
    return out;
  }

  std::vector<RunRequest> take() {
    MutexLock g(mu_);
    return {reqs_.begin(), reqs_.end()};
  }

 private:
  Clock& clock_;
  const bool keep_;
  LoadCounters* counters_;
  const std::atomic<bool>* stop_;
  static constexpr Duration kStopPoll = std::chrono::milliseconds(20);
  bool stopping() const { return stop_ && stop_->load(); }
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<RunRequest> reqs_ GUARDED_BY(mu_);  // every request; stable references while it grows
  // In flight only, when not keeping.
  std::unordered_map<uint64_t, RunRequest> live_ GUARDED_BY(mu_);
  std::vector<uint64_t> answered_ GUARDED_BY(mu_);  // since the last take_answered()
  uint64_t next_ GUARDED_BY(mu_) = 0;
  size_t outstanding_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
};

}  // namespace

RunData run_load(const ArrivalSpec& spec, LoadTarget& target, RunConfig config, Clock& clock,
                 LoadOptions options) {
  const TightTimerSlack slack;  // each send at its intended time
  RunData run;
  run.config = std::move(config);
  run.start = clock.now();
  const TimePoint end = run.start + std::chrono::duration_cast<Duration>(
                                        std::chrono::duration<double>(spec.duration_s));
  const uint64_t cap = spec.max_requests > 0 ? spec.max_requests : UINT64_MAX;
  auto ledger_ptr = std::make_shared<Ledger>(clock, options);
  Ledger& ledger = *ledger_ptr;
  auto stopped = [&] { return options.stop && options.stop->load(); };
  // What was answered, handed over as the run goes (LoadOptions::progress).
  std::optional<ProgressBeat> feeder;
  if (options.progress && options.keep_requests) {
    options.progress(RunProgress{run.start, {}, {}, {}});
    feeder.emplace(clock, run.start, options.progress_every, [&] {
      options.progress(RunProgress{run.start, ledger.take_answered(), {}, {}});
    });
  }
  auto send = [&](TimePoint intended, TimePoint sent) {
    const uint64_t i = ledger.add(intended, sent);
    target.send(i, [ledger_ptr, i](const LoadTarget::Result& r) { ledger_ptr->done(i, r); });
  };

  if (spec.pattern == Pattern::kClosed) {
    const size_t n = std::max<uint32_t>(spec.concurrency, 1);
    for (uint64_t sent = 0; sent < cap && !stopped();) {
      const TimePoint now = ledger.wait(end, n);  // until a slot frees, or the end
      if (now >= end || stopped()) break;
      send(now, now);
      ++sent;
    }
  } else {
    ArrivalSchedule schedule(spec);
    uint64_t sent = 0;
    while (sent < cap && !stopped()) {
      const std::optional<Duration> offset = schedule.next();
      if (!offset) break;
      const TimePoint intended = run.start + *offset;
      if (intended >= end) break;
      const TimePoint now = ledger.wait(intended, 0);
      if (stopped()) break;
      send(intended, now);
      ++sent;
    }
  }
  ledger.drain(clock.now() + options.drain_timeout);
  feeder.reset();
  run.requests = ledger.take();
  return run;
}

}  // namespace batchscope

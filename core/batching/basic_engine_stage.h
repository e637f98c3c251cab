// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BasicEngine, the prepare stage (runner.h's BasicPrepareStage): a request
// handed to the stage at submit, and admitted, or answered with the stage's
// error, when the stage gives it back. stop() waits for the stage
// (basic_engine_control.h). Included through basic_engine_impl.h.

#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "batching/basic_engine.h"

namespace batchscope {

template <class In, class Out>
Expected<RequestId> BasicEngine<In, Out>::submit_staged(In&& input, Done&& done,
                                                        const SubmitOptions& so,
                                                        TimePoint arrival) {
  std::optional<Error> reject;
  {
    MutexLock g(mu_);
    if (!started_ || stopping_ || closing_) {
      reject = Error{ErrorCode::kShuttingDown,
                     started_ ? "the engine is shutting down" : "the engine is not running"};
    } else if (staged_ + queue_.size() >= options_.queue_capacity) {
      reject = Error{ErrorCode::kQueueFull, "the queue is full (" + std::to_string(queue_.size()) +
                                                " waiting and " + std::to_string(staged_) +
                                                " being prepared, queue_capacity " +
                                                std::to_string(options_.queue_capacity) + ")"};
    }
    if (!reject) {
      ++staged_;
    } else {
      ++counters_.submitted;
      ++counters_.rejected;
      RequestRecord r;
      r.times = engine_detail::refused_at(arrival);
      r.outcome = Outcome::kRejected;
      record_request_locked(r);
    }
  }
  if (reject) {
    done(Response<Out>{0, *reject, engine_detail::refused_at(arrival), 0, 0});
    return *reject;
  }
  try {
    stage_->prepare(std::move(input),
                    typename PrepareStage::Next(typename PrepareStage::Next::Timed(
                        [this, done = std::move(done), so, arrival](Expected<In>&& got,
                                                                    TimePoint started) mutable {
                          prepared(std::move(got), std::move(done), so, arrival, started);
                        })));
  } catch (...) {  // out of memory handing it over: the stage never took it
    prepared(Error{ErrorCode::kInternal, "the request could not be handed to the prepare stage"},
             std::move(done), so, arrival, TimePoint{});
  }
  return RequestId{0};
}

template <class In, class Out>
void BasicEngine<In, Out>::prepared(Expected<In>&& input, Done&& done, const SubmitOptions& so,
                                    TimePoint arrival, TimePoint started) {
  const TimePoint now = clock_->now();
  if (!input.ok()) {
    RequestRecord r;
    r.times = engine_detail::refused_at(arrival);
    r.times.admitted = r.times.completed = now;
    // An input the stage could not read is the request's fault, as one the
    // validator refuses; anything else the model's.
    const bool invalid = input.error().code == ErrorCode::kInvalidArgument;
    r.outcome = invalid ? Outcome::kInvalid : Outcome::kModelError;
    {
      MutexLock g(mu_);
      ++counters_.submitted;
      ++(invalid ? counters_.invalid : counters_.model_errors);
      record_request_locked(r);
    }
    try {
      done(Response<Out>{0, input.error(), r.times, 0, 0});
    } catch (...) {
      MutexLock g(mu_);
      ++counters_.callback_exceptions;
    }
  } else {
    const uint32_t length = length_of_ ? length_of_(*input) : stage_->length(*input);
    MutexLock lk(mu_);
    Expected<RequestId> id =
        admit_locked(std::move(*input), std::move(done), arrival, now, so, length);
    if (id) {
      queue_.back().times.prepare_start = started;
      const Wakes w = after_admit_locked(queue_.back().expires);
      lk.unlock();
      notify(w);
    } else {
      lk.unlock();
      try {
        done(Response<Out>{0, id.error(), engine_detail::refused_at(arrival), 0, 0});
      } catch (...) {
        MutexLock g(mu_);
        ++counters_.callback_exceptions;
      }
    }
  }
  MutexLock g(mu_);
  if (--staged_ == 0) staged_cv_.notify_all();
}

}  // namespace batchscope

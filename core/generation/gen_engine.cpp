// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/gen_engine.h"

#include <algorithm>

namespace batchscope {

GenEngine::GenEngine(std::unique_ptr<LmRunner> runner, Options options,
                     std::shared_ptr<Clock> clock)
    : runner_(std::move(runner)),
      info_(runner_->info()),
      clock_(clock ? std::move(clock) : std::make_shared<SteadyClock>()),
      sched_(std::make_unique<GenScheduler>(*runner_, *clock_)),
      options_(options) {}

GenEngine::~GenEngine() { stop(Duration::zero()); }

Status check_cache(const LmInfo& m) {
  if (m.num_blocks * static_cast<int64_t>(m.block_size) < m.context_length) {
    return invalid_argument("the cache holds " + std::to_string(m.num_blocks) + " blocks of " +
                            std::to_string(m.block_size) +
                            " tokens, less than one full context of " +
                            std::to_string(m.context_length));
  }
  return Status::Ok();
}

Status GenEngine::start() {
  std::lock_guard lk(mu_);
  if (started_) return Status::Ok();
  if (Status s = options_.validate(); !s) return s;
  if (Status s = check_cache(info_); !s) return s;
  started_ = true;
  thread_ = std::thread([this] { loop(); });
  return Status::Ok();
}

Expected<uint64_t> GenEngine::submit(GenRequest request) {
  if (Status s = sched_->check(request); !s) return s.error();
  const TimePoint now = clock_->now();
  std::lock_guard lk(mu_);
  if (stopping_ || !started_) {
    ++counts_.rejected;
    return Error{ErrorCode::kShuttingDown, "the engine is not serving"};
  }
  if (queued_ >= options_.queue_capacity) {
    ++counts_.rejected;
    return Error{ErrorCode::kQueueFull, "the waiting queue is full (" +
                                            std::to_string(options_.queue_capacity) + " requests)"};
  }
  const uint64_t id = next_id_++;
  const TimePoint deadline = now + milliseconds(options_.request_timeout_ms);
  inbox_.push_back({id, std::move(request), now, deadline});
  ++queued_;
  ++counts_.admitted;
  cv_.notify_one();
  return id;
}

void GenEngine::cancel(uint64_t id) {
  std::lock_guard lk(mu_);
  cancels_.push_back(id);
  cv_.notify_one();
}

Status GenEngine::set_options(const Options& options) {
  if (Status s = options.validate(); !s) return s;
  std::lock_guard lk(mu_);
  options_ = options;
  ++version_;
  cv_.notify_one();
  return Status::Ok();
}

GenStatus GenEngine::status() const {
  std::lock_guard lk(mu_);
  GenStatus s = counts_;
  s.version = version_;
  s.options = options_;
  s.waiting = queued_;
  s.running = running_;
  s.blocks_used = blocks_used_;
  s.blocks_total = sched_->blocks_total();
  s.stopping = stopping_;
  return s;
}

void GenEngine::drain(std::vector<GenRecord>& requests, std::vector<StepRecord>& steps) {
  requests.clear();
  steps.clear();
  std::lock_guard lk(mu_);
  requests.swap(done_records_);
  steps.swap(step_records_);
}

void GenEngine::set_record_capacity(size_t n) {
  std::lock_guard lk(mu_);
  capacity_ = n;
}

void GenEngine::stop(Duration grace) {
  {
    std::lock_guard lk(mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_by_ = clock_->now() + grace;
    } else {
      stop_by_ = std::min(stop_by_, clock_->now() + grace);
    }
    cv_.notify_one();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

// Under mu_: the step's figures and records.
void GenEngine::keep(StepOutcome& out) {
  counts_.completed += out.finished.size();
  for (const GenRecord& r : out.finished) {
    if (r.reason == FinishReason::kError && !r.error.empty()) counts_.error = r.error;
  }
  if (out.step.step > 0) {
    ++counts_.steps;
    counts_.prompt_tokens += out.step.prefill_tokens;
    counts_.output_tokens += out.step.output_tokens;
    counts_.preemptions += out.step.preempted;
    if (capacity_ > 0) {
      if (step_records_.size() >= capacity_) step_records_.erase(step_records_.begin());
      step_records_.push_back(std::move(out.step));
    }
  } else {
    counts_.preemptions += out.step.preempted;
  }
  if (capacity_ == 0) return;
  for (GenRecord& r : out.finished) {
    if (done_records_.size() >= capacity_) done_records_.erase(done_records_.begin());
    done_records_.push_back(std::move(r));
  }
}

void GenEngine::loop() {
  const TightTimerSlack slack;  // a static batch's wait
  std::unique_lock lk(mu_);
  for (;;) {
    std::vector<Arrival> arrivals;
    arrivals.swap(inbox_);
    std::vector<uint64_t> cancels;
    cancels.swap(cancels_);
    const Options o = options_;
    const bool give_up = stopping_ && clock_->now() >= stop_by_;
    lk.unlock();

    for (Arrival& a : arrivals) sched_->add(a.id, std::move(a.request), a.arrival, a.deadline);
    for (uint64_t id : cancels) sched_->cancel(id);
    StepOutcome out;
    if (give_up) {
      out.finished = sched_->fail_all("the engine is stopping");
      out.ran = true;
    } else {
      out = sched_->step(o);
    }

    lk.lock();
    keep(out);
    queued_ = static_cast<uint32_t>(inbox_.size() + sched_->waiting());
    running_ = static_cast<uint32_t>(sched_->running());
    blocks_used_ = sched_->blocks_used();
    const bool empty = sched_->waiting() == 0 && sched_->running() == 0 && inbox_.empty();
    if (stopping_ && empty) break;
    if (!out.ran && inbox_.empty() && cancels_.empty()) {
      const TimePoint wake = stopping_ ? std::min(out.wake, stop_by_) : out.wake;
      clock_->wait_until(lk, cv_, wake);
    }
  }
  exit_ = true;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/gen_engine.h"

#include <algorithm>
#include <exception>

namespace batchscope {

struct GenEngine::Lane {
  int index = 0;
  std::unique_ptr<LmRunner> runner;  // its thread's, once that thread runs
  std::unique_ptr<GenScheduler> sched;
  std::condition_variable cv;
  std::thread thread;
  // Guarded by the engine's mu_, by hand: GUARDED_BY cannot name the
  // engine's mutex from a nested struct (the analysis would look for a mu_
  // of the lane's), so the compiler does not check these.
  std::vector<Arrival> inbox;
  std::vector<uint64_t> cancels;
  uint32_t queued = 0;  // inbox + waiting
  uint32_t running = 0;
  uint32_t blocks_used = 0;
  uint32_t blocks_total = 0;
  uint32_t outstanding = 0;     // given to it, on_done not yet called
  bool running_thread = false;  // its thread is on its way or in its loop
  bool ready = false;           // warm: takes requests
  bool retiring = false;        // takes no more; ends when it holds none
  bool prepared = false;        // made and warmed, or failed
  std::string failed;           // why its model could not be made
};

GenEngine::GenEngine(std::unique_ptr<LmRunner> runner, Options options,
                     std::shared_ptr<Clock> clock, LmFactory more)
    : info_(runner->info()),
      clock_(clock ? std::move(clock) : std::make_shared<SteadyClock>()),
      more_(std::move(more)),
      options_(options) {
  auto first = std::make_unique<Lane>();
  first->runner = std::move(runner);
  first->sched = std::make_unique<GenScheduler>(*first->runner, *clock_);
  first->blocks_total = first->sched->blocks_total();
  checker_ = first->sched.get();
  lanes_.push_back(std::move(first));
}

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

Status GenEngine::check_lanes(const Options& o) const {
  if (o.num_lanes > 1 && !more_) {
    return invalid_argument("num_lanes " + std::to_string(o.num_lanes) +
                            ": this engine has one model instance and no way to make more");
  }
  return Status::Ok();
}

Status GenEngine::start() {
  MutexLock lk(mu_);
  if (started_) return Status::Ok();
  if (Status s = options_.validate(); !s) return s;
  if (Status s = check_lanes(options_); !s) return s;
  if (Status s = check_cache(info_); !s) return s;
  started_ = true;
  set_lanes_locked(options_.num_lanes);
  while (!prepared_locked()) prepared_cv_.wait(lk.unique());
  for (const auto& l : lanes_) {
    if (l->failed.empty()) continue;
    const std::string why = l->failed;
    lk.unlock();
    stop(Duration::zero());
    return Error{ErrorCode::kModelError, why};
  }
  return Status::Ok();
}

bool GenEngine::prepared_locked() const {
  for (uint32_t i = 0; i < options_.num_lanes && i < lanes_.size(); ++i) {
    if (!lanes_[i]->prepared) return false;
  }
  return true;
}

void GenEngine::set_lanes_locked(uint32_t count) {
  for (uint32_t i = 0; i < lanes_.size(); ++i) {
    if (i >= count) {
      lanes_[i]->retiring = true;
      lanes_[i]->cv.notify_one();
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (i >= lanes_.size()) {
      lanes_.push_back(std::make_unique<Lane>());
      lanes_.back()->index = static_cast<int>(i);
    }
    Lane& l = *lanes_[i];
    l.retiring = false;
    if (l.running_thread) continue;
    // A lane that retired has ended its loop: its thread is on its way out.
    if (l.thread.joinable()) l.thread.join();
    l.running_thread = true;
    l.prepared = false;
    l.failed.clear();
    l.thread = std::thread([this, &l] { lane_thread(l); });
  }
}

void GenEngine::lane_thread(Lane& l) {
  const TightTimerSlack slack;  // a static batch's wait
  std::string why;
  uint32_t seqs, tokens;
  {
    MutexLock g(mu_);
    seqs = options_.max_num_seqs;
    tokens = options_.max_num_batched_tokens;
  }
  if (!l.runner) {
    try {
      l.runner = more_(l.index);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!l.runner && why.empty()) why = "no model was made";
    if (l.runner) {
      const LmInfo& m = l.runner->info();
      if (m.vocab_size != info_.vocab_size || m.context_length != info_.context_length ||
          m.block_size != info_.block_size) {
        why = "its model is not lane 0's (vocabulary, context or block size differ)";
        l.runner.reset();
      } else if (Status s = check_cache(m); !s) {
        why = s.message();
        l.runner.reset();
      }
    }
    if (l.runner) l.sched = std::make_unique<GenScheduler>(*l.runner, *clock_);
  }
  if (l.runner) {
    try {
      l.runner->warm_up(seqs, tokens);  // its failures are the real steps' to report
    } catch (const std::exception&) {
    }
  }
  {
    MutexLock g(mu_);
    l.prepared = true;
    if (!l.runner) {
      l.failed = "lane " + std::to_string(l.index) + " could not make its model: " + why;
      counts_.error = l.failed;
      l.running_thread = false;
    } else {
      l.ready = true;
      l.blocks_total = l.sched->blocks_total();
    }
  }
  prepared_cv_.notify_all();
  if (!l.runner) return;
  loop(l);
  if (l.index > 0) {
    // A model instance is released on the thread that used it.
    l.sched.reset();
    l.runner.reset();
  }
}

Expected<uint64_t> GenEngine::submit(GenRequest request) {
  if (Status s = checker_->check(request); !s) return s.error();
  const TimePoint now = clock_->now();
  MutexLock lk(mu_);
  if (stopping_ || !started_) {
    ++counts_.rejected;
    return Error{ErrorCode::kShuttingDown, "the engine is not serving"};
  }
  uint32_t queued = 0;
  Lane* to = nullptr;
  for (const auto& l : lanes_) {
    queued += l->queued;
    if (!l->ready || l->retiring) continue;
    if (!to || l->outstanding < to->outstanding) to = l.get();
  }
  if (queued >= options_.queue_capacity) {
    ++counts_.rejected;
    return Error{ErrorCode::kQueueFull, "the waiting queue is full (" +
                                            std::to_string(options_.queue_capacity) + " requests)"};
  }
  if (!to) {
    ++counts_.rejected;
    return Error{ErrorCode::kShuttingDown, "no lane is serving"};
  }
  const uint64_t id = next_id_++;
  const TimePoint deadline = now + milliseconds(options_.request_timeout_ms);
  to->inbox.push_back({id, std::move(request), now, deadline});
  ++to->queued;
  ++to->outstanding;
  ++counts_.admitted;
  to->cv.notify_one();
  return id;
}

void GenEngine::cancel(uint64_t id) {
  MutexLock lk(mu_);
  for (const auto& l : lanes_) {
    if (!l->ready) continue;
    l->cancels.push_back(id);  // an id a lane does not hold is ignored
    l->cv.notify_one();
  }
}

Status GenEngine::set_options(const Options& options) {
  if (Status s = options.validate(); !s) return s;
  if (Status s = check_lanes(options); !s) return s;
  MutexLock lk(mu_);
  options_ = options;
  ++version_;
  if (started_ && !stopping_) set_lanes_locked(options.num_lanes);
  for (const auto& l : lanes_) l->cv.notify_one();
  return Status::Ok();
}

GenStatus GenEngine::status() const {
  MutexLock lk(mu_);
  GenStatus s = counts_;
  s.version = version_;
  s.options = options_;
  for (const auto& l : lanes_) {
    s.waiting += l->queued;
    s.running += l->running;
    s.blocks_used += l->blocks_used;
    if (l->ready || l->index == 0) s.blocks_total += l->blocks_total;
    s.lanes += l->ready && !l->retiring;
    s.per_lane.push_back({l->ready && !l->retiring, l->queued,
                          static_cast<uint32_t>(l->inbox.size()), l->running, l->outstanding,
                          l->blocks_used, l->blocks_total});
  }
  s.stopping = stopping_;
  return s;
}

void GenEngine::drain(std::vector<GenRecord>& requests, std::vector<StepRecord>& steps) {
  requests.clear();
  steps.clear();
  MutexLock lk(mu_);
  requests.swap(done_records_);
  steps.swap(step_records_);
}

void GenEngine::set_record_capacity(size_t n) {
  MutexLock lk(mu_);
  capacity_ = n;
}

void GenEngine::stop(Duration grace) {
  std::vector<std::thread> threads;
  {
    MutexLock lk(mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_by_ = clock_->now() + grace;
    } else {
      stop_by_ = std::min(stop_by_, clock_->now() + grace);
    }
    for (const auto& l : lanes_) {
      l->cv.notify_one();
      if (l->thread.joinable() && l->thread.get_id() != std::this_thread::get_id()) {
        threads.push_back(std::move(l->thread));
      }
    }
  }
  for (std::thread& t : threads) t.join();
}

// The step's figures and records.
void GenEngine::keep_locked(Lane& lane, StepOutcome& out) {
  counts_.completed += out.finished.size();
  lane.outstanding -=
      std::min<uint32_t>(lane.outstanding, static_cast<uint32_t>(out.finished.size()));
  for (const GenRecord& r : out.finished) {
    if (r.reason == FinishReason::kError && !r.error.empty()) counts_.error = r.error;
  }
  if (out.step.step > 0) {
    ++counts_.steps;
    counts_.prompt_tokens += out.step.prefill_tokens;
    counts_.output_tokens += out.step.output_tokens;
    counts_.preemptions += out.step.preempted;
    out.step.lane = static_cast<uint32_t>(lane.index);
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

void GenEngine::loop(Lane& l) {
  GenScheduler& sched = *l.sched;
  MutexLock lk(mu_);
  for (;;) {
    std::vector<Arrival> arrivals;
    arrivals.swap(l.inbox);
    std::vector<uint64_t> cancels;
    cancels.swap(l.cancels);
    const Options o = options_;
    const bool give_up = stopping_ && clock_->now() >= stop_by_;
    lk.unlock();

    for (Arrival& a : arrivals) sched.add(a.id, std::move(a.request), a.arrival, a.deadline);
    for (uint64_t id : cancels) sched.cancel(id);
    StepOutcome out;
    if (give_up) {
      out.finished = sched.fail_all("the engine is stopping");
      out.ran = true;
    } else {
      out = sched.step(o);
    }

    lk.lock();
    keep_locked(l, out);
    l.queued = static_cast<uint32_t>(l.inbox.size() + sched.waiting());
    l.running = static_cast<uint32_t>(sched.running());
    l.blocks_used = sched.blocks_used();
    const bool empty = sched.waiting() == 0 && sched.running() == 0 && l.inbox.empty();
    if (empty && (stopping_ || l.retiring)) break;
    if (!out.ran && l.inbox.empty() && l.cancels.empty()) {
      const TimePoint wake = stopping_ ? std::min(out.wake, stop_by_) : out.wake;
      clock_->wait_until(lk.unique(), l.cv, wake);
    }
  }
  l.ready = false;
  l.running_thread = false;
  l.blocks_used = 0;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation engine: one thread runs a GenScheduler step after step over
// a generative model (LmRunner), continuous or static per the options in
// force, which may be retuned at any time (they apply from the next step).
//
// submit() checks a request and admits it or refuses it at once (invalid,
// queue full, stopping); an admitted request then gets its text as it is
// generated (on_text) and exactly one on_done, whatever happens: finished,
// cancelled, timed out (request_timeout_ms from arrival), a failed step, or
// the engine stopping.
//
// Thread-safety: all public methods are thread-safe and never wait for the
// model. Callbacks run on the engine's thread, never under its lock; they
// must not block and may call back into the engine.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/options.h"
#include "generation/gen_scheduler.h"
#include "generation/gen_types.h"
#include "generation/lm_runner.h"

namespace batchscope {

struct GenStatus {
  uint64_t version = 0;
  Options options;
  uint32_t waiting = 0;  // admitted, not running (inbox included)
  uint32_t running = 0;
  uint32_t blocks_used = 0;
  uint32_t blocks_total = 0;
  uint64_t steps = 0;
  uint64_t admitted = 0;
  uint64_t rejected = 0;  // refused at submit(): queue full or stopping
  uint64_t completed = 0;  // on_done called, any reason
  uint64_t prompt_tokens = 0;  // prefilled (recomputes included)
  uint64_t output_tokens = 0;
  uint64_t preemptions = 0;
  bool stopping = false;
  std::string error;  // the last failed step's message
};

// Ok when the model's cache holds one whole context, as start() requires.
Status check_cache(const LmInfo& model);

class GenEngine {
 public:
  // `clock` defaults to the steady clock. Invalid options are reported by start().
  GenEngine(std::unique_ptr<LmRunner> runner, Options options,
            std::shared_ptr<Clock> clock = nullptr);
  ~GenEngine();  // stop(0)
  GenEngine(const GenEngine&) = delete;
  GenEngine& operator=(const GenEngine&) = delete;

  Status start();
  // kInvalidArgument (naming the field), kQueueFull, kShuttingDown, or its id.
  Expected<uint64_t> submit(GenRequest request);
  // Ends the request at the next step (on_done with kCancelled); unknown ids are ignored.
  void cancel(uint64_t id);
  Status set_options(const Options& options);
  GenStatus status() const;
  const LmInfo& info() const { return info_; }

  // Hands over the records since the last call (requests without their
  // text, and steps). Beyond `capacity` of each, the oldest are dropped.
  void drain(std::vector<GenRecord>& requests, std::vector<StepRecord>& steps);
  void set_record_capacity(size_t n);

  // Refuses new requests, lets those admitted finish for up to `grace`,
  // then fails the rest (kError, "the engine is stopping"). Idempotent.
  void stop(Duration grace = std::chrono::seconds(10));

  const Clock& clock() const { return *clock_; }

 private:
  struct Arrival {
    uint64_t id;
    GenRequest request;
    TimePoint arrival;
    TimePoint deadline;
  };
  void loop();
  void keep(StepOutcome& out);

  std::unique_ptr<LmRunner> runner_;
  LmInfo info_;
  std::shared_ptr<Clock> clock_;
  std::unique_ptr<GenScheduler> sched_;  // the engine thread's, except check()

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_:
  Options options_;
  uint64_t version_ = 1;
  std::vector<Arrival> inbox_;
  std::vector<uint64_t> cancels_;
  uint64_t next_id_ = 1;
  // Inbox + waiting, against queue_capacity: a request counts until the end
  // of the step that admits it.
  uint32_t queued_ = 0;
  uint32_t running_ = 0;
  uint32_t blocks_used_ = 0;
  GenStatus counts_;
  std::vector<GenRecord> done_records_;
  std::vector<StepRecord> step_records_;
  size_t capacity_ = size_t{1} << 18;
  bool started_ = false;
  bool stopping_ = false;
  bool exit_ = false;
  TimePoint stop_by_ = kNever;
  std::thread thread_;
};

}  // namespace batchscope

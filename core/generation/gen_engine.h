// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation engine: each lane's thread runs a GenScheduler step after
// step over its own instance of a generative model (LmRunner) and its own
// cache, continuous or static per the options in force, which may be retuned
// at any time (they apply from the next step). Lanes are replicas behind a
// router: submit() gives each request to the lane with the fewest requests
// outstanding (admitted to it and not yet done), the lowest lane on a tie, as
// data-parallel replicas are balanced. `num_lanes` grows and shrinks live: a
// new lane makes its model (the factory), warms it and then takes requests; a
// retired one takes no more, finishes what it holds and releases its model.
// Each lane warms its model on its own thread before it takes requests, and
// start() returns once the first num_lanes lanes are warm.
//
// submit() checks a request and admits it or refuses it at once (invalid,
// queue full, stopping); an admitted request then gets its text as it is
// generated (on_text) and exactly one on_done, whatever happens: finished,
// cancelled, timed out (request_timeout_ms from arrival), a failed step, or
// the engine stopping.
//
// Thread-safety: all public methods are thread-safe; only start() (the
// warm-up) and stop() wait for the model. Callbacks run on a lane's thread,
// never under the engine's lock; they must not block and may call back into
// the engine.

#include <condition_variable>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/options.h"
#include "generation/gen_scheduler.h"
#include "generation/gen_types.h"
#include "generation/lm_runner.h"

namespace batchscope {

struct GenLaneStatus {
  bool ready = false;    // warm and taking requests
  uint32_t waiting = 0;  // given to it, not running (its inbox included)
  uint32_t inbox = 0;    // of them, not yet taken in by its scheduler
  uint32_t running = 0;
  uint32_t outstanding = 0;  // given to it, not yet done
  uint32_t blocks_used = 0;
  uint32_t blocks_total = 0;
};

struct GenStatus {
  uint64_t version = 0;
  uint32_t lanes = 0;  // lanes taking requests
  Options options;
  uint32_t waiting = 0;  // admitted, not running (inbox included)
  uint32_t running = 0;
  uint32_t blocks_used = 0;  // over every lane's cache
  uint32_t blocks_total = 0;
  uint64_t steps = 0;
  uint64_t admitted = 0;
  uint64_t rejected = 0;       // refused at submit(): queue full or stopping
  uint64_t completed = 0;      // on_done called, any reason
  uint64_t prompt_tokens = 0;  // prefilled (recomputes included)
  uint64_t output_tokens = 0;
  uint64_t preemptions = 0;
  bool stopping = false;
  std::string error;                    // the last failed step's message
  std::vector<GenLaneStatus> per_lane;  // by lane index, retired ones included
};

// Ok when the model's cache holds one whole context, as start() requires.
Status check_cache(const LmInfo& model);

// Makes lane `lane`'s model instance (lane 1 and on); called on that lane's
// thread. May throw or return null, which fails that lane with the message.
using LmFactory = std::function<std::unique_ptr<LmRunner>(int lane)>;

class GenEngine {
 public:
  // `runner` is lane 0's model; `more` makes the others (none: one lane, and
  // num_lanes above 1 is refused). `clock` defaults to the steady clock.
  // Invalid options are reported by start().
  GenEngine(std::unique_ptr<LmRunner> runner, Options options,
            std::shared_ptr<Clock> clock = nullptr, LmFactory more = {});
  ~GenEngine();  // stop(0)
  GenEngine(const GenEngine&) = delete;
  GenEngine& operator=(const GenEngine&) = delete;

  // Starts num_lanes lanes and waits until each has warmed its model; a lane
  // whose model cannot be made fails start() with its message.
  Status start();
  // kInvalidArgument (naming the field), kQueueFull, kShuttingDown, or its id.
  Expected<uint64_t> submit(GenRequest request);
  // Ends the request at the next step (on_done with kCancelled); unknown ids are ignored.
  void cancel(uint64_t id);
  // A num_lanes above 1 without a factory is refused, naming the value.
  Status set_options(const Options& options);
  GenStatus status() const;
  const LmInfo& info() const { return info_; }

  // Hands over the records since the last call (requests without their
  // text, and steps, each with its lane and that lane's step number, in
  // the order they ended). Beyond `capacity` of each, the oldest are dropped.
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
  struct Lane;
  Status check_lanes(const Options& o) const;
  // Starts lanes [0, o.num_lanes) that are not running and retires those
  // above.
  void set_lanes_locked(uint32_t count) REQUIRES(mu_);
  // Whether the first num_lanes lanes are made and warmed, or failed.
  bool prepared_locked() const REQUIRES(mu_);
  void lane_thread(Lane& lane);
  void loop(Lane& lane);
  void keep_locked(Lane& lane, StepOutcome& out) REQUIRES(mu_);

  LmInfo info_;
  std::shared_ptr<Clock> clock_;
  LmFactory more_;
  // Lane 0's scheduler checks requests (check() is const and reads only the
  // model's description, which every lane shares).
  GenScheduler* checker_ = nullptr;

  mutable Mutex mu_;
  std::condition_variable prepared_cv_;
  // A Lane's shared fields are mu_'s too; its runner and scheduler are its
  // thread's (Lane, gen_engine.cpp).
  std::vector<std::unique_ptr<Lane>> lanes_ GUARDED_BY(mu_);
  Options options_ GUARDED_BY(mu_);
  uint64_t version_ GUARDED_BY(mu_) = 1;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  GenStatus counts_ GUARDED_BY(mu_);
  std::vector<GenRecord> done_records_ GUARDED_BY(mu_);
  std::vector<StepRecord> step_records_ GUARDED_BY(mu_);
  size_t capacity_ GUARDED_BY(mu_) = size_t{1} << 18;
  bool started_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  TimePoint stop_by_ GUARDED_BY(mu_) = kNever;
};

}  // namespace batchscope

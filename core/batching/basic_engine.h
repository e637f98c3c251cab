// SPDX-License-Identifier: GPL-3.0-or-later
// The batching core: a bounded admission queue, a batch strategy and 1..N
// runner lanes. Generic over the request payload (In) and result (Out); the
// tensor Engine (engine.h) and BatchedFn (batched_fn.h) are instances of it.
//
// How it works. There is no separate scheduler thread: a free lane *is* the
// scheduler. At most one free lane leads; it asks the strategy, then either
// cuts a batch for itself or sleeps until the strategy's deadline. Other free
// lanes follow (sleep untimed). This binds batches late (a batch is cut only
// when a lane can run it at once), lets batches grow by themselves while every
// lane is busy, and needs no hand-off between a scheduler and a lane.
// Arrivals wake the leader only when they change its decision (the first
// arrival in an empty queue, a batch becoming full, or an earlier request
// deadline), so a batch costs at most a few cross-thread wake-ups and none at
// saturation.
//
// Request deadlines: the leader arms the earliest one too. While every lane
// is busy there is no leader, so a small reaper thread arms it instead; it is
// woken only when a new request would expire before what it has armed.
//
// Guarantees: every submit() ends in exactly one callback (result, or an
// Error: queue full, timed out, cancelled, model error, shutting down); no
// batch exceeds the effective max_batch_size; requests are cut in FIFO order;
// a request whose deadline passes while queued never reaches the model.
//
// Thread-safety: all public methods are thread-safe. submit() never blocks on
// the model; it takes one short lock. Callbacks run on lane threads (or on
// the caller's thread for rejections and cancel()), never under the lock, and
// may call back into the engine. Its helper types are basic_engine_types.h's.

#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "batching/basic_engine_types.h"
#include "batching/callback.h"
#include "batching/engine_types.h"
#include "batching/rate_estimator.h"
#include "batching/runner.h"
#include "common/doorbell.h"
#include "common/mutex.h"
#include "common/saturate.h"
#include "common/thread_annotations.h"

namespace batchscope {

template <class In, class Out>
class BasicEngine {
 public:
  using Runner = BasicRunner<In, Out>;
  using RunnerFactory = BasicRunnerFactory<In, Out>;
  using Done = Callback<void(Response<Out>&&)>;

  // `clock` defaults to the steady clock. Invalid options are reported by start().
  BasicEngine(RunnerFactory factory, Options options, std::shared_ptr<Clock> clock = nullptr);
  ~BasicEngine();  // stop(StopMode::kFail)
  BasicEngine(const BasicEngine&) = delete;
  BasicEngine& operator=(const BasicEngine&) = delete;

  // Makes the initial lanes' runners on the calling thread and starts them.
  // Fails if the options are invalid or a runner cannot be made.
  Status start() EXCLUDES(lanes_mu_, mu_);

  // Admits a request, or rejects it at once (kQueueFull, kShuttingDown). On
  // rejection `done` has already been called with the same error.
  Expected<RequestId> submit(In input, Done done, SubmitOptions options = {}) EXCLUDES(mu_);

  // Admits several requests under one lock (cheaper than as many submit()
  // calls): inputs[i] (moved from) is answered through dones[i] (moved from
  // when admitted), with consecutive ids in input order. A request the
  // validator refuses, or that finds the queue full or the engine stopping,
  // is answered at once as submit() answers it; the rest are admitted.
  // Returns the ids of those admitted, in input order. Inputs and callbacks
  // of different counts answer every callback with kInvalidArgument and
  // admit none.
  std::vector<RequestId> submit_many(std::span<In> inputs, std::span<Done> dones,
                                     SubmitOptions options = {}) EXCLUDES(mu_);

  // Checks each request before admission; a request it refuses is answered
  // at once with kInvalidArgument and never queued. Set before start().
  using Validator = std::function<Status(const In&)>;
  Status set_validator(Validator v) EXCLUDES(mu_);

  // A request's length where its inputs vary in size (request_length() for
  // tensors), taken at admission: each batch records its longest request and
  // the sum, so its padding waste follows. Set before start(); without it
  // every length is 0.
  using LengthOf = std::function<uint32_t(const In&)>;
  Status set_length_of(LengthOf f) EXCLUDES(mu_);

  // Who makes the adaptive strategy's plans (core/tuning's
  // make_adaptive_plan). Set before start(); without one, start() and
  // set_options() refuse strategy = adaptive.
  Status set_adaptive_planner(AdaptivePlanner planner) EXCLUDES(mu_);

  // A stage every request goes through before admission (runner.h's
  // BasicPrepareStage; a Python model's preprocess pool). Set before
  // start(). A request in the stage counts against queue_capacity; it is
  // admitted, with an id, once prepared, so submit() returns id 0 for it,
  // submit_many() no ids, and cancel() cannot reach it: it is answered
  // all the same. Its arrival time is when submit() was called, so its time
  // in the stage shows as the admitted time's lag and counts against its
  // timeout. stop() first waits for every request in the stage to come back.
  using PrepareStage = BasicPrepareStage<In>;
  Status set_prepare_stage(std::shared_ptr<PrepareStage> stage) EXCLUDES(mu_);

  // Fails a still-queued request with kCancelled. False if it was already
  // cut into a batch, completed, or unknown.
  bool cancel(RequestId id) EXCLUDES(mu_);

  // Validates and swaps in a full options value; takes effect at once (a
  // pending deadline is recomputed). Lanes are added or retired to match.
  Status set_options(const Options& options) EXCLUDES(lanes_mu_, mu_);
  EngineStatus status() const EXCLUDES(mu_);

  // Hands over the records gathered since the last call (vectors are swapped,
  // so `out` should be reused between calls). Records beyond a bound are
  // dropped and counted when nobody drains.
  void drain_records(RecordBatch& out) EXCLUDES(mu_);
  // How many request (and, separately, batch) records are buffered between
  // drains; beyond it they are dropped and counted. 0 keeps none, for users
  // that never drain. Default 1,048,576.
  void set_record_capacity(size_t n) EXCLUDES(mu_);

  // Stops admitting, finishes per `mode`, joins the lanes. Idempotent.
  void stop(StopMode mode = StopMode::kDrain) EXCLUDES(lanes_mu_, mu_);

  const Clock& clock() const { return *clock_; }

 private:
  using Pending = engine_detail::Pending<In, Done>;
  using Expiry = engine_detail::Expiry;
  using LaneScratch = engine_detail::LaneScratch<In, Pending>;

  // Lock contract: a member marked GUARDED_BY(mu_) is read or written only
  // under mu_, and a helper that runs under it says REQUIRES(mu_) and ends in
  // _locked; one that also lets go of the lock for a while (to run callbacks
  // or the model, or to sleep) holds it again when it returns. lanes_mu_ is
  // taken before mu_, never after.
  void spawn_lanes(uint32_t count, std::vector<std::unique_ptr<Runner>> runners)
      EXCLUDES(lanes_mu_, mu_);
  void lane_thread(int lane, std::unique_ptr<Runner> runner) EXCLUDES(mu_);
  void lane_loop(int lane, Runner& runner) EXCLUDES(mu_);
  // Leads until it cuts a batch (true) or the lane must exit (false). lk
  // holds mu_; it is let go while expired requests are answered and while
  // the leader sleeps.
  bool lead_locked(int lane, MutexLock& lk, LaneScratch& s, BatchRecord& batch) REQUIRES(mu_);
  // Runs the batch cut into `s` and answers it; lk (holding mu_) is let go
  // while the model and the callbacks run.
  void run_batch_locked(Runner& runner, MutexLock& lk, LaneScratch& s, BatchRecord& batch)
      REQUIRES(mu_);
  // Let go of mu_, and take it again, through lk (a lane's MutexLock on mu_)
  // in a function lk was passed to. NO_THREAD_SAFETY_ANALYSIS: the analysis
  // follows a MutexLock only in the function that made it, so it cannot see
  // that lk holds mu_; these two say so, and their callers are checked.
  void release_mu(MutexLock& lk) RELEASE(mu_) NO_THREAD_SAFETY_ANALYSIS;
  void reacquire_mu(MutexLock& lk) ACQUIRE(mu_) NO_THREAD_SAFETY_ANALYSIS;
  bool lane_should_exit_locked(int lane) const REQUIRES(mu_);
  QueueView view_locked(TimePoint now) const REQUIRES(mu_);
  void cut_locked(size_t n, BatchReason reason, TimePoint now, int lane, LaneScratch& s,
                  BatchRecord& b) REQUIRES(mu_);
  // Padding policies (options_.padding; basic_engine_padding.h). buckets:
  // the fifo rule with the strategy's limits on each length bucket alone;
  // the bucket it dispatches is left in cut_bucket_. The picks: positions in
  // queue_ of the n requests a cut takes under the policy, rising.
  Decision decide_buckets_locked(const QueueView& q, TimePoint now) REQUIRES(mu_);
  void pick_locked(size_t n, std::vector<size_t>& picked) REQUIRES(mu_);
  // Moves the queued requests at `picked` into `batch`, the rest keeping their order.
  void take_picked_locked(const std::vector<size_t>& picked, RingQueue<Pending>& batch)
      REQUIRES(mu_);
  // submit's parts: the validator (answers a refused request itself), one
  // request's admission or the reason it is refused (recorded; the caller
  // answers it unlocked), and the wake-ups an admission calls for.
  Status check_input(const In& input, TimePoint arrival, Done& done) EXCLUDES(mu_);
  // submit() with a prepare stage: hands the request to it (or answers it
  // at once when closing or full); prepared() admits what comes back
  // (`started`: when the stage began its own work; zero: not said).
  Expected<RequestId> submit_staged(In&& input, Done&& done, const SubmitOptions& so,
                                    TimePoint arrival) EXCLUDES(mu_);
  void prepared(Expected<In>&& input, Done&& done, const SubmitOptions& so, TimePoint arrival,
                TimePoint started) EXCLUDES(mu_);
  // strategy = adaptive needs adaptive_planner_.
  Status check_planner_locked(const Options& o) const REQUIRES(mu_);
  Expected<RequestId> admit_locked(In&& input, Done&& done, TimePoint arrival, TimePoint admitted,
                                   const SubmitOptions& so, uint32_t length) REQUIRES(mu_);
  // The sleeping engine threads an admission must wake. They are notified
  // after the lock is released, so that a woken thread does not at once
  // block on the lock its waker still holds.
  struct Wakes {
    bool leader = false, follower = false, reaper = false;
  };
  Wakes after_admit_locked(TimePoint earliest_new_expiry) REQUIRES(mu_);
  void notify(Wakes w) EXCLUDES(mu_);
  void take_expired_locked(TimePoint now, std::vector<Pending>& out) REQUIRES(mu_);
  TimePoint earliest_expiry_locked() REQUIRES(mu_);
  void add_expiry_locked(TimePoint expires, RequestId id) REQUIRES(mu_);
  void clear_expiries_locked() REQUIRES(mu_);  // the queue has emptied
  void prune_expiries_locked() REQUIRES(mu_);  // drops the entries of departed requests
  // From the heap's top, until a queued one.
  void drop_departed_expiries_locked() REQUIRES(mu_);
  // Empties the queue into out.
  void take_all_locked(std::vector<Pending>& out) REQUIRES(mu_);
  // The queued request with this id: its position, or queue_.size() if none.
  size_t find_queued_locked(RequestId id) const REQUIRES(mu_);
  void record_unrun_locked(const Pending& p, Outcome outcome, TimePoint now) REQUIRES(mu_);
  void record_request_locked(const RequestRecord& r) REQUIRES(mu_);
  // As many record_request_locked().
  void record_requests_locked(std::span<const RequestRecord> rs) REQUIRES(mu_);
  // Calls each request's callback with `error`; must be called unlocked.
  void fail_all(std::vector<Pending>& pending, ErrorCode code, const std::string& message,
                TimePoint now) EXCLUDES(mu_);
  void wake_leader_locked() REQUIRES(mu_);
  // Marks a wake-up of the parked leader (or the reaper, for a deadline
  // before the one it has armed) as sent; true when one is due.
  bool leader_wake_due_locked() REQUIRES(mu_);
  bool reaper_wake_due_locked(TimePoint expires) REQUIRES(mu_);
  void reaper_loop() EXCLUDES(mu_);
  // Called when no lane leads: makes sure the reaper watches the earliest deadline.
  void arm_reaper_locked(TimePoint expires) REQUIRES(mu_);
  // A strategy's slow work (Strategy::take_task) runs on a thread of its own,
  // started with the first task, so that no lane stalls on it; its result is
  // installed under the lock while the strategy is the one that asked (see
  // plan_inline_ for an injected clock).
  void hand_to_planner_locked(StrategyTask task) REQUIRES(mu_);
  void planner_loop() EXCLUDES(mu_);

  RunnerFactory factory_;
  // With an injected clock (tests, replays) a strategy's work runs on the lane,
  // taking no time on that clock, so runs are exactly repeatable; on the steady
  // clock it runs on the planner thread.
  const bool plan_inline_;
  std::shared_ptr<Clock> clock_;
  Validator validator_;                  // fixed once started; read without the lock
  LengthOf length_of_;                   // the same
  std::shared_ptr<PrepareStage> stage_;  // the same
  // Set before start(), like validator_, but read under mu_.
  AdaptivePlanner adaptive_planner_ GUARDED_BY(mu_) = nullptr;

  mutable Mutex mu_;
  // Thread-safe themselves: notified with or without mu_, waited on with it.
  Doorbell leader_bell_;  // the parked leader sleeps on it (common/doorbell.h)
  std::condition_variable follower_cv_;
  std::condition_variable reaper_cv_;
  std::condition_variable planner_cv_;
  std::condition_variable prepared_cv_;
  std::condition_variable staged_cv_;  // the stage has given back every request
  // Started by start() and moved out by stop(), both under mu_; stop() joins
  // it without mu_, which the reaper takes to leave.
  std::thread reaper_ GUARDED_BY(mu_);
  Options options_ GUARDED_BY(mu_);
  uint64_t version_ GUARDED_BY(mu_) = 1;
  std::unique_ptr<Strategy> strategy_ GUARDED_BY(mu_);
  uint64_t strategy_generation_ GUARDED_BY(mu_) = 0;  // bumped when strategy_ is replaced
  RingQueue<Pending> queue_ GUARDED_BY(mu_);          // ids strictly increasing front to back
  // Request deadlines (basic_engine_deadlines.h): the latest admitted since
  // the queue last emptied, and a min-heap of the requests that expire
  // before it; entries of departed requests are dropped lazily.
  TimePoint latest_expiry_ GUARDED_BY(mu_){};
  std::vector<Expiry> expiries_ GUARDED_BY(mu_);
  RequestId next_id_ GUARDED_BY(mu_) = 1;
  uint64_t next_batch_id_ GUARDED_BY(mu_) = 1;
  RateEstimator arrivals_ GUARDED_BY(mu_);
  bool started_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  // stop() has begun: the stage takes no more requests (stopping_ follows
  // once it has given back those it holds).
  bool closing_ GUARDED_BY(mu_) = false;
  uint32_t staged_ GUARDED_BY(mu_) = 0;  // requests in the prepare stage
  StopMode stop_mode_ GUARDED_BY(mu_) = StopMode::kDrain;
  uint32_t target_lanes_ GUARDED_BY(mu_) = 0;
  // Prepared and not yet gone, whether in the loop or entering it.
  uint32_t live_lanes_ GUARDED_BY(mu_) = 0;
  uint32_t busy_lanes_ GUARDED_BY(mu_) = 0;
  uint32_t followers_waiting_ GUARDED_BY(mu_) = 0;
  std::vector<bool> lane_running_ GUARDED_BY(mu_);
  bool leader_present_ GUARDED_BY(mu_) = false;
  bool leader_parked_ GUARDED_BY(mu_) = false;
  bool wake_pending_ GUARDED_BY(mu_) = false;     // the parked leader has been notified
  bool promote_pending_ GUARDED_BY(mu_) = false;  // a follower has been notified to lead
  TimePoint leader_until_ GUARDED_BY(mu_) = kNever;
  size_t wake_at_size_ GUARDED_BY(mu_) = 1;
  // padding = buckets: admissions per bucket since the leader last counted
  // them all, the count at which an admission into a bucket wakes the leader
  // (0: none does), and the bucket the leader's decision cuts from (-1: the
  // head's, as when draining).
  std::array<uint32_t, kMaxLengthBuckets + 1> bucket_count_ GUARDED_BY(mu_){};
  uint32_t bucket_wake_at_ GUARDED_BY(mu_) = 0;
  bool bucket_filled_ GUARDED_BY(mu_) = false;
  int cut_bucket_ GUARDED_BY(mu_) = -1;
  RingQueue<Pending> spare_ GUARDED_BY(mu_);  // what a cut from the middle leaves behind
  bool reaper_parked_ GUARDED_BY(mu_) = false;
  bool reaper_wake_pending_ GUARDED_BY(mu_) = false;
  bool reaper_exit_ GUARDED_BY(mu_) = false;
  TimePoint reaper_until_ GUARDED_BY(mu_) = kNever;
  // Started by a lane (hand_to_planner_locked), taken out to be joined by stop().
  std::thread planner_ GUARDED_BY(mu_);
  // The next to run, at most one (strategies ask one at a time).
  StrategyTask planner_task_ GUARDED_BY(mu_);
  uint64_t planner_generation_ GUARDED_BY(mu_) = 0;
  // A task waits or runs: the engine is not quiescent.
  bool planner_busy_ GUARDED_BY(mu_) = false;
  bool planner_exit_ GUARDED_BY(mu_) = false;
  std::string lane_error_ GUARDED_BY(mu_);
  // Lanes past Runner::prepare (or failed in it) since start().
  uint32_t lanes_prepared_ GUARDED_BY(mu_) = 0;
  uint32_t lanes_ready_ GUARDED_BY(mu_) = 0;  // of them, those that prepared
  EngineCounters counters_ GUARDED_BY(mu_);
  RecordBatch records_ GUARDED_BY(mu_);
  size_t record_capacity_ GUARDED_BY(mu_) = size_t{1} << 20;
  uint32_t peak_depth_ GUARDED_BY(mu_) = 0;

  Mutex lanes_mu_ ACQUIRED_BEFORE(mu_);  // taken before mu_, never after
  std::vector<std::thread> threads_ GUARDED_BY(lanes_mu_);
};

}  // namespace batchscope

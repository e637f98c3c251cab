// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The predictor: a discrete-event replay of a traffic pattern through the
// engine's admission queue and the real batching strategies, on a virtual
// clock, with a cost model standing in for the model. It answers "what would
// `batchscope bench --target inproc` report for these options?" in a fraction
// of a second, so a tuner can try thousands of configurations.
//
// What it mirrors (basic_engine*.h, load_driver.cpp, inproc_run.cpp):
//  - Traffic: the same ArrivalSchedule offsets the load driver sends, sent
//    on time (no send lag), stopping at duration_s or max_requests; closed:
//    `concurrency` requests in flight, each sent when one is answered.
//  - Lengths (a model whose inputs vary in length): request i has length
//    lengths[i % lengths.size()], as bench sends its pool of inputs in turn;
//    the padding policy (Options::padding) picks each batch's requests by
//    the engine's own rules (batching/length_policy.h), buckets decide and
//    wake the leader per bucket as the engine does, and a batch runs
//    t(b) + cost.length_extra_us(b, its longest).
//  - Preprocess (a cost that measured it, tuning/preprocess_cost.h): with
//    preprocess_workers above 0, each request first goes through that many
//    pool processes (BasicPrepareStage, python/preprocess_pool.h), oldest
//    first, taking a draw of the time measured with as many processes and
//    lanes busy as there are then, and is admitted when it is back, with
//    its arrival kept for its deadlines; requests in the pool count against
//    queue_capacity. With 0, each batch runs longer by a draw per request of
//    the lane's own preparing. A cost without it leaves both out.
//  - Admission: a full queue (queue_capacity) rejects at once; a request
//    still queued at arrival + request_timeout_ms times out then, never
//    reaching the model.
//  - Scheduling: num_lanes lanes; at most one free lane leads and asks the
//    strategy (make_strategy(options.strategy, make_adaptive_plan, or
//    plan_on_cost(cost) with plan_on_cost set), QueueView
//    with the engine's RateEstimator rate). It cuts batches from the head
//    (FIFO) or parks until the decision's deadline or the earliest request
//    deadline; an arrival wakes it only when the queue reaches the decision's
//    wake_at_size or the arrival's deadline is earlier, exactly as BasicEngine
//    does, so a strategy whose answer depends on the live rate sees the same
//    rate at the same moments. After a cut with requests left, a free lane
//    takes the lead at once; a lane that finishes while another leads becomes a
//    follower; a deadline that passes while every lane is busy means "cut as
//    soon as a lane frees". The strategy's observe() gets the BatchRecord and
//    the RequestRecords the engine would build.
//  - Records: a RunData like bench's: requests in send order, every batch,
//    and a depth sample at each cut plus a final one, with the engine's
//    record bound (1,048,576 batches and samples) and the load driver's
//    60 s wait for answers after its last send.
//
// Ties. On a real clock two events never happen at the same nanosecond; on a
// virtual one they do. At equal times the predictor takes, in this order:
// the leader's deadline (or, with no leader, a request deadline), then
// batch completions (the earlier-cut batch first), then arrivals in send
// order; each with all its consequences before the next. The one-lane
// engine on a ManualClock, driven the same way, gives identical records
// (tests/tuning/predictor_test.cpp checks this).
//
// Simplifications.
//  - A batch runs exactly cost.cost(b, busy, num_lanes), times a draw from its jitter
//    (cost.jitter_factor(b, u), u uniform, seeded by `seed`) when the model
//    has jitter: the measured quantiles, or uniform over +-spread;
//    no runner fails, no input is refused, nothing is cancelled. `busy` is
//    the number of lanes running when it starts, itself included: a model
//    profiled with lanes at once (profile --lanes) prices contention for one
//    GPU or the cores that way; a batch keeps the price it started with
//    when lanes start or finish beside it.
//  - engine_overhead, and a draw from the model's measured overhead when it
//    has one (as measured with the configuration's lanes, or the nearest
//    fewer: CostModel::overheads_us(lanes)), is added to each answered request's completion (and so
//    to its latency, what adaptive observes, and when a closed loop sends next); it does not hold
//    the lane.
//  - Which free lane leads or is promoted is a choice (the one free longest);
//    the live engine leaves it to the operating system, so lane numbers may
//    differ from a live run's with several lanes. A lane counts as idle (for
//    QueueView::idle_lanes) from its batch's end here, and once its answers
//    are delivered live, so with several lanes the adaptive strategy's
//    batches may differ too.
//  - A strategy's slow work (the adaptive strategy's planning) takes no
//    virtual time: it is done and applied when its batch completes, as the
//    engine does on an injected clock; on the steady clock it runs on the
//    engine's planner thread while the lanes go on, and is applied when done
//    (a millisecond or so later).
//  - A closed loop whose send is rejected (queue_capacity < concurrency)
//    sends again when the queue next shrinks, where the live driver would
//    retry at once in a tight loop.
//
// Speed: well under a microsecond of CPU per request (bench_engine's
// BM_Predictor): O(1) per event, one strategy decision per wake-up, and no
// allocation per request (the output vectors are reserved). Memory: the
// RunData (about 64 bytes a request) plus 16 bytes a request of bookkeeping.
// Thread-safety: pure functions of their argument; run them on any thread,
// several at once.

#include <cstdint>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/options.h"
#include "common/status.h"
#include "runs/run_record.h"
#include "traffic/arrivals.h"
#include "tuning/cost_model.h"

namespace batchscope {

struct PredictSpec {
  ArrivalSpec arrivals;
  Options options;
  CostModel cost;
  // Seeds the run-time jitter (independent of arrivals.seed, which seeds the
  // traffic).
  uint64_t seed = 1;
  // Added to each answered request's completion, for calibration against a
  // live run (the engine's own per-request cost). >= 0.
  Duration engine_overhead{0};
  // Time zero of the virtual run. Not the zero TimePoint, which records read
  // as "never reached".
  TimePoint start = TimePoint(std::chrono::seconds(1000));
  // The adaptive strategy plans on `cost` (plan_on_cost, as a live engine
  // handed that planner does) instead of its own fit (make_adaptive_plan).
  bool plan_on_cost = false;
  // What it plans on instead of `cost` where given: a band's or headroom's
  // prediction runs on a scaled cost while the live engine would still
  // plan on the kept one.
  std::optional<CostModel> plan_cost;
  // Each request's length, in turn (traffic/varied_inputs.h's
  // varied_lengths() draws bench's); empty: lengths do not vary.
  std::vector<uint32_t> lengths;

  // Ok, or kInvalidArgument naming the bad field (of options or arrivals, or
  // engine_overhead, start).
  Status validate() const;
};

// The run that `batchscope bench --target inproc` would record: config
// (pattern = arrivals.describe(), target "predict", model cost.describe()),
// requests, batches and depth samples. An invalid spec (validate() fails)
// gives a RunData with no requests.
RunData predict_run(const PredictSpec& spec);

// summarize_run(predict_run(spec), window).
RunSummary predict(const PredictSpec& spec, Duration window = std::chrono::seconds(1));

}  // namespace batchscope

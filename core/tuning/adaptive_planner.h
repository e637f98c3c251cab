// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The adaptive strategy's planner (batching/adaptive_plan.h owns the
// interface): for an arrival rate, the fifo limits (batch cap and wait) that
// serve Poisson traffic at that rate best on the model as fitted so far,
// found by replaying the traffic through the predictor, the same way
// `batchscope tune` searches, on a small grid.
//
// A plan holds two choices:
//  - efficient: among the candidates that lose at most kLossTolerance of
//    the requests and whose p99 is within kAdaptiveBudgetShare of the target,
//    the one that runs the fewest batches (fuller batches: less model time
//    per request), then the lowest p99;
//  - fast: the lowest p99 that loses at most kLossTolerance (the least lossy
//    when none does), then the fewest batches.
// The efficient choice falls back to the fast one when no candidate is within
// the budget.
//
// The grid: waits 0, t(1)/4, t(1)/2, t(1), 2 t(1) and a quarter of the
// target, each at most max_wait_us; for each, max_batch_size, then the caps
// 1 (with no wait only), 2, 4, ... below the largest batch max_batch_size
// cut (a cap above every batch changes nothing), leaving out caps whose lanes
// cannot serve the rate at all. Every candidate replays the same
// kAdaptivePlanRequests Poisson arrivals (common random numbers, so
// candidates differ only by their limits).
//
// Where lengths vary (the strategy hands over the latest ones), every
// candidate replays them, request i getting lengths[i % n], under the
// padding policy and buckets in force, and the efficient choice is the one
// with the least model time per request answered, padding included, rather
// than the fewest batches.
//
// Two planners. make_adaptive_plan, the default everywhere, plans on the
// strategy's own live fit, t(b) = a + c * b, with no jitter and no time
// outside a batch; where lengths vary, t = a + k * b * L (the fit per padded
// element), a batch priced at the length it is padded to. plan_on_cost plans on a measured cost (a
// cost file, `profile` refined by live runs): its t(b) curve, its jitter and slow state, the lanes'
// contention, the time a request spends outside its batch and the lanes' turnaround, the model the
// predictor prices every configuration with; the live fit then only says when plans are made again
// (they come out the same); where lengths vary it prices them with the
// cost's length grid (`profile`'s t(b, L)), or plans at the reference length
// when the cost has none. It is opt-in (bench and serve --plan-cost,
// validate_predictor --planner cost): on `mlp` it predicted adaptive
// configurations no better and ran them live no faster than the fit's
// planner (docs/benchmarks.md).
//
// Cost: kAdaptivePlanRequests simulated requests per candidate; at light load
// a handful of candidates (the batches stay small), under heavy load a few
// dozen. bench_engine's BM_AdaptivePlan measures it. Thread-safety: a pure
// function.

#include "batching/adaptive.h"
#include "batching/adaptive_plan.h"
#include "common/options.h"
#include "tuning/cost_model.h"

namespace batchscope {

// The plan for Poisson arrivals at `rate_per_s` on t(b) = model, under the
// options' lanes, max_batch_size, max_wait_us, queue_capacity,
// request_timeout_ms and target_p99_ms. An AdaptivePlanner: hand it to an
// engine with set_adaptive_planner(make_adaptive_plan).
AdaptivePlan make_adaptive_plan(double rate_per_s, const AdaptiveCostModel& model,
                                const Options& o);

// A planner that plans on `cost` as described above. The cost is shared
// by every copy of the planner and never changes.
AdaptivePlanner plan_on_cost(CostModel cost);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Calibrating a cost under load for the cost cache (cost_cache.h): for each
// lane count, two short live runs through a fresh in-process engine, fifo
// with a 1 ms wait and batches up to `max_batch`:
//  - a probe: a closed loop keeping twice `max_batch` requests in flight for
//    a sixth of the time, so that every batch is full; its throughput is the
//    capacity of that many lanes, measured (a profile's t(b) with lanes at
//    once misses the load driver and the engine's own work beside them);
//  - steps of Poisson traffic at 10%, 25%, 40%, 55%, 70% and 85% of that
//    capacity for the rest, so that each batch size forms at about the load
//    at which it forms in use, and the load driver's stalls are seen both
//    with lanes running and with a lane parked on its wait's timer
//    (send_lag.h).
// Each run refines the cost for its lane count (CostModel::calibrated): t(b)
// of the batches that started with all its lanes busy, the spread of each
// size as quantiles, the time each request spent outside its batch, the
// lanes' turnaround and the slow state.
//
// The traffic does not depend on what is predicted next, so one calibration
// serves every later prediction on the model; live runs refine it further.
// Under load: `seconds` of traffic per lane count on every core the engine
// uses (a caller pauses its own traffic meanwhile).
// Thread-safety: calibrate_lanes() blocks its caller; run it on any thread,
// its spec's `stop` flag set from another.

#include <cstdint>
#include <memory>
#include <string>

#include "common/options.h"
#include "common/status.h"
#include "runs/run_record.h"
#include "traffic/arrivals.h"
#include "tuning/cost_model.h"
#include "tuning/tune_run.h"

namespace batchscope {

// The highest rate a calibration step sends: beyond it the load driver and
// the engine's own per-request work, not the model, set the pace.
inline constexpr double kCalibrationMaxRate = 40000;
// Seconds of traffic per lane count by default.
inline constexpr double kCalibrationSeconds = 6;

// Requests per second `lanes` lanes serve at the best batch size up to
// `max_batch`, as `cost` prices a batch with that many busy and each lane's
// turnaround after it (where measured), and at most the capacity a
// calibration's probe measured for those lanes.
double capacity_rps(const CostModel& cost, uint32_t lanes, uint32_t max_batch);

// The probe: `max_batch` x 2 requests in flight (at most the queue's
// capacity), for a sixth of `seconds`.
ArrivalSpec probe_traffic(uint32_t max_batch, uint32_t queue_capacity, double seconds);

// The steps described above through `capacity` req/s (at most
// kCalibrationMaxRate each), five sixths of `seconds` in six equal steps.
ArrivalSpec calibration_traffic(double capacity, double seconds, uint64_t seed = 99);

// The calibration's options: base's queue, timeout and threads; fifo,
// max_batch_size `max_batch`, max_wait 1 ms, `lanes` lanes.
Options cache_calibration_options(const Options& base, uint32_t max_batch, uint32_t lanes);

struct LaneCalibration {
  uint32_t lanes = 1;
  double capacity = 0;  // req/s, as the probe served them
  ArrivalSpec traffic;  // the steps
  size_t batches = 0;   // that ran in both runs; of them `counted` refined the cost
  uint64_t counted = 0;
  // The median, over the sizes seen, of their t(b) over what the cost said
  // before, minus 1 (0.3: 30% slower); 0 when no size ran often enough.
  double moved = 0;
  double p50_ms = 0, p99_ms = 0;
  std::shared_ptr<const RunData> probe, run;  // what was recorded
};

// The probe and the steps with `lanes` lanes (spec's factory, metadata and
// stop; its traffic is replaced), each refining `cost` for that lane count,
// its sizes dated `when`. A model or engine that fails is the error, and
// `cost` is then unchanged; a run that saw no size often enough leaves it
// unchanged too.
Expected<LaneCalibration> calibrate_lanes(const ConfirmSpec& spec, const Options& base,
                                          CostModel& cost, uint32_t lanes, uint32_t max_batch,
                                          double seconds, const std::string& when);

}  // namespace batchscope

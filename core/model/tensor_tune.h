// SPDX-License-Identifier: GPL-3.0-or-later
// `batchscope tune` on a tensor model: every configuration of a space of
// batching options replayed on the predictor (the traffic run through the
// real strategies on a virtual clock against the model's kept cost t(b)),
// after live calibration runs under the same traffic; the Pareto front; the
// best few confirmed live in process until their figures are stable; the
// cost re-predicted with what the live runs measured; the winner chosen as
// measured; and the tune kept in the run history with every live run it
// took. Each live run refines the model's kept cost on this machine.
// What the tune finds goes to a TuneReport as it goes: its progress lines
// through say(), the search, each confirmation and the result as values
// for the caller to show.
// Thread-safety: tune_tensor() blocks its caller; the report is called on
// that thread.

#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/options.h"
#include "model/history_keeping.h"
#include "model/kept_cost.h"
#include "model/local_model.h"
#include "model/say.h"
#include "traffic/arrivals.h"
#include "traffic/gen_workload.h"
#include "tuning/tune_headroom.h"
#include "tuning/tune_run.h"
#include "tuning/tuner.h"

namespace batchscope {

struct TuneRequest {
  ModelChoice model;
  Options base;         // what every configuration starts from
  ArrivalSpec traffic;  // default poisson at 1000 req/s for 10 s
  double slo_p99_ms = 0;
  TuneObjective objective = TuneObjective::kThroughput;
  std::string space_text;  // empty: the model's default space
  int confirm = 3;         // candidates confirmed live; 0: none
  // --headroom: the slowdown of t(b) a winner must withstand (0.2: 20%),
  // and the band's half-width; 0: the kept drift's (tuning/cost_drift.h),
  // else the default 15%.
  double headroom = 0;
  double budget_s = 600;  // the whole search and confirmation
  CostChoice cost;
  bool calibrate = true;     // live calibration runs before the search
  int calibration_runs = 1;  // per lane count, 1..kMaxCalibrationRuns
  HistoryChoice history;
  // A model whose inputs vary in length: the lengths its requests are drawn
  // from (default: the model's).
  std::optional<LengthDist> seq_len;
};

// How long the search took and how much it simulated.
struct SearchStats {
  double seconds = 0;
  uint64_t simulated = 0;
};

// The tune's result: the JSON --json writes (with the device and machine it
// was measured on), and the winner where one met the objective.
struct TuneFinish {
  std::string json;
  std::optional<Evaluated> winner;    // with its band and headroom where worked out
  bool fragile = false;               // it lacks the headroom asked for
  std::optional<Evaluated> measured;  // the winner's live figures, when confirmed
  ModelMetadata model;
};

class TuneReport {
 public:
  virtual ~TuneReport() = default;
  // Progress: the cost, calibrations, re-predictions, the history.
  virtual const Say& say() const = 0;
  // After the search, before any confirmation.
  virtual void searched(const TuneResult& result, const SearchStats& stats) = 0;
  // The best candidates with their band and headroom, and the choice they
  // made (tuning/tune_headroom.h), before any confirmation.
  virtual void ranked(const HeadroomResult& headroom) = 0;
  // Each candidate confirmed live (and a best re-predicted one, when
  // confirmed after the others).
  virtual void confirmed(const Confirmed& c) = 0;
  // Once the result is known, found or not, before the tune is kept.
  virtual void finished(const TuneFinish& finish) = 0;
};

// Runs the tune, telling `report` as it goes. Nothing when it found a
// winner; otherwise why not (after finished(), where there was a result to
// write).
std::optional<WorkError> tune_tensor(const TuneRequest& request, TuneReport& report);

// "fifo max_batch_size=8 max_wait_ms=2 num_lanes=1" (and the padding where
// it is not the default): a configuration in a line.
std::string describe_short(const Options& o);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// `batchscope tune` on a language model: every configuration of the space
// (scheduling, max_num_seqs, max_num_batched_tokens, static's max_wait)
// predicted on the step predictor (tuning/gen_predictor.h) under a TTFT and
// ITL objective (tuning/gen_tune.h), priced by the model's kept step cost
// (kept_steps.h); the best few confirmed live in process, each several
// times; the winner chosen by the medians measured; the tune kept in the
// run history with every live run it took. With max_rate it first finds
// the highest rate some configuration still serves within the objective.
// What the tune finds goes to an LmTuneReport as it goes.
// Thread-safety: tune_lm() blocks its caller; the report is called on that
// thread.

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/options.h"
#include "model/history_keeping.h"
#include "model/kept_cost.h"
#include "model/local_model.h"
#include "model/planned_lm.h"
#include "model/say.h"
#include "traffic/arrivals.h"
#include "traffic/gen_load.h"
#include "traffic/gen_workload_spec.h"
#include "tuning/gen_tune.h"

namespace batchscope {

struct LmTuneRequest {
  ModelChoice model;
  Options base;
  ArrivalSpec traffic;  // default poisson at 20 req/s for 10 s
  GenWorkloadSpec lengths;
  GenSlo slo;
  GenObjective objective = GenObjective::kGoodput;
  std::string space_text;  // empty: default_gen_space_text()
  bool max_rate = false;   // find the largest rate first, then tune there
  int confirm = 2;         // candidates confirmed live; 0: none
  int confirm_runs = 3;    // live runs of each
  // --headroom: the slowdown of the step cost a winner must withstand, and
  // the band's half-width; 0: the kept step cost's drift, else 15%.
  double headroom = 0;
  double budget_s = 600;
  CostChoice cost;
  HistoryChoice history;
  // A model planned for a GPU that is not here (--model-config, --gpu):
  // priced by the roofline, nothing confirmed live (planned_tune.h).
  std::optional<PlanChoice> plan;
  std::vector<uint32_t> tps;  // --tp values searched; empty: plan->tp
  double target_rate = 0;     // --target-rate: replicas for this many requests/s
  std::string model_id;       // --model-id: what the exports load; empty: the config's
};

// A configuration run live, its runs' medians beside its prediction.
struct LmConfirmation {
  GenEvaluated predicted;
  GenEvaluated measured;  // the median of the runs
  std::vector<GenEvaluated> runs;
  std::vector<GenRun> live;
};

// The tune's result: the JSON --json writes, and the winner where one met
// the objective.
struct LmTuneFinish {
  std::string json;
  std::optional<GenEvaluated> winner;
  std::optional<GenEvaluated> measured;
  int quantile = 99;
};

class LmTuneReport {
 public:
  virtual ~LmTuneReport() = default;
  // Progress: the step cost, the rate probes, the history.
  virtual const Say& say() const = 0;
  // After the search, with its seconds.
  virtual void searched(const GenTuneResult& result, double seconds) = 0;
  virtual void confirmed(const LmConfirmation& c, const GenSlo& slo) = 0;
  // Once the result is known, found or not, before the tune is kept.
  virtual void finished(const LmTuneFinish& finish) = 0;
};

// Runs the tune, telling `report` as it goes. Nothing when it found a
// winner; otherwise why not (after finished(), where there was a result to
// write).
std::optional<WorkError> tune_lm(const LmTuneRequest& request, LmTuneReport& report);

}  // namespace batchscope

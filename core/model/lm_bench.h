// SPDX-License-Identifier: GPL-3.0-or-later
// `batchscope bench` on a language model: generation traffic against the
// generation engine in this process, or against a server over HTTP (this
// process's listener or another's: an LmHttpFront, gen_load.h, that core/api
// makes and the command hands down), streamed; kept in the run history as
// it goes with the engine's steps; and afterwards the model's kept step cost
// refined by them, and the step cost --cost-out writes. Or the run
// predicted (predict_lm_bench). The command prints the run and writes its exports
// between run() and keep().
// Thread-safety: one thread uses an LmBench; `stop` may be set from any.

#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "generation/gen_engine.h"
#include "model/history_keeping.h"
#include "model/kept_cost.h"
#include "model/kept_run.h"
#include "model/local_model.h"
#include "model/planned_lm.h"
#include "model/say.h"
#include "traffic/arrivals.h"
#include "traffic/gen_load.h"
#include "traffic/gen_workload_spec.h"

namespace batchscope {

struct LmBenchRequest {
  ModelChoice model;
  Options options;
  ArrivalSpec traffic;
  GenWorkloadSpec lengths;
  std::string target = "inproc";  // inproc, self-http, or a URL
  HistoryChoice history;
  CostChoice cost;  // a prediction's
  // A model and GPU not at hand (--model-config, --gpu): predicted only, on
  // the roofline (planned_lm.h), in place of `model`.
  std::optional<PlanChoice> plan;
};

class LmBench {
 public:
  // Opens the model and starts its engine (a run in this process or behind
  // its listener), fitting a trace's lengths to the model's context.
  static Expected<std::unique_ptr<LmBench>> open(const LmBenchRequest& request, const Say& say);
  ~LmBench();

  // The run, in process or over `front`; `stop` ends it early. Its steps,
  // in process, refine the model's kept step cost.
  Expected<GenRun> run(LmHttpFront* front, const std::atomic<bool>* stop);
  // Finishes the run in the history (`stopped` its note when a signal
  // ended it, lasting `duration_s`).
  void keep(const GenRun& run, const std::string& summary_json, double duration_s,
            const std::string& stopped);
  // The step cost the run measured, as --cost-out writes it (step cost JSON),
  // saying what it is.
  Expected<std::string> cost_out(const GenRun& run) const;

 private:
  LmBench(const LmBenchRequest& request, const Say& say);

  LmBenchRequest request_;
  Say say_;
  std::optional<LocalModel> model_;
  std::unique_ptr<GenEngine> engine_;
  GenRun run_;  // the run's description, filled before it starts
  HistoryWriterPtr writer_;
  std::unique_ptr<KeptRun> kept_;
};

// `bench --target predict` on a language model: the traffic on the step
// predictor (the real planner and paged cache on a virtual clock, against
// the model's context and cache), priced by `request.cost`
// (price_gen_steps: --synthetic-lm's own, a cost file, or the kept step
// cost, measured live when there is none), or by the roofline of
// `request.plan`, into `run`. Says a trace's clipping and the step cost it
// used; keeps nothing in the history.
// The same traffic predicted with the step cost at the band's ends
// (band_factors(): the kept step cost's drift, else +-15%; a plan's
// roofline +-15%): the run's summaries there, which bound the figures the
// machine's own drift moves them by.
struct GenPredictionBand {
  double fast = 1, slow = 1;
  std::string source;
  GenSummary at_fast, at_slow;
  // "band (the step cost x0.85..x1.15, ...): TTFT mean 40.1..52.3 ms, ..."
  std::string text() const;
  // {"fast", "slow", "source", "ttft_mean_ms": [lo, hi], "ttft_p99_ms",
  // "itl_mean_ms", "itl_p99_ms", "tpot_mean_ms", "output_tokens_per_s"}
  std::string json() const;
};

std::optional<WorkError> predict_lm_bench(const LmBenchRequest& request, const Say& say,
                                          GenRun& run, GenPredictionBand* band = nullptr);

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// `batchscope bench` on a tensor model: one run of the traffic against the
// engine in this process, against a target over HTTP (this process's
// listener or another server's: an HttpFront, load_driver.h, that core/api
// makes and the command hands down), or
// predicted on the model's kept cost; kept in the run history as it goes
// (a prediction when it ends); and what the run teaches afterwards: the
// model's kept cost refined, a cost file written or refined (--cost-out).
// The command prints the run and writes its exports between run() and
// keep().
// Thread-safety: one thread uses a TensorBench; `stop` may be set from any.

#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batching/engine.h"
#include "model/bench_run.h"
#include "model/history_keeping.h"
#include "model/kept_cost.h"
#include "model/kept_run.h"
#include "model/local_model.h"
#include "model/say.h"
#include "traffic/arrivals.h"
#include "traffic/load_driver.h"

namespace batchscope {

struct BenchRequest {
  ModelChoice model;
  Options options;
  bool batch_given = false;  // else max_batch_size falls to the model's largest
  ArrivalSpec traffic;
  std::string target = "inproc";      // inproc, self-http, predict, or a URL
  CostChoice cost;                    // a prediction's
  std::string plan_cost;              // the adaptive strategy's cost file
  std::string cost_out;               // a live run's cost file, written or refined
  std::optional<CostModel> refining;  // what cost_out held before, when it was a cost file
  std::optional<LengthDist> seq_len;
  bool own_bodies = false;  // --payload: the command sends its own request
  HistoryChoice history;
};

class TensorBench {
 public:
  // Refuses a request whose parts do not go together, naming them: --cost
  // outside a prediction, --plan-cost outside the adaptive strategy of a run
  // here or a prediction, --plan-cost and --cost apart in one prediction,
  // --cost-out of a run this process does not time, or naming a file that
  // is not a cost file (else its cost becomes `refining`), --seq-len for a
  // model whose inputs do not vary in length.
  static Status check(BenchRequest& request);
  // Opens the model and what the run needs: its runners (a live run of this
  // process's engine), the requests of a model whose inputs vary in length,
  // the adaptive strategy's planner, and the history writer.
  static Expected<std::unique_ptr<TensorBench>> open(const BenchRequest& request, const Say& say);

  const ModelMetadata& metadata() const { return model_.metadata(); }
  const RunConfig& config() const { return config_; }
  bool predicted() const { return request_.target == "predict"; }
  bool live_here() const { return request_.target == "inproc" || request_.target == "self-http"; }

  // The run. In process, `payload` (when given) is the one request sent;
  // over HTTP, `front` reaches the target. `stop` ends a live run early.
  Expected<RunData> run(const std::vector<Tensors>& payload, HttpFront* front,
                        const std::atomic<bool>* stop);
  // After the run was printed and exported: keeps it in the history (a
  // prediction whole, a live run finished, `stopped` its note when a
  // signal ended it), refines the model's kept cost (a run in process of
  // its own requests), and gives the cost file --cost-out writes.
  std::optional<Expected<CostOut>> keep(const RunData& run, const std::string& summary_json,
                                        const std::string& stopped);

 private:
  TensorBench(const BenchRequest& request, LocalModel model, const Say& say);
  Expected<RunData> run_http(HttpFront& front, const std::atomic<bool>* stop);

  BenchRequest request_;
  LocalModel model_;
  Say say_;
  RunnerFactory factory_;
  StageMaker stage_;
  AdaptivePlanner planner_;
  std::vector<Tensors> varied_;
  RunConfig config_;
  std::string context_;
  HistoryWriterPtr writer_;
  std::unique_ptr<KeptRun> kept_;
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a run's answered requests spent their time, stage by stage, from the
// engine's records of them. The stages follow one another, so their means add
// up to the time from arrival to the end of the run:
//   preprocess_wait  waiting for a preprocess process   prepare_start - arrival
//   preprocess       in it                              admitted - prepare_start
//   batch_wait       queued until cut into a batch      batched - admitted (arrival
//                                                       where nothing prepared it)
//   lane_wait        the batch waiting for a free lane  run_start - batched
//   model            the model's run                    post_start (run_end) -
//                                                       model_start (run_start)
//   postprocess      after the model, per request       run_end - post_start
// The two preprocess stages appear where a stage prepared the requests (a
// Python model's pool), postprocess where the runner timed one. Where the
// lane prepared its batch's requests before the model (preprocess_workers
// 0), that time (model_start - run_start) is their preprocess, with no wait
// before it, and the model's run begins after it (for a request the pool
// prepared in such a batch, the run is all model). The means add up where
// every request went through the same stages.
// Thread-safety: plain values and free functions.

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "runs/histogram.h"
#include "runs/records.h"

namespace batchscope {

enum class RunStage : uint8_t {
  kPreprocessWait,
  kPreprocess,
  kBatchWait,
  kLaneWait,
  kModel,
  kPostprocess,
};
inline constexpr int kRunStageCount = 6;
// "preprocess_wait", "preprocess", "batch_wait", "lane_wait", "model",
// "postprocess": the keys in a summary's JSON and its figures.
std::string_view stage_key(RunStage s);
// "preprocess wait", ..., as a person reads them.
std::string_view stage_label(RunStage s);

struct RunStages {
  std::array<LogHistogram, kRunStageCount> ns;  // indexed by RunStage
  // Counts a request answered kOk; any other outcome is left out, as for
  // latency.
  void add(const RequestRecord& r);
  const LogHistogram& of(RunStage s) const { return ns[static_cast<int>(s)]; }
  bool empty() const;
};

// One stage's figures in milliseconds.
struct StageFigures {
  RunStage stage = RunStage::kModel;
  uint64_t count = 0;
  double p50_ms = 0, p99_ms = 0, mean_ms = 0;
};
// Those of the stages any request went through, in the order above.
std::vector<StageFigures> stage_figures(const RunStages& stages);

}  // namespace batchscope

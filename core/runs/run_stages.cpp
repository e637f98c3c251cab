// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/run_stages.h"

namespace batchscope {

std::string_view stage_key(RunStage s) {
  switch (s) {
    case RunStage::kPreprocessWait: return "preprocess_wait";
    case RunStage::kPreprocess: return "preprocess";
    case RunStage::kBatchWait: return "batch_wait";
    case RunStage::kLaneWait: return "lane_wait";
    case RunStage::kModel: return "model";
    case RunStage::kPostprocess: return "postprocess";
  }
  return "?";
}

std::string_view stage_label(RunStage s) {
  switch (s) {
    case RunStage::kPreprocessWait: return "preprocess wait";
    case RunStage::kPreprocess: return "preprocess";
    case RunStage::kBatchWait: return "batch wait";
    case RunStage::kLaneWait: return "lane wait";
    case RunStage::kModel: return "model";
    case RunStage::kPostprocess: return "postprocess";
  }
  return "?";
}

void RunStages::add(const RequestRecord& r) {
  if (r.outcome != Outcome::kOk) return;
  const StageTimes& t = r.times;
  auto put = [this](RunStage s, TimePoint from, TimePoint to) {
    ns[static_cast<int>(s)].record(to - from);  // a negative one counts as 0
  };
  const bool prepared = t.prepare_start != TimePoint{};
  if (prepared) {
    put(RunStage::kPreprocessWait, t.arrival, t.prepare_start);
    put(RunStage::kPreprocess, t.prepare_start, t.admitted);
  }
  put(RunStage::kBatchWait, prepared ? t.admitted : t.arrival, t.batched);
  put(RunStage::kLaneWait, t.batched, t.run_start);
  // A lane that prepared its batch's requests first: that is their
  // preprocess. A request the pool prepared that rode in such a batch (the
  // pool's size changed live) was in the model's run all along.
  const bool lane_prepared = !prepared && t.model_start != TimePoint{};
  if (lane_prepared) put(RunStage::kPreprocess, t.run_start, t.model_start);
  const bool post = t.post_start != TimePoint{};
  put(RunStage::kModel, lane_prepared ? t.model_start : t.run_start,
      post ? t.post_start : t.run_end);
  if (post) put(RunStage::kPostprocess, t.post_start, t.run_end);
}

bool RunStages::empty() const {
  for (const LogHistogram& h : ns) {
    if (!h.empty()) return false;
  }
  return true;
}

std::vector<StageFigures> stage_figures(const RunStages& stages) {
  std::vector<StageFigures> out;
  for (int i = 0; i < kRunStageCount; ++i) {
    const LogHistogram& h = stages.ns[i];
    if (h.empty()) continue;
    StageFigures f;
    f.stage = static_cast<RunStage>(i);
    f.count = h.count();
    f.p50_ms = static_cast<double>(h.quantile(0.50)) / 1e6;
    f.p99_ms = static_cast<double>(h.quantile(0.99)) / 1e6;
    f.mean_ms = h.mean() / 1e6;
    out.push_back(f);
  }
  return out;
}

}  // namespace batchscope

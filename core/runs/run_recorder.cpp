// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/run_recorder.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace batchscope {

RunRequest run_request_of(const RequestRecord& r) {
  const StageTimes& t = r.times;
  RunRequest q;
  q.intended = t.arrival;
  q.sent = t.arrival;
  // Every record the engine emits has `completed` set; the fallback keeps a
  // record from elsewhere from reading as answered before it arrived.
  q.done = t.completed != TimePoint{}
               ? t.completed
               : std::max({t.arrival, t.admitted, t.batched, t.run_start, t.run_end});
  q.outcome = r.outcome;
  q.batch_id = r.batch_id;
  q.batch_size = r.batch_size;
  return q;
}

void RunRecorder::start(RunConfig config, TimePoint start) {
  run_ = RunData{};
  run_.config = std::move(config);
  run_.start = start;
  dropped_ = 0;
  recording_ = true;
}

void RunRecorder::add(const RecordBatch& records) {
  if (!recording_) return;
  // Only the start is known yet; the end is applied in finish().
  const TimePoint start = run_.start;
  for (const RequestRecord& r : records.requests) {
    if (r.times.arrival < start) continue;
    run_.requests.push_back(run_request_of(r));
    run_.stages.add(r);
    keep_prepared(r, run_.prepared);
  }
  for (const BatchRecord& b : records.batches) {
    if (b.batched >= start) run_.batches.push_back(b);
  }
  for (const DepthSample& d : records.depth) {
    if (d.time >= start) run_.depth.push_back(d);
  }
  dropped_ += records.dropped;
}

RunData RunRecorder::finish(TimePoint end) {
  if (!recording_) {
    RunData empty;
    empty.start = end;
    return empty;
  }
  recording_ = false;
  RunData run = std::move(run_);
  run_ = RunData{};

  std::erase_if(run.requests, [end](const RunRequest& r) { return r.intended >= end; });
  std::erase_if(run.batches, [end](const BatchRecord& b) { return b.batched >= end; });
  std::erase_if(run.depth, [end](const DepthSample& d) { return d.time >= end; });
  // Records reach the monitor in completion order; a run is read in arrival
  // order. Stable sorts keep ties in the order the engine reported them.
  std::stable_sort(
      run.requests.begin(), run.requests.end(),
      [](const RunRequest& a, const RunRequest& b) { return a.intended < b.intended; });
  for (size_t i = 0; i < run.requests.size(); ++i) run.requests[i].index = i;
  std::stable_sort(
      run.batches.begin(), run.batches.end(),
      [](const BatchRecord& a, const BatchRecord& b) { return a.batched < b.batched; });
  std::stable_sort(run.depth.begin(), run.depth.end(),
                   [](const DepthSample& a, const DepthSample& b) { return a.time < b.time; });
  run.config.duration_s =
      end > run.start ? std::chrono::duration<double>(end - run.start).count() : 0.0;
  return run;
}

}  // namespace batchscope

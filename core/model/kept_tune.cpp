// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/kept_tune.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#ifdef BATCHSCOPE_WITH_HISTORY
#include "runs/history_writer.h"
#endif

namespace batchscope {

#ifdef BATCHSCOPE_WITH_HISTORY

KeptTune::KeptTune(const HistoryChoice& history, std::string label, RunConfig config,
                   std::string context, TimePoint start, const std::string& result_json, Say say)
    : say_(std::move(say)),
      w_(open_history_writer(history, "batchscope tune", say_)),
      model_(config.model),
      context_(std::move(context)) {
  if (!w_) return;
  HistoryRun h;
  h.kind = "tune";
  h.label = std::move(label);
  h.model = model_;
  h.config = std::move(config);
  h.context = context_;
  const TimePoint now = SteadyClock().now();
  tune_ = w_->begin(std::move(h), start);
  w_->finish(tune_, result_json, std::chrono::duration<double>(now - start).count());
}

void KeptTune::keep(const RunData& run, std::string label) {
  if (!w_) return;
  HistoryRun r;
  r.kind = "tune";
  r.label = std::move(label);
  r.model = model_;
  r.config = run.config;
  r.context = context_;
  const auto child = w_->begin(std::move(r), run.start, tune_);
  w_->append(child, run.requests, run.batches, run.depth);
  w_->finish(child, run_summary_json(run, summarize_run(run)));
  ++live_;
}

void KeptTune::keep(const GenRun& run, RunConfig config, std::string label,
                    const std::string& summary_json) {
  if (!w_) return;
  HistoryRun r;
  r.kind = "generation";
  r.label = std::move(label);
  r.model = model_;
  const double duration_s = config.duration_s;
  r.config = std::move(config);
  r.context = context_;
  const auto child = w_->begin(std::move(r), run.start, tune_);
  std::vector<HistoryGenRequest> rows;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(w_->request_cap(), run.requests.size()));
  rows.reserve(n);
  for (size_t k = 0; k < n; ++k) rows.push_back(history_row_of(run.requests[k]));
  w_->append_generation(child, std::move(rows), run.steps);
  w_->finish(child, summary_json, duration_s);
  ++live_;
}

bool KeptTune::report() { return w_ && report_kept_tune(*w_, tune_, live_, say_); }

#else  // a build without the history keeps nothing

KeptTune::KeptTune(const HistoryChoice&, std::string, RunConfig, std::string, TimePoint,
                   const std::string&, Say) {}
void KeptTune::keep(const RunData&, std::string) {}
void KeptTune::keep(const GenRun&, RunConfig, std::string, const std::string&) {}
bool KeptTune::report() { return false; }

#endif

}  // namespace batchscope

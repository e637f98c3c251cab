// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/kept_run.h"

#ifdef BATCHSCOPE_WITH_HISTORY
#include "runs/history_figures.h"
#include "runs/history_writer.h"
#endif

namespace batchscope {

KeptRun::KeptRun(HistoryWriter* w, std::string kind, std::string label, RunConfig config,
                 std::string context, Say say)
    : w_(w),
      kind_(std::move(kind)),
      label_(std::move(label)),
      context_(std::move(context)),
      say_(std::move(say)),
      config_(std::move(config)) {}

#ifdef BATCHSCOPE_WITH_HISTORY

void KeptRun::begin(TimePoint start) {
  if (begun_) return;
  HistoryRun h;
  h.kind = kind_;
  h.label = label_;
  h.model = config_.model;
  h.config = config_;
  h.context = context_;
  token_ = w_->begin(std::move(h), start);
  begun_ = true;
}

ProgressFn KeptRun::progress() {
  if (!w_) return {};
  return [this](RunProgress&& p) {
    std::lock_guard g(mu_);
    begin(p.start);
    for (const RunRequest& r : p.requests) {
      if (r.index >= handed_.size()) handed_.resize(r.index + 1, false);
      handed_[r.index] = true;
    }
    batches_handed_ += p.batches.size();
    depth_handed_ += p.depth.size();
    if (p.requests.empty() && p.batches.empty() && p.depth.empty()) return;
    w_->append(token_, std::move(p.requests), std::move(p.batches), std::move(p.depth));
  };
}

GenProgressFn KeptRun::gen_progress(std::function<std::vector<StepRecord>()> steps) {
  if (!w_) return {};
  return [this, steps = std::move(steps)](GenProgress&& p) {
    std::lock_guard g(mu_);
    begin(p.start);
    if (steps) p.steps = steps();
    for (uint64_t i : p.indices) {
      if (i >= handed_.size()) handed_.resize(i + 1, false);
      handed_[i] = true;
    }
    batches_handed_ += p.steps.size();  // a generation run's batches are its steps
    if (p.requests.empty() && p.steps.empty()) return;
    std::vector<HistoryGenRequest> rows;
    rows.reserve(p.requests.size());
    for (const GenRequestResult& q : p.requests) rows.push_back(history_row_of(q));
    w_->append_generation(token_, std::move(rows), std::move(p.steps));
  };
}

namespace {

template <class T>
std::vector<T> after(const std::vector<T>& v, size_t from) {
  return from >= v.size() ? std::vector<T>{} : std::vector<T>(v.begin() + from, v.end());
}

}  // namespace

bool KeptRun::finish(const RunData& run, const std::string& summary_json, double duration_s,
                     const std::string& stopped) {
  if (!w_) return false;
  std::lock_guard g(mu_);
  begin(run.start);
  std::vector<RunRequest> rest;
  for (const RunRequest& r : run.requests) {
    if (r.index >= handed_.size() || !handed_[r.index]) rest.push_back(r);
  }
  w_->append(token_, std::move(rest), after(run.batches, batches_handed_),
             after(run.depth, depth_handed_));
  w_->finish(token_, stopped.empty() ? summary_json : with_stop_note(summary_json, stopped),
             duration_s);
  return report(run.requests.size());
}

bool KeptRun::finish_generation(const GenRun& run, const std::string& summary_json,
                                double duration_s, const std::string& stopped) {
  if (!w_) return false;
  std::lock_guard g(mu_);
  begin(run.start);
  std::vector<HistoryGenRequest> rest;
  for (size_t i = 0; i < run.requests.size(); ++i) {
    if (i >= handed_.size() || !handed_[i]) rest.push_back(history_row_of(run.requests[i]));
  }
  w_->append_generation(token_, std::move(rest), after(run.steps, batches_handed_));
  w_->finish(token_, stopped.empty() ? summary_json : with_stop_note(summary_json, stopped),
             duration_s);
  return report(run.requests.size());
}

bool KeptRun::report(size_t requests) {
  w_->flush();
  if (auto why = w_->failure()) {
    say_.err("  not kept in the history: %s\n", why->c_str());
    return false;
  }
  say_.out("  kept as run %lld in %s%s\n", static_cast<long long>(w_->id_of(token_).value_or(0)),
           w_->path().c_str(), cut_text(requests, w_->request_cap()).c_str());
  return true;
}

#else  // a build without the history keeps nothing

ProgressFn KeptRun::progress() { return {}; }
GenProgressFn KeptRun::gen_progress(std::function<std::vector<StepRecord>()>) { return {}; }
bool KeptRun::finish(const RunData&, const std::string&, double, const std::string&) {
  return false;
}
bool KeptRun::finish_generation(const GenRun&, const std::string&, double, const std::string&) {
  return false;
}
void KeptRun::begin(TimePoint) {}
bool KeptRun::report(size_t) { return false; }

#endif

}  // namespace batchscope

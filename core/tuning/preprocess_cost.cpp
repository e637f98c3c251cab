// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/preprocess_cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>

#include "runs/histogram.h"
#include "runs/run_record.h"
#include "tuning/cost_checks.h"
#include "tuning/cost_points.h"

namespace batchscope {

namespace {

// Quantiles p0..p100 `q` (two or more) read at `n` evenly spaced levels.
std::vector<double> resampled(const std::vector<double>& q, size_t n) {
  if (q.size() == n || q.size() < 2 || n < 2) return q;
  std::vector<double> out(n);
  for (size_t k = 0; k < n; ++k) {
    const double x =
        static_cast<double>(k) / static_cast<double>(n - 1) * static_cast<double>(q.size() - 1);
    const size_t i = std::min(static_cast<size_t>(x), q.size() - 2);
    out[k] = q[i] + (q[i + 1] - q[i]) * (x - static_cast<double>(i));
  }
  return out;
}

// `was` and `now` averaged quantile by quantile (was read at now's levels),
// weighted by their requests (was's capped; 0 weighs as 1).
std::vector<double> averaged(const std::vector<double>& was, uint64_t w,
                             const std::vector<double>& now, uint64_t n) {
  const std::vector<double> before = resampled(was, now.size());
  if (before.size() != now.size()) return now;
  const double dw = static_cast<double>(std::clamp<uint64_t>(w, 1, kMaxPointWeight));
  const double dn = static_cast<double>(std::max<uint64_t>(n, 1));
  std::vector<double> out(now.size());
  for (size_t k = 0; k < now.size(); ++k) out[k] = (before[k] * dw + now[k] * dn) / (dw + dn);
  return out;
}

uint64_t summed(uint64_t w, uint64_t n) { return std::min<uint64_t>(w, kMaxPointWeight) + n; }

// Each span's mean number of processes busy over it, itself included,
// rounded (at least 1): the step function of how many spans and batches
// (a lane running one) run, integrated. The predictor draws a pool time by
// the same count (predict_simulation.h).
std::vector<uint32_t> mean_busy(std::span<const PrepareSpan> spans,
                                std::span<const BatchRecord> batches) {
  if (spans.empty()) return {};
  std::vector<std::pair<TimePoint, int>> events;
  events.reserve(2 * (spans.size() + batches.size()));
  for (const PrepareSpan& s : spans) events.push_back({s.start, +1}), events.push_back({s.end, -1});
  for (const BatchRecord& b : batches) {
    if (b.run_start == TimePoint{} || b.run_end < b.run_start) continue;
    events.push_back({b.run_start, +1}), events.push_back({b.run_end, -1});
  }
  std::sort(events.begin(), events.end());
  const TimePoint t0 = events.front().first;
  std::vector<double> at(events.size()), integral(events.size());  // us since t0; running x us
  std::vector<int> level(events.size());                           // running after each event
  int running = 0;
  for (size_t k = 0; k < events.size(); ++k) {
    at[k] = to_us(events[k].first - t0);
    integral[k] = k ? integral[k - 1] + running * (at[k] - at[k - 1]) : 0.0;
    running += events[k].second;
    level[k] = running;
  }
  auto integral_at = [&](double t) {
    const size_t k = static_cast<size_t>(std::upper_bound(at.begin(), at.end(), t) - at.begin());
    if (k == 0) return 0.0;
    return integral[k - 1] + level[k - 1] * (t - at[k - 1]);
  };
  std::vector<uint32_t> out;
  out.reserve(spans.size());
  for (const PrepareSpan& s : spans) {
    const double a = to_us(s.start - t0), b = to_us(s.end - t0);
    const double mean = b > a ? (integral_at(b) - integral_at(a)) / (b - a) : 1.0;
    out.push_back(static_cast<uint32_t>(std::clamp(std::lround(mean), 1L, long{kMaxCostLanes})));
  }
  return out;
}

}  // namespace

PreprocessCost PreprocessCost::from_run(const RunData& run) {
  PreprocessCost c;
  const std::vector<uint32_t> busy = mean_busy(run.prepared, run.batches);
  std::map<uint32_t, std::vector<double>> by_busy;
  for (size_t i = 0; i < busy.size(); ++i) {
    const PrepareSpan& s = run.prepared[i];
    if (!s.answered) continue;  // it counts as company, not as a time
    by_busy[busy[i]].push_back(std::clamp(to_us(s.end - s.start), 0.0, kMaxCostUs));
  }
  for (auto& [k, us] : by_busy) {
    if (us.size() >= kMinSeen) c.pool.push_back({k, even_quantiles(us), us.size()});
  }
  std::vector<double> lane;
  uint64_t lane_requests = 0;
  for (const BatchRecord& b : run.batches) {
    if (b.failed || b.size == 0 || b.model_start == TimePoint{} || b.model_start < b.run_start) {
      continue;
    }
    lane.push_back(std::min(to_us(b.model_start - b.run_start) / b.size, kMaxCostUs));
    lane_requests += b.size;
  }
  if (lane.size() >= kMinSeen) {
    c.lane_us = even_quantiles(lane);
    c.lane_requests = lane_requests;
  }
  return c;
}

PreprocessCost PreprocessCost::refined(const PreprocessCost& seen) const {
  PreprocessCost out = *this;
  if (!seen.lane_us.empty()) {
    out.lane_us = lane_us.empty()
                      ? seen.lane_us
                      : averaged(lane_us, lane_requests, seen.lane_us, seen.lane_requests);
    out.lane_requests =
        lane_us.empty() ? seen.lane_requests : summed(lane_requests, seen.lane_requests);
  }
  for (const Pool& s : seen.pool) {
    auto it = std::find_if(out.pool.begin(), out.pool.end(),
                           [&](const Pool& p) { return p.busy >= s.busy; });
    if (it == out.pool.end() || it->busy != s.busy) {
      out.pool.insert(it, s);
      continue;
    }
    it->us = averaged(it->us, it->requests, s.us, s.requests);
    it->requests = summed(it->requests, s.requests);
  }
  return out;
}

const std::vector<double>& PreprocessCost::pool_us(size_t busy) const {
  static const std::vector<double> kNone;
  if (pool.empty()) return kNone;
  const Pool* best = &pool.front();
  for (const Pool& p : pool) {
    if (p.busy <= busy) best = &p;
  }
  return best->us;
}

Status PreprocessCost::validate(const std::string& prefix) const {
  const std::string at = prefix + "preprocess.";
  if (Status s = cost_detail::check_quantiles(lane_us, "lane_us_quantiles", kMaxCostUs, at); !s) {
    return s;
  }
  uint32_t last = 0;
  for (size_t i = 0; i < pool.size(); ++i) {
    const std::string where = at + "pool[" + std::to_string(i) + "].";
    if (pool[i].busy <= last || pool[i].busy > kMaxCostLanes) {
      return invalid_argument(where + "busy = " + std::to_string(pool[i].busy) + " must be above " +
                              std::to_string(last) + " and at most " +
                              std::to_string(kMaxCostLanes));
    }
    last = pool[i].busy;
    if (pool[i].us.empty()) return invalid_argument(where + "us_quantiles is missing");
    if (Status s = cost_detail::check_quantiles(pool[i].us, "us_quantiles", kMaxCostUs, where);
        !s) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace batchscope

// A cost model from what a live run recorded: t(b) of its batches, their
// jitter and streaks, and each request's time outside its batch.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>

#include "runs/histogram.h"
#include "tuning/cost_model.h"

namespace batchscope {

namespace {

// How many batches ran when each of `batches` started, itself included.
std::vector<uint32_t> busy_at_start(std::span<const BatchRecord> batches) {
  std::vector<size_t> order(batches.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return batches[a].run_start < batches[b].run_start; });
  std::vector<uint32_t> busy(batches.size(), 1);
  std::priority_queue<TimePoint, std::vector<TimePoint>, std::greater<>> running;  // their ends
  for (size_t i : order) {
    const BatchRecord& b = batches[i];
    if (b.run_start == TimePoint{} || b.run_end < b.run_start) continue;
    while (!running.empty() && running.top() <= b.run_start) running.pop();
    busy[i] = static_cast<uint32_t>(running.size()) + 1;
    running.push(b.run_end);
  }
  return busy;
}

}  // namespace

Expected<CostModel> CostModel::from_batches(std::span<const BatchRecord> batches, size_t min_runs,
                                            uint32_t busy) {
  const std::vector<uint32_t> running = busy > 1 ? busy_at_start(batches) : std::vector<uint32_t>();
  std::map<uint32_t, std::vector<double>> runs;
  for (size_t i = 0; i < batches.size(); ++i) {
    const BatchRecord& b = batches[i];
    if (b.failed || b.size == 0 || b.run_start == TimePoint{} || b.run_end < b.run_start) continue;
    if (busy > 1 && running[i] < busy) continue;
    runs[b.size].push_back(to_us(b.run_end - b.run_start));
  }
  std::vector<CostPoint> points;
  for (auto& [size, us] : runs) {
    if (us.size() < std::max<size_t>(min_runs, 1)) continue;
    std::sort(us.begin(), us.end());
    CostPoint p;
    p.batch = size;
    p.median_us = us[us.size() / 2];
    // The uniform spread with the same p10..p90 width, as profile records it.
    const double width = us[us.size() * 9 / 10] - us[us.size() / 10];
    p.spread = p.median_us > 0 ? std::clamp(width / (1.6 * p.median_us), 0.0, 0.95) : 0.0;
    if (p.median_us > 0) {
      p.run_quantiles = even_quantiles(us);
      for (double& q : p.run_quantiles) q = std::min(q / p.median_us, kMaxRunFactor);
    }
    points.push_back(p);
  }
  // Streaks: the autocorrelation of log(run time / its size's median), in
  // the order the batches started, at lags 1 and 10.
  JitterStreak streak;
  {
    std::map<uint32_t, double> median;
    for (auto& [size, us] : runs) {
      std::vector<double> v = us;
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      median[size] = v[v.size() / 2];
    }
    std::vector<std::pair<TimePoint, double>> seq;
    for (size_t i = 0; i < batches.size(); ++i) {
      const BatchRecord& b = batches[i];
      if (b.failed || b.size == 0 || b.run_start == TimePoint{} || b.run_end < b.run_start)
        continue;
      if (busy > 1 && running[i] < busy) continue;
      const auto m = median.find(b.size);
      const double us = to_us(b.run_end - b.run_start);
      if (m == median.end() || runs[b.size].size() < std::max<size_t>(min_runs, 1) ||
          m->second <= 0 || us <= 0) {
        continue;
      }
      seq.push_back({b.run_start, std::log(us / m->second)});
    }
    std::sort(seq.begin(), seq.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    if (seq.size() >= 50) {
      double mean = 0, var = 0;
      for (const auto& [t, x] : seq) mean += x / static_cast<double>(seq.size());
      for (const auto& [t, x] : seq) var += (x - mean) * (x - mean);
      auto corr = [&](size_t lag) {
        double c = 0;
        for (size_t i = 0; i + lag < seq.size(); ++i) {
          c += (seq[i].second - mean) * (seq[i + lag].second - mean);
        }
        return var > 0 ? c / var * static_cast<double>(seq.size()) /
                             static_cast<double>(seq.size() - lag)
                       : 0.0;
      };
      const double c1 = corr(1), c10 = corr(10);
      if (c1 > 0.05) {
        if (c10 > 0.01 && c10 < c1) {
          streak.rho = std::pow(c10 / c1, 1.0 / 9.0);
          streak.weight = c1 / streak.rho;
        } else {
          streak.rho = c1;
          streak.weight = 1;
        }
      }
    }
  }
  // Sizes that ran few times are noisy: a larger one can measure cheaper.
  // Their medians are made monotone, weighted by runs, and each size's
  // quantiles stay those of its runs about the new median.
  std::vector<double> medians, weights;
  for (const CostPoint& p : points) {
    medians.push_back(p.median_us);
    weights.push_back(static_cast<double>(runs[p.batch].size()));
  }
  const std::vector<double> fitted = monotone_fit(medians, weights);
  for (size_t i = 0; i < points.size(); ++i) {
    if (fitted[i] <= 0 || fitted[i] == medians[i]) continue;
    for (double& q : points[i].run_quantiles) {
      q = std::min(q * medians[i] / fitted[i], kMaxRunFactor);
    }
    points[i].median_us = fitted[i];
  }
  if (points.empty()) {
    return invalid_argument(
        "no batch size ran " + std::to_string(min_runs) + " times or more in the run (" +
        std::to_string(batches.size()) + " batches" +
        (busy > 1 ? ", counting those that started beside " + std::to_string(busy - 1) + " running"
                  : std::string()) +
        "): run longer or busier to measure t(b)");
  }
  Expected<CostModel> m = from_points(std::move(points));
  if (!m) return m;
  return m->with_streak(streak);
}

Expected<CostModel> CostModel::from_run(const RunData& run, size_t min_runs, uint32_t busy) {
  Expected<CostModel> m = from_batches(run.batches, min_runs, busy);
  if (!m) return m;
  std::map<uint64_t, const BatchRecord*> by_id;
  for (const BatchRecord& b : run.batches) by_id[b.id] = &b;
  std::vector<double> overhead;
  for (const RunRequest& r : run.requests) {
    if (r.outcome != Outcome::kOk || r.batch_id == 0) continue;
    const auto b = by_id.find(r.batch_id);
    if (b == by_id.end() || b->second->run_end == TimePoint{}) continue;
    const double us = to_us(r.sent - r.intended) + to_us(r.done - b->second->run_end);
    overhead.push_back(std::clamp(us, 0.0, kMaxCostUs));
  }
  return m->with_overhead(even_quantiles(std::move(overhead)));
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// A cost model from what a live run recorded: t(b) of its batches, their
// jitter and streaks, and each request's time outside its batch.
#include <algorithm>
#include <bit>
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

// The lanes' turnaround: from each batch's end to the next batch on the same
// lane, where that batch's oldest request had arrived and waited its
// max_wait before the end (the lane waited neither for work nor for a
// batch to fill). A line through each ended size's median gap,
// weighted by how often it was seen; zero with fewer than 20 such gaps.
Turnaround turnaround_of(std::span<const BatchRecord> batches, Duration max_wait) {
  std::map<uint16_t, std::vector<const BatchRecord*>> by_lane;
  for (const BatchRecord& b : batches) {
    if (b.size == 0 || b.run_start == TimePoint{} || b.run_end < b.run_start) continue;
    by_lane[b.lane].push_back(&b);
  }
  std::map<uint32_t, std::vector<double>> gaps;  // by the size that ended
  size_t seen = 0;
  for (auto& [lane, v] : by_lane) {
    std::sort(v.begin(), v.end(), [](const BatchRecord* a, const BatchRecord* b) {
      return a->run_start < b->run_start;
    });
    for (size_t i = 1; i < v.size(); ++i) {
      const BatchRecord& prev = *v[i - 1];
      const BatchRecord& next = *v[i];
      if (next.oldest_arrival == TimePoint{} || next.oldest_arrival + max_wait > prev.run_end) {
        continue;
      }
      gaps[prev.size].push_back(std::max(0.0, to_us(next.run_start - prev.run_end)));
      ++seen;
    }
  }
  if (seen < 20) return {};
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto& [size, g] : gaps) {
    const double w = static_cast<double>(g.size()), x = size;
    std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(g.size() / 2), g.end());
    const double y = g[g.size() / 2];
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  const double det = sw * sxx - sx * sx;
  Turnaround t;
  if (det > 0) {
    t.per_answer_us = (sw * sxy - sx * sy) / det;
    t.fixed_us = (sy - t.per_answer_us * sx) / sw;
  }
  if (!(det > 0) || t.per_answer_us < 0) {
    t = {sy / sw, 0};  // no growth with the batch: its mean
  } else if (t.fixed_us < 0) {
    t = {0, sxx > 0 ? sxy / sxx : 0};  // through the origin
  }
  t.fixed_us = std::clamp(t.fixed_us, 0.0, kMaxCostUs);
  t.per_answer_us = std::clamp(t.per_answer_us, 0.0, kMaxCostUs);
  return t;
}

// One batch as the streak and state estimates see it.
struct Ran {
  TimePoint start;
  uint32_t size;
  double us;
};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// corr(k) of x at lags 1 and 10 fitted as weight * rho^k; zero when the
// series does not correlate at lag 1.
JitterStreak streak_of(const std::vector<double>& x) {
  JitterStreak streak;
  if (x.size() < 50) return streak;
  const double n = static_cast<double>(x.size());
  double mean = 0, var = 0;
  for (double v : x) mean += v / n;
  for (double v : x) var += (v - mean) * (v - mean);
  auto corr = [&](size_t lag) {
    double c = 0;
    for (size_t i = 0; i + lag < x.size(); ++i) c += (x[i] - mean) * (x[i + lag] - mean);
    return var > 0 ? c / var * n / (n - static_cast<double>(lag)) : 0.0;
  };
  const double c1 = corr(1), c10 = corr(10);
  if (c1 > 0.05) {
    if (c10 > 0.01 && c10 < c1) {
      streak.rho = std::pow(c10 / c1, 1.0 / 9.0);
      streak.weight = std::min(1.0, c1 / streak.rho);
    } else {
      streak.rho = c1;
      streak.weight = 1;
    }
  }
  return streak;
}

// The machine's slow state at each batch, in log units, estimated from the
// batches around it (not from itself): their log run time over their
// size's t(b), weighted lambda^|k| as the smoother of an AR(1) state with
// rho in noise that leaves it `weight` of the variance weights them,
// shrunk by the regression of a batch's own ratio on that estimate.
// Returns an empty vector when nothing persists.
std::vector<double> slow_state(const std::vector<double>& r, const JitterStreak& k) {
  const size_t n = r.size();
  const double w = std::clamp(k.weight, 0.01, 0.99), rho = std::clamp(k.rho, 0.01, 0.999);
  const double c = (w / (1 - w) * (1 - rho * rho) + 1 + rho * rho) / rho;
  const double lambda = std::clamp((c - std::sqrt(c * c - 4)) / 2, 0.01, 0.999);
  const size_t reach =
      static_cast<size_t>(std::clamp(std::ceil(std::log(0.01) / std::log(lambda)), 1.0, 256.0));
  std::vector<double> raw(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0, total = 0, f = 1;
    for (size_t j = 1; j <= reach; ++j) {
      f *= lambda;
      if (i >= j) sum += f * r[i - j], total += f;
      if (i + j < n) sum += f * r[i + j], total += f;
    }
    raw[i] = total > 0 ? sum / total : 0.0;
  }
  double mr = 0, ms = 0;
  for (size_t i = 0; i < n; ++i) mr += r[i] / double(n), ms += raw[i] / double(n);
  double cov = 0, var = 0;
  for (size_t i = 0; i < n; ++i)
    cov += (r[i] - mr) * (raw[i] - ms), var += (raw[i] - ms) * (raw[i] - ms);
  if (!(var > 0) || !(cov > 0)) return {};
  const double shrink = std::min(1.0, cov / var);
  for (double& v : raw) v = shrink * (v - ms);
  return raw;
}

}  // namespace

Expected<CostModel> CostModel::from_batches(std::span<const BatchRecord> batches, size_t min_runs,
                                            uint32_t busy, Duration max_wait) {
  const std::vector<uint32_t> running = busy > 1 ? busy_at_start(batches) : std::vector<uint32_t>();
  min_runs = std::max<size_t>(min_runs, 1);
  std::vector<Ran> seq;  // in the order the batches started
  std::map<uint32_t, size_t> count;
  for (size_t i = 0; i < batches.size(); ++i) {
    const BatchRecord& b = batches[i];
    if (b.failed || b.size == 0 || b.run_start == TimePoint{} || b.run_end < b.run_start) continue;
    if (busy > 1 && running[i] < busy) continue;
    seq.push_back({b.run_start, b.size, to_us(b.run_end - b.run_start)});
    ++count[b.size];
  }
  std::stable_sort(seq.begin(), seq.end(),
                   [](const Ran& a, const Ran& b) { return a.start < b.start; });
  std::erase_if(seq, [&](const Ran& x) { return count[x.size] < min_runs; });

  // A batch's run time is its size's t(b), times the machine's slow state
  // then, times its own jitter. The state persists (a busy neighbour, the
  // clock's speed), and the batch sizes follow it: a slow stretch queues
  // more and cuts larger batches. Each size's own median would then read
  // large sizes slow and small sizes fast, and a predictor that adds the
  // streak again would count the state twice. So where the log ratios
  // streak (corr(k) = weight * rho^k), the state is estimated from the
  // batches around each one and divided out of t(b) and its jitter, and
  // kept apart as the streak's sigma; a few rounds let t(b) and the state
  // settle on each other.
  std::vector<double> state(seq.size(), 0.0);
  std::map<uint32_t, double> median;
  JitterStreak streak;
  for (int round = 0; round < 4; ++round) {
    std::map<uint32_t, std::vector<double>> corrected;
    for (size_t i = 0; i < seq.size(); ++i) {
      corrected[seq[i].size].push_back(seq[i].us * std::exp(-state[i]));
    }
    for (auto& [size, us] : corrected) median[size] = median_of(std::move(us));
    std::vector<double> r;
    r.reserve(seq.size());
    bool usable = true;
    for (const Ran& x : seq) {
      const double m = median[x.size];
      if (!(m > 0) || !(x.us > 0)) {
        usable = false;
        break;
      }
      r.push_back(std::log(x.us / m));  // the whole ratio: state and jitter
    }
    if (!usable) break;
    // Measured again about each round's t(b): the first round's ratios
    // still carry the sizes' own pattern.
    const JitterStreak k = streak_of(r);
    if (round == 0) {
      streak = k;
      if (streak.weight < 0.05 || streak.rho < 0.5) break;  // nothing lasting to divide out
    } else if (k.weight >= 0.05 && k.rho >= 0.5) {
      streak = k;
    }
    std::vector<double> next = slow_state(r, streak);
    if (next.empty()) break;
    state = std::move(next);
  }
  if (streak.weight > 0) {
    double mean = 0, var = 0;
    for (double v : state) mean += v / static_cast<double>(state.size());
    for (double v : state) var += (v - mean) * (v - mean);
    streak.sigma = state.empty() ? 0.0 : std::sqrt(var / static_cast<double>(state.size()));
  }

  std::map<uint32_t, std::vector<double>> runs;
  for (size_t i = 0; i < seq.size(); ++i) {
    runs[seq[i].size].push_back(seq[i].us * std::exp(-state[i]));
  }
  std::vector<CostPoint> points;
  for (auto& [size, us] : runs) {
    std::sort(us.begin(), us.end());
    CostPoint p;
    p.batch = size;
    p.batches = us.size();
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
  return m->with_streak(streak).with_turnaround(turnaround_of(batches, max_wait));
}

Expected<CostModel> CostModel::from_run(const RunData& run, size_t min_runs, uint32_t busy,
                                        const LengthGrid& lengths) {
  const Duration max_wait =
      std::chrono::microseconds(std::max<int64_t>(0, run.config.options.max_wait_us));
  const bool varied = has_lengths(run.batches);
  // Where the lanes prepared their batches' requests, t(b) is the model's
  // part: from when the model began (the preparing is the preprocess cost's).
  bool lane_prepared = false;
  std::vector<BatchRecord> model_part;
  for (const BatchRecord& b : run.batches) {
    lane_prepared = lane_prepared || b.model_start != TimePoint{};
  }
  if (lane_prepared) {
    model_part = run.batches;
    for (BatchRecord& b : model_part) {
      if (b.model_start != TimePoint{} && b.model_start >= b.run_start) b.run_start = b.model_start;
    }
  }
  const std::span<const BatchRecord> ran = lane_prepared
                                               ? std::span<const BatchRecord>(model_part)
                                               : std::span<const BatchRecord>(run.batches);
  if (varied && lengths.empty()) {
    return invalid_argument(
        "the run's batches vary in length and the cost has no length grid to read them at one "
        "length: profile the model (batchscope profile measures t(b, L)) before refining it");
  }
  const std::vector<BatchRecord> scaled =
      varied ? at_reference_length(ran, lengths) : std::vector<BatchRecord>{};
  const std::span<const BatchRecord> batches = varied ? std::span<const BatchRecord>(scaled) : ran;
  Expected<CostModel> m = from_batches(batches, min_runs, busy, max_wait);
  if (!m) return m;
  // Records from before the lanes said when the model began: t(b) holds
  // the preparing.
  m->lanes_prepared_ = run.config.options.preprocess_workers == 0 && !lane_prepared;
  m->preprocess_ = PreprocessCost::from_run(run);
  if (lane_prepared || !run.prepared.empty()) {
    // No turnaround where requests were prepared: a lane waiting for the
    // pool reads as one (a request's arrival is not when the pool gave it
    // back), and such gaps, fitted over batches of 1 and 2, priced a later
    // lane-prepared batch of 16 at 18 ms more (docs/benchmarks.md). The
    // file's stays.
    m = m->with_turnaround(Turnaround{});
  } else if (varied) {
    // The gaps between batches as they ran: the reference length moved each start.
    m = m->with_turnaround(turnaround_of(run.batches, max_wait));
  }
  if (varied) {
    m = m->with_length_grid(lengths);
    if (!m) return m;
  }
  if (busy > 1) {
    // The batches that started with fewer lanes running: the lone curve.
    const std::vector<uint32_t> running = busy_at_start(batches);
    std::vector<BatchRecord> fewer;
    for (size_t i = 0; i < batches.size(); ++i) {
      if (running[i] < busy) fewer.push_back(batches[i]);
    }
    if (auto alone = from_batches(fewer, min_runs, 1, max_wait)) m->alone_ = alone->points_;
  }
  std::map<uint64_t, const BatchRecord*> by_id;
  for (const BatchRecord& b : run.batches) by_id[b.id] = &b;
  std::vector<double> answer;
  std::vector<std::vector<double>> by_size;  // by size band: 1, 2-3, 4-7, ...
  for (const RunRequest& r : run.requests) {
    if (r.outcome != Outcome::kOk || r.batch_id == 0) continue;
    const auto b = by_id.find(r.batch_id);
    if (b == by_id.end() || b->second->run_end == TimePoint{}) continue;
    const double us = std::clamp(to_us(r.done - b->second->run_end), 0.0, kMaxCostUs);
    answer.push_back(us);
    const size_t band = std::min<size_t>(std::bit_width(std::max<uint32_t>(b->second->size, 1)) - 1,
                                         kMaxSizeBands - 1);
    if (by_size.size() <= band) by_size.resize(band + 1);
    by_size[band].push_back(us);
  }
  // A band of fewer than 20 answers says little: left to its neighbours.
  for (std::vector<double>& v : by_size)
    v = v.size() < 20 ? std::vector<double>{} : even_quantiles(v);
  Expected<CostModel> with = m->with_overhead(even_quantiles(answer));
  if (!with || answer.empty()) return with;
  Expected<CostModel> banded = with->with_overhead_by_size(std::move(by_size));
  if (!banded) return banded;
  return banded->with_send_lag(measure_send_lag(run));
}

}  // namespace batchscope

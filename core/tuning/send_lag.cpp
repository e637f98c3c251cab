// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/send_lag.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "runs/histogram.h"
#include "tuning/cost_model.h"

namespace batchscope {

namespace {

// The state (lanes running batches, a lane on a timer) at each of `times`
// (ascending), and the seconds spent in each state from `from` on.
struct StateTrack {
  std::vector<size_t> busy;     // per time
  std::vector<bool> timed;      // per time
  std::vector<double> seconds;  // per busy count, no timer
  std::vector<double> waiting;  // per busy count, a lane on a timer
};

StateTrack state_track(const RunData& run, const std::vector<TimePoint>& times, TimePoint from) {
  // Edges: a batch runs (busy), a request waits in the queue (queued).
  struct Edge {
    TimePoint at;
    int busy, queued;
    bool operator<(const Edge& o) const { return at < o.at; }
  };
  std::vector<Edge> edges;
  std::map<uint64_t, TimePoint> started;
  for (const BatchRecord& b : run.batches) {
    if (b.run_start == TimePoint{} || b.run_end < b.run_start) continue;
    edges.push_back({b.run_start, +1, 0});
    edges.push_back({b.run_end, -1, 0});
    started[b.id] = b.run_start;
  }
  for (const RunRequest& r : run.requests) {
    if (r.sent == TimePoint{} || r.outcome == Outcome::kRejected) continue;
    const auto b = started.find(r.batch_id);
    const TimePoint left = b != started.end() ? b->second : r.done;
    if (left <= r.sent) continue;
    edges.push_back({r.sent, 0, +1});
    edges.push_back({left, 0, -1});
  }
  std::stable_sort(edges.begin(), edges.end());
  const int lanes = static_cast<int>(std::max<uint32_t>(run.config.options.num_lanes, 1));
  const bool can_wait = run.config.options.max_wait_us > 0;
  StateTrack t;
  size_t e = 0;
  int busy = 0, queued = 0;
  TimePoint now = from;
  auto timed = [&] { return can_wait && queued > 0 && busy < lanes; };
  auto spend = [&](TimePoint until) {
    if (until <= now) return;
    const size_t k = static_cast<size_t>(std::max(busy, 0));
    std::vector<double>& in = timed() ? t.waiting : t.seconds;
    if (in.size() <= k) in.resize(k + 1, 0.0);
    in[k] += to_us(until - now) / 1e6;
    now = until;
  };
  for (TimePoint q : times) {
    for (; e < edges.size() && edges[e].at <= q; ++e) {
      spend(edges[e].at);
      busy += edges[e].busy;
      queued += edges[e].queued;
    }
    spend(q);
    t.busy.push_back(static_cast<size_t>(std::max(busy, 0)));
    t.timed.push_back(timed());
  }
  return t;
}

// Stalls per state from their lengths and the seconds spent in each.
std::vector<SendLagModel::Stalls> stalls_of(const std::vector<std::vector<double>>& lengths,
                                            const std::vector<double>& seconds) {
  std::vector<SendLagModel::Stalls> out(std::max(lengths.size(), seconds.size()));
  for (size_t k = 0; k < out.size(); ++k) {
    const double s = k < seconds.size() ? seconds[k] : 0.0;
    if (k >= lengths.size() || lengths[k].empty() || !(s > 0)) continue;
    out[k].per_s = static_cast<double>(lengths[k].size()) / s;
    out[k].us = even_quantiles(lengths[k]);
    if (out[k].us.size() < 2) out[k].us.push_back(out[k].us.front());
  }
  return out;
}

double mean_by(double was, double w, double now, double n) { return (was * w + now * n) / (w + n); }

std::vector<double> merged_quantiles(const std::vector<double>& was, double w,
                                     const std::vector<double>& now, double n) {
  if (was.empty() || w <= 0 || was.size() != now.size()) return now.empty() ? was : now;
  std::vector<double> out(now.size());
  for (size_t k = 0; k < now.size(); ++k) out[k] = mean_by(was[k], w, now[k], n);
  return out;
}

}  // namespace

SendLagModel measure_send_lag(const RunData& run) {
  std::vector<const RunRequest*> sent;
  for (const RunRequest& r : run.requests) {
    if (r.sent != TimePoint{} && r.intended != TimePoint{} && r.sent >= r.intended) {
      sent.push_back(&r);
    }
  }
  SendLagModel m;
  if (sent.size() < 50) return m;
  std::stable_sort(sent.begin(), sent.end(), [](const RunRequest* a, const RunRequest* b) {
    return a->intended < b->intended;
  });
  std::vector<double> lag(sent.size());
  std::vector<TimePoint> times(sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    lag[i] = std::min(to_us(sent[i]->sent - sent[i]->intended), kMaxCostUs);
    times[i] = sent[i]->intended;
  }
  std::vector<double> sorted = lag;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2),
                   sorted.end());
  const double threshold = std::max(kStallLagUs, 4 * sorted[sorted.size() / 2]);
  const StateTrack track = state_track(run, times, std::min(run.start, times.front()));
  std::vector<double> base;
  std::vector<std::vector<double>> alone, waiting;
  for (size_t i = 0; i < sent.size(); ++i) {
    if (lag[i] <= threshold) {
      base.push_back(lag[i]);
      continue;
    }
    // A stall starts here when the request before had gone already.
    if (i > 0 && sent[i - 1]->sent > sent[i]->intended) continue;
    std::vector<std::vector<double>>& in = track.timed[i] ? waiting : alone;
    const size_t k = track.busy[i];
    if (in.size() <= k) in.resize(k + 1);
    in[k].push_back(lag[i]);
  }
  m.base_us = even_quantiles(base.empty() ? std::vector<double>{0.0} : base);
  if (m.base_us.size() < 2) m.base_us.push_back(m.base_us.front());
  m.by_busy = stalls_of(alone, track.seconds);
  m.waiting = stalls_of(waiting, track.waiting);
  return m;
}

SendLagModel merged(const SendLagModel& was, uint64_t w, const SendLagModel& now, uint64_t n) {
  if (was.empty() || w == 0) return now;
  if (now.empty()) return was;
  const double dw = static_cast<double>(w), dn = static_cast<double>(std::max<uint64_t>(n, 1));
  SendLagModel out;
  out.base_us = merged_quantiles(was.base_us, dw, now.base_us, dn);
  auto states = [&](const std::vector<SendLagModel::Stalls>& a,
                    const std::vector<SendLagModel::Stalls>& b) {
    std::vector<SendLagModel::Stalls> v(std::max(a.size(), b.size()));
    for (size_t k = 0; k < v.size(); ++k) {
      const SendLagModel::Stalls x = k < a.size() ? a[k] : SendLagModel::Stalls{};
      const SendLagModel::Stalls y = k < b.size() ? b[k] : SendLagModel::Stalls{};
      v[k].per_s = mean_by(x.per_s, dw, y.per_s, dn);
      v[k].us = merged_quantiles(x.us, x.us.empty() ? 0 : dw, y.us, dn);
    }
    return v;
  };
  out.by_busy = states(was.by_busy, now.by_busy);
  out.waiting = states(was.waiting, now.waiting);
  return out;
}

SendLagDraw::SendLagDraw(const SendLagModel& model, uint64_t seed) : m_(model), state_(seed) {}

double SendLagDraw::uniform() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

TimePoint SendLagDraw::send(TimePoint intended, size_t busy, bool timed, TimePoint last_sent) {
  TimePoint t;
  if (started_ && intended < stall_end_) {
    t = stall_end_;
  } else {
    // A state the run never measured borrows the nearest busy count's.
    const std::vector<SendLagModel::Stalls>& v =
        timed && !m_.waiting.empty() ? m_.waiting : m_.by_busy;
    const SendLagModel::Stalls* s = v.empty() ? nullptr : &v[std::min(busy, v.size() - 1)];
    const double dt = started_ ? to_us(intended - last_intended_) / 1e6 : 0.0;
    const double p = s && !s->us.empty() ? 1.0 - std::exp(-s->per_s * dt) : 0.0;
    if (p > 0 && uniform() < p) {
      const double us = CostModel::quantile_of(s->us, uniform());
      stall_end_ = intended + Duration(std::llround(us * 1000.0));
      t = stall_end_;
    } else {
      const double us = CostModel::quantile_of(m_.base_us, uniform());
      t = intended + Duration(std::llround(us * 1000.0));
    }
  }
  last_intended_ = intended;
  started_ = true;
  return std::max(t, last_sent);
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/tuner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "common/text_out.h"
#include "tuning/tune_headroom.h"

namespace batchscope {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// NaN figures rank worst.
double throughput_key(const Evaluated& e) {
  return std::isnan(e.throughput_rps) ? -kInf : e.throughput_rps;
}
double p99_key(const Evaluated& e) { return std::isnan(e.p99_ms) ? kInf : e.p99_ms; }
double loss_key(const Evaluated& e) {
  const double l = e.loss_rate();
  return std::isnan(l) ? kInf : l;
}

// The cheaper configuration first: fewer lanes, shorter wait, smaller batch,
// fifo before adaptive, then every other field so the order is total.
bool cheaper(const Options& a, const Options& b) {
  auto key = [](const Options& o) {
    return std::make_tuple(o.num_lanes, o.max_wait_us, o.max_batch_size,
                           static_cast<int>(o.strategy), o.target_p99_ms, o.queue_capacity,
                           o.request_timeout_ms, static_cast<int>(o.scheduling), o.max_num_seqs,
                           o.max_num_batched_tokens);
  };
  return key(a) < key(b);
}

// Four significant digits: enough for a message about milliseconds.
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// How far from the SLO an infeasible configuration is: losses first, then p99.
bool closer(const Evaluated& a, const Evaluated& b, double loss_tolerance) {
  const bool a_clean = loss_key(a) <= loss_tolerance, b_clean = loss_key(b) <= loss_tolerance;
  if (a_clean != b_clean) return a_clean;
  if (!a_clean && loss_key(a) != loss_key(b)) return loss_key(a) < loss_key(b);
  if (p99_key(a) != p99_key(b)) return p99_key(a) < p99_key(b);
  return cheaper(a.options, b.options);
}

Error no_slo_met(std::span<const Evaluated> evaluated, double slo_p99_ms, double loss_tolerance) {
  const Evaluated& c = *std::min_element(
      evaluated.begin(), evaluated.end(),
      [&](const Evaluated& a, const Evaluated& b) { return closer(a, b, loss_tolerance); });
  std::string msg = "no configuration meets p99 <= " + number(slo_p99_ms) + " ms with at most " +
                    number(loss_tolerance * 100) + "% of requests rejected, timed out or failed (" +
                    std::to_string(evaluated.size()) +
                    " evaluated); closest: " + describe(c.options) + " with p99 " +
                    number(c.p99_ms) + " ms";
  if (loss_key(c) > loss_tolerance) msg += " and " + number(c.loss_rate() * 100) + "% lost";
  return invalid_argument(msg + " against the SLO of " + number(slo_p99_ms) + " ms");
}

// Ranks evaluated points for the search as choose_best() would; under the
// throughput objective `best_rps` is the best SLO-meeting throughput so far.
struct Ranking {
  double slo_p99_ms;
  TuneObjective objective;
  double loss_tolerance;
  double best_rps = 0;
  // The throughput objective's band; the search climbs with none (a band
  // relative to the best so far moves as the search goes), and choose_best()
  // applies it to everything evaluated.
  double band = kThroughputBand;

  bool better(const Evaluated& a, const Evaluated& b) const {
    const bool fa = meets_slo(a, slo_p99_ms, loss_tolerance);
    const bool fb = meets_slo(b, slo_p99_ms, loss_tolerance);
    if (fa != fb) return fa;
    if (!fa) return closer(a, b, loss_tolerance);
    if (objective == TuneObjective::kThroughput) {
      // Throughputs within the band of the best are equal: open-loop traffic
      // makes every configuration that keeps up serve the offered rate, and
      // the last digits are noise.
      const double floor = best_rps * (1 - band);
      const bool ia = throughput_key(a) >= floor, ib = throughput_key(b) >= floor;
      if (ia != ib) return ia;
      if (!ia && throughput_key(a) != throughput_key(b))
        return throughput_key(a) > throughput_key(b);
      if (p99_key(a) != p99_key(b)) return p99_key(a) < p99_key(b);
    } else {
      if (p99_key(a) != p99_key(b)) return p99_key(a) < p99_key(b);
      if (throughput_key(a) != throughput_key(b)) return throughput_key(a) > throughput_key(b);
    }
    return cheaper(a.options, b.options);
  }
};

// The search's bookkeeping: memo, budget, stop conditions, progress.
struct SearchRun {
  const TuneSpace& space;
  const Options& base;
  const TuneSettings& settings;
  const Evaluator& evaluate;
  TuneResult& result;
  uint64_t total;  // for progress
  Ranking ranking{settings.slo_p99_ms, settings.objective, settings.loss_tolerance, 0, 0};
  uint64_t done = 0;
  const Clock* clock = nullptr;
  std::optional<TimePoint> deadline{};
  std::map<std::vector<size_t>, std::optional<size_t>> memo{};

  void start() {
    static const SteadyClock steady;
    clock = settings.clock ? settings.clock : &steady;
    if (settings.max_seconds > 0) {
      deadline = clock->now() + std::chrono::duration_cast<Duration>(
                                    std::chrono::duration<double>(settings.max_seconds));
    }
  }

  bool stopped() const { return result.cancelled || result.out_of_time || result.out_of_budget; }

  // The position in result.evaluated of the combination `index`, evaluating
  // it the first time; nullopt when validate() refuses it or the search stops.
  std::optional<size_t> visit(const std::vector<size_t>& asked) {
    // Combinations that set the same configuration share one evaluation.
    const std::vector<size_t> index = space.canonical(asked, base);
    if (auto it = memo.find(index); it != memo.end()) return it->second;
    if (done >= settings.max_evaluations) result.out_of_budget = true;
    if (settings.cancel && settings.cancel()) result.cancelled = true;
    if (deadline && clock->now() >= *deadline) result.out_of_time = true;
    if (stopped()) return std::nullopt;
    const Options o = space.combination(index, base, settings.slo_p99_ms);
    std::optional<size_t> at;
    if (!o.validate()) {
      ++result.invalid;
    } else {
      Evaluated e = evaluate(o);
      e.options = o;
      if (meets_slo(e, settings.slo_p99_ms, settings.loss_tolerance)) {
        ranking.best_rps = std::max(ranking.best_rps, throughput_key(e));
      }
      at = result.evaluated.size();
      result.evaluated.push_back(std::move(e));
    }
    memo.emplace(index, at);
    ++done;
    if (settings.progress) settings.progress(done, total);
    return at;
  }

  void finish() {
    if (done < total && settings.progress) settings.progress(done, done);
  }
};

// Calls visit(index) for every index with index[d] in lists[d], last fastest.
template <class F>
void odometer(const std::vector<std::vector<size_t>>& lists, F&& visit) {
  for (const auto& l : lists) {
    if (l.empty()) return;
  }
  std::vector<size_t> pos(lists.size(), 0), index(lists.size());
  for (;;) {
    for (size_t d = 0; d < lists.size(); ++d) index[d] = lists[d][pos[d]];
    if (!visit(index)) return;
    size_t d = lists.size();
    while (d > 0 && ++pos[d - 1] == lists[d - 1].size()) pos[--d] = 0;
    if (d == 0) return;
  }
}

// Every stride-th index of 0..n-1, and n-1.
std::vector<size_t> thinned(size_t n, size_t stride) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; i += stride) out.push_back(i);
  if (n > 0 && out.back() != n - 1) out.push_back(n - 1);
  return out;
}
size_t thinned_size(size_t n, size_t stride) {
  return n == 0 ? 0 : (n - 1) / stride + 1 + ((n - 1) % stride != 0);
}

// Strides, powers of two, that make the coarse grid hold at most `cap` points.
std::vector<size_t> coarse_strides(const TuneSpace& space, uint64_t cap) {
  const auto& dims = space.dimensions();
  std::vector<size_t> stride(dims.size(), 1);
  auto kept = [&](size_t d) { return thinned_size(dims[d].size(), stride[d]); };
  for (;;) {
    double points = 1;
    size_t widest = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      points *= static_cast<double>(kept(d));
      if (kept(d) > kept(widest)) widest = d;
    }
    if (points <= static_cast<double>(cap) || dims.empty() || kept(widest) <= 2) return stride;
    stride[widest] *= 2;
  }
}

// Compass search from `index` with steps stride/2, stride/4, ..., 1.
void refine(SearchRun& run, const TuneSpace& space, const TuneResult& result,
            std::vector<size_t> index, size_t at, const std::vector<size_t>& stride) {
  const auto& dims = space.dimensions();
  std::vector<size_t> step(stride.size());
  for (size_t d = 0; d < stride.size(); ++d) step[d] = stride[d] / 2;
  while (!run.stopped() && std::any_of(step.begin(), step.end(), [](size_t s) { return s > 0; })) {
    bool moved = false;
    for (size_t d = 0; d < dims.size() && !moved && !run.stopped(); ++d) {
      if (step[d] == 0) continue;
      const size_t up = std::min(index[d] + step[d], dims[d].size() - 1);
      const size_t down = index[d] >= step[d] ? index[d] - step[d] : 0;
      for (size_t j : {up, down}) {
        if (j == index[d]) continue;
        std::vector<size_t> cand = index;
        cand[d] = j;
        const auto p = run.visit(cand);
        if (p && run.ranking.better(result.evaluated[*p], result.evaluated[at])) {
          index = std::move(cand);
          at = *p;
          moved = true;
          break;
        }
      }
    }
    if (!moved) {
      for (size_t& s : step) s /= 2;
    }
  }
}

void coarse_then_refine(SearchRun& run, const TuneSpace& space, const TuneSettings& settings,
                        TuneResult& result) {
  const uint64_t cap =
      std::max<uint64_t>(1, std::min(settings.exhaustive_limit, settings.max_evaluations) / 2);
  const std::vector<size_t> stride = coarse_strides(space, cap);
  std::vector<std::vector<size_t>> lists;
  for (size_t d = 0; d < stride.size(); ++d) {
    lists.push_back(thinned(space.dimensions()[d].size(), stride[d]));
  }
  std::vector<std::pair<std::vector<size_t>, size_t>> coarse;  // index, position
  odometer(lists, [&](const std::vector<size_t>& index) {
    if (auto p = run.visit(index)) coarse.emplace_back(index, *p);
    return !run.stopped();
  });
  std::sort(coarse.begin(), coarse.end(), [&](const auto& a, const auto& b) {
    return run.ranking.better(result.evaluated[a.second], result.evaluated[b.second]);
  });
  const size_t seeds = std::min<size_t>(coarse.size(), std::max(settings.refine_seeds, 0));
  for (size_t i = 0; i < seeds && !run.stopped(); ++i) {
    refine(run, space, result, coarse[i].first, coarse[i].second, stride);
  }
}

}  // namespace

const char* objective_name(TuneObjective objective) {
  return objective == TuneObjective::kLatency ? "latency" : "throughput";
}

std::optional<TuneObjective> parse_objective(std::string_view name) {
  if (name == "throughput") return TuneObjective::kThroughput;
  if (name == "latency") return TuneObjective::kLatency;
  return std::nullopt;
}

double Evaluated::loss_rate() const {
  if (sent == 0) return 0;
  return static_cast<double>(rejected + timed_out + errors) / static_cast<double>(sent);
}

Evaluated evaluated_from(const Options& options, const RunSummary& s) {
  Evaluated e;
  e.options = options;
  e.throughput_rps = s.throughput_rps;
  e.p50_ms = s.latency.p50_ms;
  e.p99_ms = s.latency.p99_ms;
  e.sent = s.sent;
  e.ok = s.ok;
  e.rejected = s.rejected;
  e.timed_out = s.timed_out;
  e.errors = s.errors;
  return e;
}

Evaluator evaluator_from_runs(std::function<RunSummary(const Options&)> run) {
  return [run = std::move(run)](const Options& o) { return evaluated_from(o, run(o)); };
}

bool meets_slo(const Evaluated& e, double slo_p99_ms, double loss_tolerance) {
  return e.ok > 0 && e.p99_ms <= slo_p99_ms && loss_key(e) <= loss_tolerance;
}

std::vector<Evaluated> pareto_front(std::vector<Evaluated> evaluated) {
  const size_t n = evaluated.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  auto triple = [&](size_t i) {
    const Evaluated& e = evaluated[i];
    return std::make_tuple(-throughput_key(e), p99_key(e), loss_key(e));
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return triple(a) < triple(b); });
  std::vector<double> ranks;
  for (const Evaluated& e : evaluated) ranks.push_back(p99_key(e));
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  auto rank_of = [&](size_t i) {  // 1-based for the Fenwick tree
    return static_cast<size_t>(std::lower_bound(ranks.begin(), ranks.end(), p99_key(evaluated[i])) -
                               ranks.begin()) +
           1;
  };
  // least[r]: the least loss rate among points seen so far with p99 rank <= r.
  std::vector<double> least(ranks.size() + 1, kInf);
  std::vector<Evaluated> front;
  for (size_t g = 0; g < n;) {
    size_t end = g;
    while (end < n && triple(order[end]) == triple(order[g])) ++end;
    // Points seen so far have at least this throughput; one with p99 and loss
    // no worse differs somewhere, so it dominates the whole group.
    double seen = kInf;
    for (size_t r = rank_of(order[g]); r > 0; r -= r & (~r + 1)) seen = std::min(seen, least[r]);
    if (!(seen <= loss_key(evaluated[order[g]]))) {
      for (size_t k = g; k < end; ++k) front.push_back(evaluated[order[k]]);
    }
    for (size_t r = rank_of(order[g]); r < least.size(); r += r & (~r + 1)) {
      least[r] = std::min(least[r], loss_key(evaluated[order[g]]));
    }
    g = end;
  }
  std::sort(front.begin(), front.end(), [](const Evaluated& a, const Evaluated& b) {
    if (p99_key(a) != p99_key(b)) return p99_key(a) < p99_key(b);
    if (throughput_key(a) != throughput_key(b)) return throughput_key(a) > throughput_key(b);
    if (loss_key(a) != loss_key(b)) return loss_key(a) < loss_key(b);
    return cheaper(a.options, b.options);
  });
  return front;
}

Expected<Evaluated> choose_best(std::span<const Evaluated> evaluated, double slo_p99_ms,
                                TuneObjective objective, double loss_tolerance) {
  if (evaluated.empty()) return invalid_argument("no configuration was evaluated");
  Ranking ranking{slo_p99_ms, objective, loss_tolerance};
  for (const Evaluated& e : evaluated) {
    if (meets_slo(e, slo_p99_ms, loss_tolerance)) {
      ranking.best_rps = std::max(ranking.best_rps, throughput_key(e));
    }
  }
  const Evaluated& best = *std::min_element(
      evaluated.begin(), evaluated.end(),
      [&](const Evaluated& a, const Evaluated& b) { return ranking.better(a, b); });
  if (!meets_slo(best, slo_p99_ms, loss_tolerance)) {
    return no_slo_met(evaluated, slo_p99_ms, loss_tolerance);
  }
  return best;
}

TuneResult search(const TuneSpace& space, const Options& base, const TuneSettings& settings,
                  const Evaluator& evaluate) {
  TuneResult result;
  result.space = space.text();
  result.space_size = space.size();
  result.slo_p99_ms = settings.slo_p99_ms;
  result.objective = settings.objective;
  const bool exhaustive =
      result.space_size <= std::min(settings.exhaustive_limit, settings.max_evaluations);
  result.method =
      exhaustive ? TuneResult::Method::kExhaustive : TuneResult::Method::kCoarseThenRefine;
  SearchRun run{space,    base,   settings,
                evaluate, result, exhaustive ? result.space_size : settings.max_evaluations};
  run.start();
  if (exhaustive) {
    std::vector<std::vector<size_t>> lists;
    for (const TuneDimension& d : space.dimensions()) lists.push_back(thinned(d.size(), 1));
    odometer(lists, [&](const std::vector<size_t>& index) {
      run.visit(index);
      return !run.stopped();
    });
  } else {
    coarse_then_refine(run, space, settings, result);
  }
  run.finish();
  result.pareto = pareto_front(result.evaluated);
  if (!result.evaluated.empty()) {
    result.best = choose_best(result.evaluated, settings.slo_p99_ms, settings.objective,
                              settings.loss_tolerance);
  }
  return result;
}

bool is_stable(const StabilityRule& rule, std::span<const WindowFigures> windows) {
  const size_t n = static_cast<size_t>(std::max(rule.windows, 1));
  if (windows.size() < n) return false;
  const auto last = windows.last(n);
  double rps = 0, p99 = 0;
  for (const WindowFigures& w : last) {
    rps += w.throughput_rps / static_cast<double>(n);
    p99 += w.p99_ms / static_cast<double>(n);
  }
  return std::all_of(last.begin(), last.end(), [&](const WindowFigures& w) {
    return std::abs(w.throughput_rps - rps) <= rule.tolerance * std::abs(rps) &&
           std::abs(w.p99_ms - p99) <= rule.tolerance * std::abs(p99);
  });
}

bool is_stable(const StabilityRule& rule, std::span<const RunWindow> windows) {
  std::vector<WindowFigures> figures;
  for (const RunWindow& w : windows) figures.push_back({w.throughput_rps, w.latency.p99_ms});
  return is_stable(rule, figures);
}

RunWindow combine_windows(std::span<const RunWindow> windows) {
  RunWindow c;
  if (windows.empty()) return c;
  c.start_s = windows.front().start_s;
  const double n = static_cast<double>(windows.size());
  double rps = 0;
  for (const RunWindow& w : windows) {
    c.length_s += w.length_s;
    c.sent += w.sent;
    c.ok += w.ok;
    c.rejected += w.rejected;
    c.timed_out += w.timed_out;
    c.errors += w.errors;
    rps += w.throughput_rps / n;
    c.batch_mean += w.batch_mean / n;
    c.batch_max = std::max(c.batch_max, w.batch_max);
    c.depth_mean += w.depth_mean / n;
    c.depth_max = std::max(c.depth_max, w.depth_max);
    c.latency.max_ms = std::max(c.latency.max_ms, w.latency.max_ms);
  }
  c.throughput_rps = c.length_s > 0 ? static_cast<double>(c.ok) / c.length_s : rps;
  for (const RunWindow& w : windows) {
    const double weight = c.ok > 0 ? static_cast<double>(w.ok) / static_cast<double>(c.ok) : 1 / n;
    for (double RunLatency::*q :
         {&RunLatency::p50_ms, &RunLatency::p90_ms, &RunLatency::p95_ms, &RunLatency::p99_ms,
          &RunLatency::p999_ms, &RunLatency::mean_ms}) {
      c.latency.*q += weight * w.latency.*q;
    }
  }
  return c;
}

StableMeasurement measure_until_stable(const StabilityRule& rule,
                                       const std::function<RunWindow()>& measure_one_window) {
  StableMeasurement m;
  const int trials = std::max(rule.max_trials, std::max(rule.windows, 1));
  for (int i = 0; i < trials && !m.stable; ++i) {
    m.windows.push_back(measure_one_window());
    m.stable = is_stable(rule, m.windows);
  }
  const size_t n = std::min(m.windows.size(), static_cast<size_t>(std::max(rule.windows, 1)));
  m.combined = combine_windows(std::span<const RunWindow>(m.windows).last(n));
  return m;
}

namespace {

// "throughput_rps":...,"p50_ms":...,...,"timed_out":N, in braces or not.
void append_figures(std::string& out, const Evaluated& e, bool braces = true) {
  if (braces) out += '{';
  out += "\"throughput_rps\":";
  append_json_number(out, e.throughput_rps);
  out += ",\"p50_ms\":";
  append_json_number(out, e.p50_ms);
  out += ",\"p99_ms\":";
  append_json_number(out, e.p99_ms);
  out += ",\"sent\":" + std::to_string(e.sent) + ",\"ok\":" + std::to_string(e.ok) +
         ",\"rejected\":" + std::to_string(e.rejected) +
         ",\"timed_out\":" + std::to_string(e.timed_out);
  if (e.band) out += ",\"band\":" + band_json(*e.band);
  if (e.headroom) out += ",\"headroom\":" + headroom_figures_json(*e.headroom);
  if (braces) out += '}';
}

const char* stop_reason(const TuneResult& r) {
  if (r.cancelled) return "\"cancelled\"";
  if (r.out_of_time) return "\"time\"";
  if (r.out_of_budget) return "\"budget\"";
  return "null";
}

}  // namespace

std::string tune_json(const TuneResult& r, const TuneJsonExtra& extra) {
  std::string out = "{\"objective\":";
  append_json_string(out, objective_name(r.objective));
  out += ",\"slo_p99_ms\":";
  append_json_number(out, r.slo_p99_ms);
  out += ",\"space\":";
  append_json_string(out, r.space);
  out += ",\"space_size\":" + std::to_string(r.space_size) + ",\"method\":";
  out += r.method == TuneResult::Method::kExhaustive ? "\"exhaustive\"" : "\"coarse_then_refine\"";
  out += ",\"evaluated\":" + std::to_string(r.evaluated.size()) +
         ",\"invalid\":" + std::to_string(r.invalid) + ",\"stopped\":" + stop_reason(r);
  out += ",\"best\":";
  if (r.best) {
    out += "{\"options\":";
    out += options_to_json(r.best->options);
    out += ",\"predicted\":";
    append_figures(out, *r.best);
    if (extra.measured) {
      out += ",\"measured\":";
      append_figures(out, *extra.measured);
    }
    out += '}';
  } else {
    out += "null,\"error\":";
    append_json_string(out, r.best.error().message);
  }
  out += ",\"pareto\":[";
  for (size_t i = 0; i < r.pareto.size(); ++i) {
    out += i ? ",{\"options\":" : "{\"options\":";
    out += options_to_json(r.pareto[i].options);
    out += ',';
    append_figures(out, r.pareto[i], false);
    out += '}';
  }
  out += ']';
  for (const auto& [key, value] : extra.members) {
    out += ',';
    append_json_string(out, key);
    out += ':' + value;
  }
  return out + '}';
}

}  // namespace batchscope

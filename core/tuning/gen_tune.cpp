// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/gen_tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "common/text_out.h"
#include "tuning/tune_headroom.h"

namespace batchscope {

const char* gen_objective_name(GenObjective objective) {
  switch (objective) {
    case GenObjective::kGoodput: return "goodput";
    case GenObjective::kThroughput: return "throughput";
    case GenObjective::kLatency: return "latency";
  }
  return "?";
}

std::optional<GenObjective> parse_gen_objective(std::string_view name) {
  for (GenObjective o :
       {GenObjective::kGoodput, GenObjective::kThroughput, GenObjective::kLatency}) {
    if (name == gen_objective_name(o)) return o;
  }
  return std::nullopt;
}

std::string GenSlo::describe() const {
  char buf[160];
  std::string out;
  if (ttft_ms > 0) {
    std::snprintf(buf, sizeof buf, "TTFT p%d <= %g ms", quantile, ttft_ms);
    out += buf;
  }
  if (itl_ms > 0) {
    std::snprintf(buf, sizeof buf, "%sITL p%d <= %g ms", out.empty() ? "" : ", ", quantile, itl_ms);
    out += buf;
  }
  return out.empty() ? "no latency bound" : out;
}

double GenEvaluated::loss_rate() const {
  return sent == 0 ? 0.0 : static_cast<double>(failed) / static_cast<double>(sent);
}

namespace {

double at(const Quantiles& q, int quantile) {
  return quantile == 50 ? q.p50 : quantile == 90 ? q.p90 : quantile == 95 ? q.p95 : q.p99;
}

// The cost order of the tie-break: fewer lanes (each a copy of the model),
// fewer sequences, a smaller budget, continuous first, chunked prefill
// first, a shorter wait (then the rest, for a total order).
auto cost_key(const Options& o) {
  return std::make_tuple(o.num_lanes, o.max_num_seqs, o.max_num_batched_tokens,
                         static_cast<int>(o.scheduling), !o.chunked_prefill, o.max_wait_us,
                         o.queue_capacity, o.request_timeout_ms);
}

// How far over its bounds a configuration is: the larger of TTFT / bound and
// ITL / bound (1 or less: within).
double overshoot(const GenEvaluated& e, const GenSlo& slo) {
  double r = 0;
  if (slo.ttft_ms > 0) r = std::max(r, e.ttft_ms / slo.ttft_ms);
  if (slo.itl_ms > 0) r = std::max(r, e.itl_ms / slo.itl_ms);
  return r;
}

double rate_of(const GenEvaluated& e, GenObjective objective) {
  return objective == GenObjective::kThroughput ? e.tokens_per_s : e.goodput_rps;
}
double second_rate_of(const GenEvaluated& e, GenObjective objective) {
  return objective == GenObjective::kThroughput ? e.goodput_rps : e.tokens_per_s;
}

// A strict order on configurations that meet the objective, given `floor`:
// the rate that counts as the best's (1% below the best rate of them all).
bool better(const GenEvaluated& a, const GenEvaluated& b, GenObjective objective, double floor) {
  if (objective == GenObjective::kLatency) {
    if (a.ttft_ms != b.ttft_ms) return a.ttft_ms < b.ttft_ms;
    if (a.itl_ms != b.itl_ms) return a.itl_ms < b.itl_ms;
    if (a.goodput_rps != b.goodput_rps) return a.goodput_rps > b.goodput_rps;
    return cost_key(a.options) < cost_key(b.options);
  }
  const double ra = rate_of(a, objective), rb = rate_of(b, objective);
  const bool a_in = ra >= floor, b_in = rb >= floor;
  if (a_in != b_in) return a_in;
  // Below the band, the higher rate; within it, every rate is the best's and
  // the lower TTFT decides.
  if (!a_in && ra != rb) return ra > rb;
  if (a.ttft_ms != b.ttft_ms) return a.ttft_ms < b.ttft_ms;
  const double sa = second_rate_of(a, objective), sb = second_rate_of(b, objective);
  if (sa != sb) return sa > sb;
  return cost_key(a.options) < cost_key(b.options);
}

std::string figures_line(const GenEvaluated& e, const GenSlo& slo) {
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "TTFT p%d %.3g ms, ITL p%d %.3g ms, %.1f tokens/s, goodput %.2f req/s, lost %.2f%%",
                slo.quantile, e.ttft_ms, slo.quantile, e.itl_ms, e.tokens_per_s, e.goodput_rps,
                100 * e.loss_rate());
  return buf;
}

}  // namespace

GenEvaluated gen_evaluated_from(const Options& options, const GenSummary& s, int quantile) {
  GenEvaluated e;
  e.options = options;
  e.tokens_per_s = s.tokens_per_s;
  e.requests_per_s = s.requests_per_s;
  e.goodput_rps = s.goodput_rps;
  e.ttft_p50_ms = s.ttft.p50;
  e.ttft_ms = at(s.ttft, quantile);
  e.itl_p50_ms = s.itl.p50;
  e.itl_ms = at(s.itl, quantile);
  e.e2e_p50_ms = s.e2e.p50;
  e.e2e_ms = at(s.e2e, quantile);
  e.sent = s.sent;
  e.ok = s.ok;
  e.failed = s.failed;
  e.preemptions = s.preemptions;
  e.steps = s.steps;
  e.decodes_per_step = s.decodes_per_step;
  return e;
}

GenEvaluated median_of_runs(std::span<const GenEvaluated> runs) {
  if (runs.empty()) return {};
  GenEvaluated m = runs.front();
  auto med = [&](auto field) {
    std::vector<double> v;
    for (const GenEvaluated& r : runs) v.push_back(static_cast<double>(r.*field));
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  for (auto f : {&GenEvaluated::tokens_per_s, &GenEvaluated::requests_per_s,
                 &GenEvaluated::goodput_rps, &GenEvaluated::ttft_p50_ms, &GenEvaluated::ttft_ms,
                 &GenEvaluated::itl_p50_ms, &GenEvaluated::itl_ms, &GenEvaluated::e2e_p50_ms,
                 &GenEvaluated::e2e_ms, &GenEvaluated::decodes_per_step}) {
    m.*f = med(f);
  }
  for (auto f : {&GenEvaluated::sent, &GenEvaluated::ok, &GenEvaluated::failed,
                 &GenEvaluated::preemptions, &GenEvaluated::steps}) {
    m.*f = static_cast<uint64_t>(std::llround(med(f)));
  }
  return m;
}

bool meets_gen_slo(const GenEvaluated& e, const GenSlo& slo) {
  return e.ok > 0 && e.loss_rate() <= slo.loss_tolerance &&
         (slo.ttft_ms <= 0 || e.ttft_ms <= slo.ttft_ms) &&
         (slo.itl_ms <= 0 || e.itl_ms <= slo.itl_ms);
}

std::vector<GenEvaluated> gen_pareto_front(std::vector<GenEvaluated> all) {
  auto dominates = [](const GenEvaluated& a, const GenEvaluated& b) {
    const bool no_worse = a.goodput_rps >= b.goodput_rps && a.ttft_ms <= b.ttft_ms &&
                          a.itl_ms <= b.itl_ms && a.loss_rate() <= b.loss_rate();
    const bool better = a.goodput_rps > b.goodput_rps || a.ttft_ms < b.ttft_ms ||
                        a.itl_ms < b.itl_ms || a.loss_rate() < b.loss_rate();
    return no_worse && better;
  };
  // In this order whatever dominates a point comes before it, and whatever
  // dominates a point off the front is dominated by one on it, so each point
  // is checked against the front so far: O(n x front).
  std::sort(all.begin(), all.end(), [](const GenEvaluated& a, const GenEvaluated& b) {
    return std::make_tuple(-a.goodput_rps, a.ttft_ms, a.itl_ms, a.loss_rate(),
                           cost_key(a.options)) <
           std::make_tuple(-b.goodput_rps, b.ttft_ms, b.itl_ms, b.loss_rate(), cost_key(b.options));
  });
  std::vector<GenEvaluated> front;
  for (const GenEvaluated& e : all) {
    const bool beaten = std::any_of(front.begin(), front.end(),
                                    [&](const GenEvaluated& f) { return dominates(f, e); });
    if (!beaten) front.push_back(e);
  }
  std::stable_sort(front.begin(), front.end(), [](const GenEvaluated& a, const GenEvaluated& b) {
    if (a.ttft_ms != b.ttft_ms) return a.ttft_ms < b.ttft_ms;
    return a.goodput_rps > b.goodput_rps;
  });
  return front;
}

std::vector<GenEvaluated> gen_candidates(std::span<const GenEvaluated> evaluated, const GenSlo& slo,
                                         GenObjective objective, size_t k) {
  std::vector<GenEvaluated> meeting;
  double best_rate = 0;
  for (const GenEvaluated& e : evaluated) {
    if (!meets_gen_slo(e, slo)) continue;
    meeting.push_back(e);
    best_rate = std::max(best_rate, rate_of(e, objective));
  }
  // Rates within the band of the best rate count as equal.
  const double floor = best_rate * (1 - kThroughputBand);
  std::stable_sort(
      meeting.begin(), meeting.end(),
      [&](const GenEvaluated& a, const GenEvaluated& b) { return better(a, b, objective, floor); });
  if (meeting.size() > k) meeting.resize(k);
  return meeting;
}

Expected<GenEvaluated> choose_gen_best(std::span<const GenEvaluated> evaluated, const GenSlo& slo,
                                       GenObjective objective) {
  if (evaluated.empty()) return invalid_argument("no configuration was evaluated");
  auto best = gen_candidates(evaluated, slo, objective, 1);
  if (!best.empty()) return best.front();
  const GenEvaluated* closest = nullptr;
  for (const GenEvaluated& e : evaluated) {
    if (e.ok == 0) continue;
    if (!closest) {
      closest = &e;
      continue;
    }
    const bool e_in = e.loss_rate() <= slo.loss_tolerance;
    const bool c_in = closest->loss_rate() <= slo.loss_tolerance;
    if (e_in != c_in) {
      if (e_in) closest = &e;
    } else if (e_in ? overshoot(e, slo) < overshoot(*closest, slo)
                    : e.loss_rate() < closest->loss_rate()) {
      closest = &e;
    }
  }
  if (!closest) {
    return invalid_argument("no configuration completed a request: every one failed all it sent");
  }
  char lost[48];
  std::snprintf(lost, sizeof lost, " with at most %g%% lost", 100 * slo.loss_tolerance);
  return invalid_argument("no configuration meets " + slo.describe() + lost + "; the closest is " +
                          describe_generation(closest->options) + ": " +
                          figures_line(*closest, slo));
}

std::string default_gen_space_text() {
  return "scheduling=continuous|static,max_num_seqs=1..256,max_num_batched_tokens=64..4096,"
         "max_wait_ms=0|5|20";
}

Expected<TuneSpace> parse_gen_space(const std::string& text) {
  auto space = TuneSpace::parse(text.empty() ? default_gen_space_text() : text);
  if (!space) return space.error();
  if (space->size() > kMaxGenSpace) {
    return invalid_argument(std::to_string(space->size()) +
                            " combinations; a generative tune evaluates every one, so it takes "
                            "at most " +
                            std::to_string(kMaxGenSpace));
  }
  for (const TuneDimension& d : space->dimensions()) {
    if (d.kind == TuneDimension::Kind::kStrategy || d.field == "max_batch_size" ||
        d.field == "target_p99_ms") {
      return invalid_argument(d.entry +
                              " is a tensor model's option; a generative model searches "
                              "scheduling, max_num_seqs, max_num_batched_tokens, max_wait "
                              "and lanes");
    }
  }
  return space;
}

GenTuneResult gen_search(const TuneSpace& space, const Options& base,
                         const GenTuneSettings& settings, const GenEvaluator& evaluate) {
  GenTuneResult r;
  r.space = space.text();
  r.space_size = space.size();
  r.slo = settings.slo;
  r.objective = settings.objective;
  SteadyClock steady;
  const Clock& clock = settings.clock ? *settings.clock : steady;
  const TimePoint start = clock.now();
  std::set<std::string> seen;
  uint64_t done = 0;
  const uint64_t total = std::min(r.space_size, settings.max_evaluations);
  uint64_t unfit = 0;  // chunked prefill off with a budget below the context
  const TuneEnumeration walk = space.for_each_until(base, [&](const Options& combination) {
    Options o = combination;
    if (!o.chunked_prefill && o.max_num_batched_tokens < settings.context) {
      ++unfit;
      return true;
    }
    // A wait only holds a static batch: continuous combinations that differ
    // in max_wait alone are one configuration.
    if (o.scheduling == Scheduling::kContinuous) o.max_wait_us = base.max_wait_us;
    if (!seen.insert(describe(o) + " " + describe_generation(o)).second) {
      ++r.alike;
      return true;
    }
    if (settings.cancel && settings.cancel()) {
      r.cancelled = true;
      return false;
    }
    if (settings.max_seconds > 0 &&
        std::chrono::duration<double>(clock.now() - start).count() >= settings.max_seconds) {
      r.out_of_time = true;
      return false;
    }
    if (r.evaluated.size() >= settings.max_evaluations) {
      r.out_of_budget = true;
      return false;
    }
    r.evaluated.push_back(evaluate(o));
    r.evaluated.back().options = o;
    if (settings.progress) settings.progress(++done, total);
    return !(settings.first_meeting && meets_gen_slo(r.evaluated.back(), r.slo));
  });
  r.invalid = walk.invalid + unfit;
  r.pareto = gen_pareto_front(r.evaluated);
  r.best = choose_gen_best(r.evaluated, r.slo, r.objective);
  return r;
}

Expected<ArrivalSpec> scaled_traffic(const ArrivalSpec& spec, double factor) {
  if (spec.pattern == Pattern::kClosed) {
    return invalid_argument(
        "a closed loop has no arrival rate to raise; use an open pattern "
        "(poisson, burst, step, ramp, sine, constant or trace)");
  }
  if (!(factor > 0) || !std::isfinite(factor)) {
    return invalid_argument("the rate factor must be above 0");
  }
  ArrivalSpec s = spec;
  s.rate *= factor;
  s.rate_low *= factor;
  s.rate_from *= factor;
  s.rate_to *= factor;
  s.rate_min *= factor;
  s.rate_max *= factor;
  for (auto& step : s.steps) step.first *= factor;
  s.trace_speed *= factor;
  if (Status st = s.validate(); !st) return st.error();
  return s;
}

double mean_rate(const ArrivalSpec& spec) {
  ArrivalSchedule schedule(spec);
  uint64_t n = 0;
  Duration first{0}, last{0};
  while (auto t = schedule.next()) {
    if (n++ == 0) first = *t;
    last = *t;
  }
  // A trace: its intervals over its span (the run's length when the span is
  // nothing, as a replay fast enough makes it).
  const double span = std::chrono::duration<double>(last - first).count();
  if (spec.pattern == Pattern::kTrace && n > 1 && span > 0) {
    return static_cast<double>(n - 1) / span;
  }
  return spec.duration_s > 0 ? static_cast<double>(n) / spec.duration_s : 0.0;
}

MaxRate max_rate(const std::function<std::optional<GenEvaluated>(double factor)>& feasible,
                 double start, double precision, double lo, double hi) {
  MaxRate m;
  auto probe = [&](double f) {
    ++m.searches;
    return feasible(f);
  };
  double good = 0, bad = 0;
  std::optional<GenEvaluated> at;
  double f = std::clamp(start, lo, hi);
  if (auto e = probe(f)) {
    good = f;
    at = e;
    // Up by doubling until one misses.
    while (good < hi) {
      f = std::min(good * 2, hi);
      auto next = probe(f);
      if (!next) {
        bad = f;
        break;
      }
      good = f;
      at = next;
    }
  } else {
    bad = f;
    // Down by halving until one is met.
    while (bad > lo) {
      f = std::max(bad / 2, lo);
      auto next = probe(f);
      if (next) {
        good = f;
        at = next;
        break;
      }
      bad = f;
    }
  }
  if (good > 0 && bad > 0) {
    while ((bad - good) / good > precision) {
      f = (good + bad) / 2;
      if (auto e = probe(f)) {
        good = f;
        at = e;
      } else {
        bad = f;
      }
    }
  }
  m.factor = good;
  m.at = at;
  m.refused_factor = bad;
  return m;
}

std::string gen_figures_json(const GenEvaluated& e, int quantile) {
  std::string out = "{";
  auto number = [&](const char* key, double v) {
    if (out.size() > 1) out += ',';
    append_json_string(out, key);
    out += ':';
    append_json_number(out, v);
  };
  auto count = [&](const char* key, uint64_t v) {
    out += ',';
    append_json_string(out, key);
    out += ':' + std::to_string(v);
  };
  number("tokens_per_s", e.tokens_per_s);
  number("requests_per_s", e.requests_per_s);
  number("goodput_rps", e.goodput_rps);
  // The objective's quantile by name (p50's are there in any case).
  const std::string q = "_p" + std::to_string(quantile) + "_ms";
  number("ttft_p50_ms", e.ttft_p50_ms);
  if (quantile != 50) number(("ttft" + q).c_str(), e.ttft_ms);
  number("itl_p50_ms", e.itl_p50_ms);
  if (quantile != 50) number(("itl" + q).c_str(), e.itl_ms);
  number("e2e_p50_ms", e.e2e_p50_ms);
  if (quantile != 50) number(("e2e" + q).c_str(), e.e2e_ms);
  count("sent", e.sent);
  count("ok", e.ok);
  count("failed", e.failed);
  count("preemptions", e.preemptions);
  count("steps", e.steps);
  number("decodes_per_step", e.decodes_per_step);
  if (e.band) out += ",\"band\":" + gen_band_json(*e.band);
  if (e.headroom) out += ",\"headroom\":" + headroom_figures_json(*e.headroom);
  return out + '}';
}

std::string gen_band_json(const GenBand& b) {
  std::string out = "{\"fast\":";
  append_json_number(out, b.fast);
  out += ",\"slow\":";
  append_json_number(out, b.slow);
  auto range = [&](const char* name, const FigureRange& r) {
    append_format(out, ",\"%s\":[", name);
    append_json_number(out, r.low);
    out += ',';
    append_json_number(out, r.high);
    out += ']';
  };
  range("ttft_ms", b.ttft_ms);
  range("itl_ms", b.itl_ms);
  range("tokens_per_s", b.tokens_per_s);
  range("goodput_rps", b.goodput_rps);
  return out + '}';
}

std::string gen_tune_json(const GenTuneResult& r, const std::optional<GenEvaluated>& measured,
                          const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out = "{\"kind\":\"generation\",\"objective\":";
  append_json_string(out, gen_objective_name(r.objective));
  const std::string q = "_p" + std::to_string(r.slo.quantile) + "_ms\":";
  out += ",\"slo\":{\"ttft" + q;
  append_json_number(out, r.slo.ttft_ms);
  out += ",\"itl" + q;
  append_json_number(out, r.slo.itl_ms);
  out += ",\"quantile\":" + std::to_string(r.slo.quantile) + "},\"space\":";
  append_json_string(out, r.space);
  out += ",\"space_size\":" + std::to_string(r.space_size) +
         ",\"evaluated\":" + std::to_string(r.evaluated.size()) +
         ",\"invalid\":" + std::to_string(r.invalid) + ",\"alike\":" + std::to_string(r.alike) +
         ",\"stopped\":";
  out += r.cancelled       ? "\"cancelled\""
         : r.out_of_time   ? "\"time\""
         : r.out_of_budget ? "\"budget\""
                           : "null";
  out += ",\"best\":";
  if (r.best) {
    out += "{\"options\":" + options_to_json(r.best->options) +
           ",\"predicted\":" + gen_figures_json(*r.best, r.slo.quantile);
    if (measured) out += ",\"measured\":" + gen_figures_json(*measured, r.slo.quantile);
    out += '}';
  } else {
    out += "null,\"error\":";
    append_json_string(out, r.best.error().message);
  }
  out += ",\"pareto\":[";
  for (size_t i = 0; i < r.pareto.size(); ++i) {
    out += i ? "," : "";
    out += "{\"options\":" + options_to_json(r.pareto[i].options) +
           ",\"figures\":" + gen_figures_json(r.pareto[i], r.slo.quantile) + '}';
  }
  out += ']';
  for (const auto& [key, value] : members) {
    out += ',';
    append_json_string(out, key);
    out += ':' + value;
  }
  return out + '}';
}

}  // namespace batchscope

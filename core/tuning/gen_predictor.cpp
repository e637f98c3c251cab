// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/gen_predictor.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "generation/gen_scheduler.h"

namespace batchscope {

Duration GenStepCost::of_step(uint32_t decodes, uint32_t prefill_tokens, uint64_t context,
                              uint64_t prefill_reads) const {
  double us = 0;
  if (roofline) {
    us = roofline->step_us(decodes, prefill_tokens, context, prefill_reads) * roofline_scale;
  } else if (grid.has_decodes() || grid.has_prefill()) {
    const double d = decodes, p = prefill_tokens;
    const double position = decodes > 0 ? static_cast<double>(context) / d : 0;
    auto line = [&](double n, double at) { return step_us + decode_us * n + context_us * n * at; };
    double decode_part = 0, prefill_part = 0;
    if (decodes > 0) {
      double at_d = d, at_p = position;
      decode_part = grid.has_decodes() ? grid.decode_us(d, position, at_d, at_p) +
                                             line(d, position) - line(at_d, at_p)
                                       : line(d, position);
    }
    if (prefill_tokens > 0) {
      double at = p;
      prefill_part = grid.has_prefill() ? grid.prefill_us(p, at) + prefill_token_us * (p - at)
                                        : step_us + prefill_token_us * p;
    }
    us = decodes > 0 && prefill_tokens > 0 ? decode_part + prefill_part - grid.floor_us()
                                           : decode_part + prefill_part;
    us = std::max(us, 0.0);
  } else {
    // As the synthetic model spends it: one product where both rates agree, so
    // the same step gives the same nanoseconds.
    us = decode_us == prefill_token_us
             ? step_us + decode_us * static_cast<double>(decodes + prefill_tokens)
             : step_us + decode_us * decodes + prefill_token_us * prefill_tokens;
    if (context_us > 0) us += context_us * static_cast<double>(context);
  }
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us));
}

namespace {

double factor_in(const std::vector<StepSpreadPoint>& spread, double u) {
  if (spread.empty()) return 1;
  if (u <= spread.front().q) return spread.front().ratio;
  for (size_t i = 1; i < spread.size(); ++i) {
    const StepSpreadPoint& a = spread[i - 1];
    const StepSpreadPoint& b = spread[i];
    if (u <= b.q) return a.ratio + (b.ratio - a.ratio) * (u - a.q) / (b.q - a.q);
  }
  return spread.back().ratio;
}

}  // namespace

double GenStepCost::factor_at(double u) const { return factor_in(spread, u); }

double GenStepCost::factor_at(double u, uint32_t decodes, bool prefill) const {
  if (grid.has_decodes() || grid.has_prefill()) return factor_in(spread, u);
  return factor_in(spread_for(spread, spreads, decodes, prefill), u);
}

GenStepCost GenStepCost::scaled(double factor) const {
  GenStepCost c = *this;
  for (double* v : {&c.step_us, &c.decode_us, &c.prefill_token_us, &c.context_us, &c.between_us}) {
    *v *= factor;
  }
  for (StepLaneFit& f : c.by_lanes) {
    for (double* v : {&f.step_us, &f.token_us, &f.context_us, &f.prefill_token_us, &f.between_us}) {
      *v *= factor;
    }
  }
  c.grid = grid.scaled(factor);
  c.roofline_scale *= factor;
  return c;
}

bool GenStepCost::has_lanes(uint32_t n) const {
  if (roofline) return n == 1;  // one replica; more are planned as replicas
  if (exact || n == lanes) return true;
  for (const StepLaneFit& f : by_lanes) {
    if (f.lanes == n) return true;
  }
  return false;
}

GenStepCost GenStepCost::at_lanes(uint32_t n) const {
  if (n == lanes) return *this;
  for (const StepLaneFit& f : by_lanes) {
    if (f.lanes != n) continue;
    GenStepCost c = *this;
    c.step_us = f.step_us;
    c.decode_us = f.token_us;
    c.context_us = f.context_us;
    c.prefill_token_us = f.prefill_token_us;
    c.between_us = f.between_us;
    c.grid = StepGrid();
    c.lanes = n;
    return c;
  }
  return *this;
}

std::string GenStepCost::text() const {
  if (roofline) return "the roofline of " + roofline->describe();
  char buf[256];
  std::snprintf(buf, sizeof buf, "%.1f us + %.3f us per decode + %.3f us per prompt token", step_us,
                decode_us, prefill_token_us);
  std::string out = buf;
  if (context_us > 0) {
    std::snprintf(buf, sizeof buf, " + %.3g us per cached token read", context_us);
    out += buf;
  }
  if (between_us > 0) {
    std::snprintf(buf, sizeof buf, ", %.1f us between steps", between_us);
    out += buf;
  }
  if (lanes != 1) {
    std::snprintf(buf, sizeof buf, ", measured at %u lanes", lanes);
    out += buf;
  }
  for (const StepLaneFit& f : by_lanes) {
    std::snprintf(buf, sizeof buf, "; at %u lane%s %.1f us + %.3f us per decode", f.lanes,
                  f.lanes == 1 ? "" : "s", f.step_us, f.token_us);
    out += buf;
  }
  if (grid.size() > 0) {
    std::snprintf(buf, sizeof buf, ", a grid of %zu measured points", grid.size());
    out += buf;
  }
  if (!spread.empty()) {
    const StepSpreadPoint* lo = &spread.front();
    for (const StepSpreadPoint& p : spread) {
      if (p.q <= 0.05 + 1e-9) lo = &p;
    }
    std::snprintf(buf, sizeof buf, ", spread x%.2f..x%.2f (q %.2f..%.2f)", lo->ratio,
                  spread.back().ratio, lo->q, spread.back().q);
    out += buf;
  }
  if (!spreads.empty() && grid.size() == 0) {
    out += ", by decodes";
    for (const StepSpreadBucket& b : spreads) {
      const std::vector<StepSpreadPoint>& p = b.spread;
      const auto mid = std::find_if(p.begin(), p.end(),
                                    [](const StepSpreadPoint& x) { return x.q >= 0.5 - 1e-9; });
      const double m = mid != p.end() ? mid->ratio : p.back().ratio;
      if (b.prefill) {
        std::snprintf(buf, sizeof buf, " prefill x%.2f", m);
      } else if (b.decodes_from == b.decodes_to) {
        std::snprintf(buf, sizeof buf, " %u x%.2f", b.decodes_from, m);
      } else {
        std::snprintf(buf, sizeof buf, " %u-%u x%.2f", b.decodes_from, b.decodes_to, m);
      }
      out += buf;
    }
    out += " (medians)";
  }
  return out;
}

namespace {

// The stand-in model: its step is its cost on the virtual clock.
class CostLm final : public LmRunner {
 public:
  CostLm(LmInfo info, GenStepCost cost, ManualClock& clock, uint64_t seed)
      : info_(std::move(info)), cost_(std::move(cost)), clock_(clock), rng_(seed) {}
  const LmInfo& info() const override { return info_; }
  Expected<LmLogits> step(const LmStep& step) override {
    uint32_t prefill = 0;
    uint64_t context = 0;  // as the scheduler counts it: the positions already cached
    uint64_t reads = 0;    // the positions the prefill tokens attend to, themselves included
    size_t rows = step.decodes.size();
    for (const PrefillChunk& p : step.prefills) {
      const uint64_t n = p.tokens.size(), start = static_cast<uint64_t>(std::max(0, p.start));
      prefill += static_cast<uint32_t>(n);
      context += start;
      reads += n * start + n * (n + 1) / 2;
      rows += p.want_logits;
    }
    for (const DecodeItem& d : step.decodes)
      context += static_cast<uint64_t>(std::max(0, d.position));
    Duration cost =
        cost_.of_step(static_cast<uint32_t>(step.decodes.size()), prefill, context, reads);
    if (cost_.has_spread()) {
      const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;  // the same on every platform
      const double f = cost_.factor_at(u, static_cast<uint32_t>(step.decodes.size()), prefill > 0);
      cost = std::chrono::duration_cast<Duration>(cost * f);
    }
    // At least a nanosecond: a step that took no time would stop the clock.
    clock_.advance(std::max(Duration(1), cost));
    LmLogits out;
    out.rows = rows;
    out.values.assign(rows * static_cast<size_t>(std::max(1, info_.vocab_size)), 0.0f);
    return out;
  }

 private:
  LmInfo info_;
  GenStepCost cost_;
  ManualClock& clock_;
  std::mt19937_64 rng_;
};

Duration seconds_of(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

}  // namespace

namespace {

// One engine lane on its own virtual clock: its model, its scheduler, the
// requests given to it that have not entered its scheduler, and its last
// step, whose finished requests count as done at that step's end.
struct VirtualLane {
  ManualClock clock;
  std::unique_ptr<CostLm> lm;
  std::unique_ptr<GenScheduler> sched;
  struct Add {
    uint64_t id;
    GenRequest request;
    TimePoint arrival, deadline;
  };
  std::vector<Add> inbox;
  uint32_t outstanding = 0;  // given to it and not yet counted done
  TimePoint ready{};         // it may step from here (its last end and the time between)
  bool parked = true;        // its last step() ran nothing: it waits for `wake` or a request
  TimePoint wake = kNever;
  TimePoint ending = kNever;  // its last step's end, while `ended` are not counted
  uint32_t ended = 0;

  TimePoint next_step() const { return !inbox.empty() || !parked ? ready : wake; }
};

}  // namespace

GenRun predict_gen(const ArrivalSpec& spec, GenWorkload& workload, const Options& o,
                   const LmInfo& model, const GenStepCost& cost, uint64_t max_steps) {
  const uint32_t lane_count = std::max<uint32_t>(o.num_lanes, 1);
  const GenStepCost lane_cost = cost.at_lanes(lane_count);
  std::vector<std::unique_ptr<VirtualLane>> lanes;
  for (uint32_t i = 0; i < lane_count; ++i) {
    auto l = std::make_unique<VirtualLane>();
    const uint64_t seed = (spec.seed ^ 0x5eedc057ULL) + i * 0x9e3779b97f4a7c15ULL;
    l->lm = std::make_unique<CostLm>(model, lane_cost, l->clock, seed);
    l->sched = std::make_unique<GenScheduler>(*l->lm, l->clock);
    l->ready = l->clock.now();
    lanes.push_back(std::move(l));
  }
  GenRun run;
  run.start = lanes[0]->clock.now();
  std::vector<GenRequestResult>& results = run.requests;
  const bool closed = spec.pattern == Pattern::kClosed;
  ArrivalSchedule schedule(spec);
  std::optional<Duration> next;
  if (!closed) next = schedule.next();
  const TimePoint end_of_closed = run.start + seconds_of(spec.duration_s);
  uint64_t sent = 0, pending = 0, next_id = 1;
  bool accepted = false;  // the last send was admitted
  // A closed loop refused at once sends again when fewer than this are in
  // flight, as run_gen_load waits for an answer (0: not blocked), or with
  // none in flight at retry_at, 10 ms on.
  uint64_t blocked_at = 0;
  TimePoint retry_at = kNever;

  // As run_gen_load sends and books a request through GenEngineTarget, and
  // as GenEngine::submit gives it to the lane with the fewest outstanding.
  auto send = [&](Duration offset) {
    const GenLengths len = workload.next();
    GenRequestResult r;
    r.intended = offset;
    r.prompt_tokens = len.prompt;
    r.max_tokens = len.max_tokens;
    const size_t i = results.size();
    results.push_back(r);
    ++sent;
    GenRequest req = gen_request_of(workload.prompt_text(len.prompt), len.max_tokens);
    req.on_text = [&results, i](std::string_view, uint32_t tokens, TimePoint when) {
      if (tokens == 0) return;
      GenRequestResult& q = results[i];
      if (q.last != kNever) q.gaps.push_back(when - q.last);
      if (q.first == kNever) q.first = when;
      q.last = when;
      q.output_tokens += tokens;
    };
    req.on_done = [&results, i](const GenRecord& rec) {
      GenRequestResult& q = results[i];
      q.done = true;
      q.ok = rec.reason == FinishReason::kStop || rec.reason == FinishReason::kLength;
      q.outcome = finish_reason_name(rec.reason);
      q.finished = rec.finished;
      q.output_tokens = std::max(q.output_tokens, rec.output_tokens);
    };
    const TimePoint arrival = run.start + offset;
    auto refuse = [&](const char* outcome) {
      GenRequestResult& q = results[i];
      q.done = true;
      q.outcome = outcome;
      q.finished = arrival;
    };
    if (!lanes[0]->sched->check(req)) return refuse("refused");
    size_t queued = 0;
    VirtualLane* to = nullptr;
    for (const auto& l : lanes) {
      queued += l->inbox.size() + l->sched->waiting();
      if (!to || l->outstanding < to->outstanding) to = l.get();
    }
    if (queued >= o.queue_capacity) return refuse("rejected");
    ++pending;
    ++to->outstanding;
    accepted = true;
    to->inbox.push_back({next_id++, std::move(req), arrival,
                         arrival + std::chrono::milliseconds(o.request_timeout_ms)});
  };
  auto count_done = [&](VirtualLane& l, uint32_t n) {
    pending -= std::min<uint64_t>(pending, n);
    l.outstanding -= std::min(l.outstanding, n);
  };

  const Duration between = std::chrono::duration_cast<Duration>(
      std::chrono::duration<double, std::micro>(lane_cost.between_us));
  uint64_t steps = 0;
  for (;;) {
    // The next thing to happen: a send, a step's end, a lane's step.
    TimePoint now = retry_at;
    if (next) now = std::min(now, run.start + *next);
    if (closed && blocked_at == 0 && pending < spec.concurrency && sent == 0) now = run.start;
    for (const auto& l : lanes) now = std::min({now, l->ending, l->next_step()});
    if (now == kNever) break;

    // Sends at `now` see the lanes as they are before any step ending now.
    while (next && run.start + *next <= now) {
      send(*next);
      next = schedule.next();
    }
    for (const auto& l : lanes) {
      if (l->ending <= now) {
        count_done(*l, l->ended);
        l->ending = kNever;
        l->ended = 0;
      }
    }
    if (closed) {
      // After a refusal, the next send waits for a request in flight to end,
      // as run_gen_load's does (with none in flight, for the end of the run).
      if (blocked_at > 0 && (pending < blocked_at || now >= retry_at)) {
        blocked_at = 0;
        retry_at = kNever;
      }
      while (blocked_at == 0 && pending < spec.concurrency && now < end_of_closed &&
             !(spec.max_requests && sent >= spec.max_requests)) {
        accepted = false;
        send(now - run.start);
        if (!accepted) {
          blocked_at = pending > 0 ? pending : UINT64_MAX;
          if (pending == 0) retry_at = now + std::chrono::milliseconds(10);
        }
      }
    }
    bool stop = false;
    for (const auto& lp : lanes) {
      VirtualLane& l = *lp;
      if (l.next_step() > now) continue;
      l.clock.advance_to(now);
      for (VirtualLane::Add& a : l.inbox) {
        l.sched->add(a.id, std::move(a.request), a.arrival, a.deadline);
      }
      l.inbox.clear();
      StepOutcome out = l.sched->step(o);
      l.parked = !out.ran;
      l.wake = out.ran || out.wake > now ? out.wake : now + Duration(1);
      if (!out.ran) {
        count_done(l, static_cast<uint32_t>(out.finished.size()));  // expired before a step
        l.ready = now;
        continue;
      }
      l.ending = l.clock.now();
      l.ended = static_cast<uint32_t>(out.finished.size());
      if (out.step.step > 0) {
        out.step.lane = static_cast<uint32_t>(&lp - lanes.data());
        run.steps.push_back(std::move(out.step));
        if (between > Duration(0)) l.clock.advance(between);  // the engine's own, between steps
      }
      l.ready = l.clock.now();
      if (++steps >= max_steps) {
        stop = true;
        break;
      }
    }
    if (stop) {
      for (const auto& l : lanes) {
        l->sched->fail_all("predictor stopped after " + std::to_string(max_steps) + " steps");
      }
      break;
    }
  }
  // The serving stack's own time per request (a roofline's): every request
  // of an open-loop run reaches the engine that much later, which moves its
  // whole schedule by as much and changes nothing else.
  if (cost.roofline && cost.roofline->constants().request_us > 0) {
    const Duration d =
        std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(
            cost.roofline->constants().request_us * cost.roofline_scale));
    for (GenRequestResult& r : results) {
      if (r.first != kNever) r.first += d;
      if (r.last != kNever) r.last += d;
      if (r.ok && r.finished != kNever) r.finished += d;
    }
  }
  return run;
}

GenEvaluator predicted_evaluator(const ArrivalSpec& traffic,
                                 std::function<GenWorkload(uint64_t seed)> workload,
                                 const LmInfo& model, const GenStepCost& cost, const GenSlo& slo) {
  return [traffic, workload = std::move(workload), model, cost, slo](const Options& o) {
    GenWorkload w = workload(traffic.seed);
    const GenRun run = predict_gen(traffic, w, o, model, cost);
    return gen_evaluated_from(o, summarize_gen(run, slo.ttft_ms, slo.itl_ms), slo.quantile);
  };
}

std::function<GenEvaluated(const Options&, double, double)> scaled_predicted_evaluator(
    const ArrivalSpec& traffic, std::function<GenWorkload(uint64_t seed)> workload,
    const LmInfo& model, const GenStepCost& cost, const GenSlo& slo) {
  return [=](const Options& o, double slow, double rate) {
    ArrivalSpec at = traffic;
    if (rate != 1) {
      auto s = scaled_traffic(traffic, rate);
      if (!s) {  // no such traffic: it cannot meet the objective
        GenEvaluated none;
        none.options = o;
        none.sent = none.failed = 1;
        return none;
      }
      at = *s;
    }
    return predicted_evaluator(at, workload, model, slow == 1 ? cost : cost.scaled(slow), slo)(o);
  };
}

}  // namespace batchscope

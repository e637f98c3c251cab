// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/gen_predictor.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "generation/gen_scheduler.h"

namespace batchscope {

Duration GenStepCost::of_step(uint32_t decodes, uint32_t prefill_tokens) const {
  // As the synthetic model spends it: one product where both rates agree, so
  // the same step gives the same nanoseconds.
  const double us = decode_us == prefill_token_us
                        ? step_us + decode_us * static_cast<double>(decodes + prefill_tokens)
                        : step_us + decode_us * decodes + prefill_token_us * prefill_tokens;
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us));
}

namespace {

// The stand-in model: its step is its cost on the virtual clock.
class CostLm final : public LmRunner {
 public:
  CostLm(LmInfo info, GenStepCost cost, ManualClock& clock)
      : info_(std::move(info)), cost_(cost), clock_(clock) {}
  const LmInfo& info() const override { return info_; }
  Expected<LmLogits> step(const LmStep& step) override {
    uint32_t prefill = 0;
    size_t rows = step.decodes.size();
    for (const PrefillChunk& p : step.prefills) {
      prefill += static_cast<uint32_t>(p.tokens.size());
      rows += p.want_logits;
    }
    // At least a nanosecond: a step that took no time would stop the clock.
    clock_.advance(
        std::max(Duration(1), cost_.of_step(static_cast<uint32_t>(step.decodes.size()), prefill)));
    LmLogits out;
    out.rows = rows;
    out.values.assign(rows * static_cast<size_t>(std::max(1, info_.vocab_size)), 0.0f);
    return out;
  }

 private:
  LmInfo info_;
  GenStepCost cost_;
  ManualClock& clock_;
};

Duration seconds_of(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

}  // namespace

GenRun predict_gen(const ArrivalSpec& spec, GenWorkload& workload, const Options& o,
                   const LmInfo& model, const GenStepCost& cost, uint64_t max_steps) {
  ManualClock clock;
  CostLm lm(model, cost, clock);
  GenScheduler sched(lm, clock);
  GenRun run;
  run.start = clock.now();
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

  // As run_gen_load sends and books a request through GenEngineTarget.
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
    req.on_done = [&results, &pending, i](const GenRecord& rec) {
      GenRequestResult& q = results[i];
      q.done = true;
      q.ok = rec.reason == FinishReason::kStop || rec.reason == FinishReason::kLength;
      q.outcome = finish_reason_name(rec.reason);
      q.finished = rec.finished;
      q.output_tokens = std::max(q.output_tokens, rec.output_tokens);
      --pending;
    };
    const TimePoint arrival = run.start + offset;
    auto refuse = [&](const char* outcome) {
      GenRequestResult& q = results[i];
      q.done = true;
      q.outcome = outcome;
      q.finished = arrival;
    };
    if (!sched.check(req)) return refuse("refused");
    if (sched.waiting() >= o.queue_capacity) return refuse("rejected");
    ++pending;
    accepted = true;
    sched.add(next_id++, std::move(req), arrival,
              arrival + std::chrono::milliseconds(o.request_timeout_ms));
  };

  uint64_t steps = 0;
  for (;;) {
    const TimePoint now = clock.now();
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
    } else {
      while (next && run.start + *next <= now) {
        send(*next);
        next = schedule.next();
      }
    }
    StepOutcome out = sched.step(o);
    if (out.ran) {
      if (out.step.step > 0) run.steps.push_back(std::move(out.step));
      if (++steps >= max_steps) {
        sched.fail_all("predictor stopped after " + std::to_string(max_steps) + " steps");
        break;
      }
      continue;
    }
    TimePoint at = std::min(out.wake, retry_at);
    if (next) at = std::min(at, run.start + *next);
    if (at == kNever) break;
    clock.advance_to(std::max(at, now + Duration(1)));
  }
  return run;
}

}  // namespace batchscope

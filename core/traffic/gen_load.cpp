// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/gen_load.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <optional>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/text_out.h"
#include "runs/histogram.h"
#include "traffic/progress_beat.h"

namespace batchscope {

GenRequest gen_request_of(const std::string& prompt, uint32_t max_tokens) {
  GenRequest r;
  r.prompt.assign(prompt.begin(), prompt.end());
  for (int32_t& t : r.prompt) t &= 0xFF;
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;  // lengths as the workload asks
  return r;
}

void GenEngineTarget::send(const std::string& prompt, uint32_t max_tokens, Callbacks cb) {
  GenRequest r = gen_request_of(prompt, max_tokens);
  auto shared = std::make_shared<Callbacks>(std::move(cb));
  r.on_text = [shared](std::string_view, uint32_t tokens, TimePoint when) {
    if (tokens > 0) shared->on_tokens(when, tokens);
  };
  r.on_done = [shared](const GenRecord& rec) {
    const bool ok = rec.reason == FinishReason::kStop || rec.reason == FinishReason::kLength;
    shared->on_done(ok, rec.output_tokens, rec.finished, finish_reason_name(rec.reason));
  };
  auto id = engine_.submit(std::move(r));
  if (!id) {
    shared->on_done(false, 0, engine_.clock().now(),
                    id.error().code == ErrorCode::kQueueFull ? "rejected" : "refused");
  }
}

namespace {

struct Book {
  Mutex mu;
  std::condition_variable cv;
  std::vector<GenRequestResult> results GUARDED_BY(mu);
  std::vector<uint64_t> ended GUARDED_BY(mu);  // since the last hand-over
  uint64_t pending GUARDED_BY(mu) = 0;
};

constexpr Duration kStopPoll = std::chrono::milliseconds(20);

}  // namespace

GenRun run_gen_load(const ArrivalSpec& spec, GenWorkload& workload, GenTarget& target, Clock& clock,
                    const GenLoadOptions& options) {
  const TightTimerSlack slack;  // each send at its intended time
  GenRun run;
  auto book = std::make_shared<Book>();
  const bool closed = spec.pattern == Pattern::kClosed;
  ArrivalSchedule schedule(spec);
  run.start = clock.now();
  const TimePoint end_of_closed = run.start + std::chrono::duration_cast<Duration>(
                                                  std::chrono::duration<double>(spec.duration_s));
  // What ended, handed over as the run goes (GenLoadOptions::progress).
  std::optional<ProgressBeat> feeder;
  if (options.progress) {
    options.progress(GenProgress{run.start, {}, {}, {}});
    feeder.emplace(clock, run.start, options.progress_every, [&options, &run, book] {
      GenProgress p{run.start, {}, {}, {}};
      {
        MutexLock g(book->mu);
        p.indices.swap(book->ended);
        for (uint64_t i : p.indices) p.requests.push_back(book->results[i]);
      }
      options.progress(std::move(p));
    });
  }
  auto stopping = [&] { return options.stop && options.stop->load(); };
  // A deadline no later than the next look at the stop flag.
  auto poll = [&](TimePoint t) { return options.stop ? std::min(t, clock.now() + kStopPoll) : t; };
  MutexLock lk(book->mu);
  for (uint64_t i = 0;; ++i) {
    Duration offset{0};
    if (closed) {
      if (options.stop) {
        while (book->pending >= spec.concurrency && !stopping())
          clock.wait_until(lk.unique(), book->cv, clock.now() + kStopPoll);
      } else {
        while (book->pending >= spec.concurrency) book->cv.wait(lk.unique());
      }
      if (stopping()) break;
      if (clock.now() >= end_of_closed || (spec.max_requests && i >= spec.max_requests)) break;
      offset = clock.now() - run.start;
    } else {
      auto next = schedule.next();
      if (!next) break;
      offset = *next;
      while (clock.now() < run.start + offset && !stopping())
        clock.wait_until(lk.unique(), book->cv, poll(run.start + offset));
      if (stopping()) break;
    }
    const GenLengths len = workload.next();
    GenRequestResult r;
    r.intended = offset;
    r.prompt_tokens = len.prompt;
    r.max_tokens = len.max_tokens;
    book->results.push_back(std::move(r));
    ++book->pending;
    const std::string prompt = workload.prompt_text(len.prompt);
    lk.unlock();
    GenTarget::Callbacks cb;
    cb.on_tokens = [book, i](TimePoint when, uint32_t tokens) {
      MutexLock g(book->mu);
      GenRequestResult& q = book->results[i];
      if (q.last != kNever) q.gaps.push_back(when - q.last);
      if (q.first == kNever) q.first = when;
      q.last = when;
      q.output_tokens += tokens;
    };
    cb.on_prompt_tokens = [book, i](uint32_t n) {
      MutexLock g(book->mu);
      book->results[i].prompt_tokens = n;
    };
    cb.on_done = [book, i](bool ok, uint32_t tokens, TimePoint when, std::string outcome) {
      MutexLock g(book->mu);
      GenRequestResult& q = book->results[i];
      q.done = true;
      q.ok = ok;
      q.outcome = std::move(outcome);
      q.finished = when;
      q.output_tokens = std::max(q.output_tokens, tokens);
      book->ended.push_back(i);
      --book->pending;
      book->cv.notify_all();
    };
    target.send(prompt, len.max_tokens, std::move(cb));
    lk.lock();
    // A closed loop whose request was refused at once (a full queue, or a
    // request the model cannot take) sends again only when one in flight has
    // ended, or after 10 ms with none in flight: else it would send and be
    // refused as fast as it can, with a result kept for every try.
    const GenRequestResult& q = book->results[i];
    if (closed && q.done && !q.ok) {
      const uint64_t in_flight = book->pending;
      const TimePoint until =
          in_flight > 0 ? end_of_closed
                        : std::min(end_of_closed, clock.now() + std::chrono::milliseconds(10));
      while ((in_flight == 0 || book->pending >= in_flight) && clock.now() < until) {
        clock.wait_until(lk.unique(), book->cv, until);
      }
    }
  }
  const TimePoint give_up =
      clock.now() +
      (stopping() ? std::min(options.drain, options.drain_after_stop) : options.drain);
  while (book->pending > 0 && clock.now() < give_up) {
    clock.wait_until(lk.unique(), book->cv, give_up);
  }
  run.requests = book->results;  // a copy: late callbacks still write to the book
  lk.unlock();
  feeder.reset();
  return run;
}

namespace {

Quantiles quantiles(const LogHistogram& h) {
  Quantiles q;
  if (h.empty()) return q;
  q.p50 = static_cast<double>(h.quantile(0.5)) / 1e6;
  q.p90 = static_cast<double>(h.quantile(0.9)) / 1e6;
  q.p95 = static_cast<double>(h.quantile(0.95)) / 1e6;
  q.p99 = static_cast<double>(h.quantile(0.99)) / 1e6;
  q.mean = h.mean() / 1e6;
  q.max = static_cast<double>(h.max()) / 1e6;
  return q;
}

}  // namespace

GenSummary summarize_gen(const GenRun& run, double slo_ttft_ms, double slo_itl_ms) {
  GenSummary s;
  s.slo_ttft_ms = slo_ttft_ms;
  s.slo_itl_ms = slo_itl_ms;
  LogHistogram ttft, itl, e2e, e2e_short, e2e_long;
  TimePoint last = run.start;
  std::vector<uint32_t> asked;
  for (const GenRequestResult& r : run.requests) asked.push_back(r.max_tokens);
  std::vector<uint32_t> sorted = asked;
  std::sort(sorted.begin(), sorted.end());
  const uint32_t median = sorted.empty() ? 0 : sorted[(sorted.size() - 1) / 2];
  double tpot_sum = 0;
  uint64_t tpot_requests = 0;
  for (const GenRequestResult& r : run.requests) {
    ++s.sent;
    if (r.finished != kNever) last = std::max(last, r.finished);
    if (!r.ok) {
      ++s.failed;
      continue;
    }
    ++s.ok;
    s.output_tokens += r.output_tokens;
    const TimePoint sent = run.start + r.intended;
    if (r.first != kNever) ttft.record(r.first - sent);
    for (Duration g : r.gaps) itl.record(g);
    if (!r.gaps.empty()) {
      Duration total{0};
      for (Duration g : r.gaps) total += g;
      tpot_sum += to_ms(total) / static_cast<double>(r.gaps.size());
      ++tpot_requests;
    }
    e2e.record(r.finished - sent);
    (r.max_tokens <= median ? e2e_short : e2e_long).record(r.finished - sent);
    if (slo_ttft_ms > 0 || slo_itl_ms > 0) {
      const bool ttft_ok =
          slo_ttft_ms <= 0 || (r.first != kNever && to_ms(r.first - sent) <= slo_ttft_ms);
      Duration total{0};
      for (Duration g : r.gaps) total += g;
      const double tpot = r.gaps.empty() ? 0 : to_ms(total) / static_cast<double>(r.gaps.size());
      if (ttft_ok && (slo_itl_ms <= 0 || tpot <= slo_itl_ms)) ++s.good;
    }
  }
  s.duration_s = std::chrono::duration<double>(last - run.start).count();
  if (s.duration_s > 0) {
    s.tokens_per_s = static_cast<double>(s.output_tokens) / s.duration_s;
    s.requests_per_s = static_cast<double>(s.ok) / s.duration_s;
    s.goodput_rps = static_cast<double>(s.good) / s.duration_s;
  }
  s.tpot_mean_ms = tpot_requests > 0 ? tpot_sum / static_cast<double>(tpot_requests) : 0;
  s.ttft = quantiles(ttft);
  s.itl = quantiles(itl);
  s.e2e = quantiles(e2e);
  s.e2e_short = quantiles(e2e_short);
  s.e2e_long = quantiles(e2e_long);
  uint64_t decodes = 0;
  for (const StepRecord& st : run.steps) {
    ++s.steps;
    s.preemptions += st.preempted;
    decodes += st.decodes;
  }
  if (s.steps > 0) s.decodes_per_step = static_cast<double>(decodes) / static_cast<double>(s.steps);
  return s;
}

namespace {

std::string line(const char* name, const Quantiles& q) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "  %-12s p50 %.2f  p90 %.2f  p99 %.2f  mean %.2f  max %.2f\n",
                name, q.p50, q.p90, q.p99, q.mean, q.max);
  return buf;
}

void quantiles_json(std::string& out, const char* name, const Quantiles& q) {
  out += '"';
  out += name;
  out += "\":{\"p50\":";
  append_json_number(out, q.p50);
  out += ",\"p90\":";
  append_json_number(out, q.p90);
  out += ",\"p95\":";
  append_json_number(out, q.p95);
  out += ",\"p99\":";
  append_json_number(out, q.p99);
  out += ",\"mean\":";
  append_json_number(out, q.mean);
  out += ",\"max\":";
  append_json_number(out, q.max);
  out += '}';
}

}  // namespace

std::string gen_summary_text(const GenRun& run, const GenSummary& s) {
  char buf[400];
  std::string out = "\n" + run.pattern + " -> " + run.target + ", model " + run.model + "\n";
  out += "  " + run.options + "\n  workload: " + run.workload + "\n";
  std::snprintf(buf, sizeof buf,
                "  sent %llu   ok %llu   failed %llu   over %.2f s\n"
                "  output      %.1f tokens/s   %.2f requests/s\n",
                static_cast<unsigned long long>(s.sent), static_cast<unsigned long long>(s.ok),
                static_cast<unsigned long long>(s.failed), s.duration_s, s.tokens_per_s,
                s.requests_per_s);
  out += buf;
  out += "  latency ms\n";
  out += line("TTFT", s.ttft) + line("ITL", s.itl) + line("end-to-end", s.e2e);
  out += line("short half", s.e2e_short) + line("long half", s.e2e_long);
  if (s.slo_ttft_ms > 0 || s.slo_itl_ms > 0) {
    std::snprintf(
        buf, sizeof buf,
        "  goodput     %.2f requests/s within TTFT <= %g ms, ITL <= %g ms (%llu of %llu)\n",
        s.goodput_rps, s.slo_ttft_ms, s.slo_itl_ms, static_cast<unsigned long long>(s.good),
        static_cast<unsigned long long>(s.sent));
    out += buf;
  }
  if (s.steps > 0) {
    std::snprintf(buf, sizeof buf,
                  "  steps       %llu   decodes per step %.2f   preemptions %llu\n",
                  static_cast<unsigned long long>(s.steps), s.decodes_per_step,
                  static_cast<unsigned long long>(s.preemptions));
    out += buf;
  }
  return out;
}

std::string gen_summary_json(const GenRun& run, const GenSummary& s) {
  std::string out = "{\"config\":{\"pattern\":";
  append_json_string(out, run.pattern);
  out += ",\"workload\":";
  append_json_string(out, run.workload);
  out += ",\"target\":";
  append_json_string(out, run.target);
  out += ",\"model\":";
  append_json_string(out, run.model);
  out += ",\"options\":";
  append_json_string(out, run.options);
  out += ",\"seed\":";
  append_uint(out, run.seed);
  out += "},\"summary\":{\"sent\":";
  append_uint(out, s.sent);
  out += ",\"ok\":";
  append_uint(out, s.ok);
  out += ",\"failed\":";
  append_uint(out, s.failed);
  out += ",\"duration_s\":";
  append_json_number(out, s.duration_s);
  out += ",\"output_tokens\":";
  append_uint(out, s.output_tokens);
  out += ",\"tokens_per_s\":";
  append_json_number(out, s.tokens_per_s);
  out += ",\"requests_per_s\":";
  append_json_number(out, s.requests_per_s);
  out += ',';
  quantiles_json(out, "ttft_ms", s.ttft);
  out += ',';
  quantiles_json(out, "itl_ms", s.itl);
  out += ',';
  quantiles_json(out, "e2e_ms", s.e2e);
  out += ',';
  quantiles_json(out, "e2e_short_half_ms", s.e2e_short);
  out += ',';
  quantiles_json(out, "e2e_long_half_ms", s.e2e_long);
  out += ",\"slo_ttft_ms\":";
  append_json_number(out, s.slo_ttft_ms);
  out += ",\"slo_itl_ms\":";
  append_json_number(out, s.slo_itl_ms);
  out += ",\"good\":";
  append_uint(out, s.good);
  out += ",\"goodput_rps\":";
  append_json_number(out, s.goodput_rps);
  out += ",\"steps\":";
  append_uint(out, s.steps);
  out += ",\"preemptions\":";
  append_uint(out, s.preemptions);
  out += ",\"decodes_per_step\":";
  append_json_number(out, s.decodes_per_step);
  // The means most published figures give, by their usual names.
  out += ",\"ttft_mean_ms\":";
  append_json_number(out, s.ttft.mean);
  out += ",\"itl_mean_ms\":";
  append_json_number(out, s.itl.mean);
  out += ",\"tpot_mean_ms\":";
  append_json_number(out, s.tpot_mean_ms);
  out += ",\"output_tokens_per_s\":";
  append_json_number(out, s.tokens_per_s);
  if (run.cache_tokens > 0) {
    out += ",\"kv_cache_tokens\":";
    append_uint(out, run.cache_tokens);
  }
  return out + "}}\n";
}

std::string gen_requests_csv(const GenRun& run) {
  std::string out =
      "index,intended_ms,prompt_tokens,max_tokens,output_tokens,outcome,ttft_ms,e2e_ms,"
      "itl_mean_ms\n";
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const GenRequestResult& r = run.requests[i];
    const TimePoint sent = run.start + r.intended;
    append_uint(out, i);
    out += ',';
    append_number(out, to_ms(r.intended), "");
    out += ',' + std::to_string(r.prompt_tokens) + ',' + std::to_string(r.max_tokens) + ',' +
           std::to_string(r.output_tokens) + ',' + (r.done ? r.outcome : "unanswered") + ',';
    if (r.first != kNever) append_number(out, to_ms(r.first - sent), "");
    out += ',';
    if (r.finished != kNever) append_number(out, to_ms(r.finished - sent), "");
    out += ',';
    if (!r.gaps.empty()) {
      Duration total{0};
      for (Duration g : r.gaps) total += g;
      append_number(out, to_ms(total) / static_cast<double>(r.gaps.size()), "");
    }
    out += '\n';
  }
  return out;
}

std::string gen_trace_json(const GenRun& run) {
  const auto us = [&](TimePoint t) { return to_us(t - run.start); };
  std::string out = "{\"traceEvents\":[";
  bool first = true;
  const auto sep = [&] {
    if (!first) out += ',';
    first = false;
  };
  for (const StepRecord& s : run.steps) {
    sep();
    out += "{\"name\":\"step\",\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(1 + s.lane) +
           ",\"ts\":";
    append_number(out, us(s.start), "0");
    out += ",\"dur\":";
    append_number(out, to_us(s.end - s.start), "0");
    out += ",\"args\":{\"decodes\":" + std::to_string(s.decodes) +
           ",\"prefill_tokens\":" + std::to_string(s.prefill_tokens) +
           ",\"running\":" + std::to_string(s.running) +
           ",\"waiting\":" + std::to_string(s.waiting) +
           ",\"blocks_used\":" + std::to_string(s.blocks_used) +
           ",\"preempted\":" + std::to_string(s.preempted) + "}}";
  }
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const GenRequestResult& r = run.requests[i];
    if (r.finished == kNever) continue;
    sep();
    const TimePoint sent = run.start + r.intended;
    out += "{\"name\":\"request " + std::to_string(i) +
           "\",\"ph\":\"X\",\"pid\":2,\"tid\":" + std::to_string(2 + i % 64) + ",\"ts\":";
    append_number(out, us(sent), "0");
    out += ",\"dur\":";
    append_number(out, to_us(r.finished - sent), "0");
    out += ",\"args\":{\"prompt_tokens\":" + std::to_string(r.prompt_tokens) +
           ",\"output_tokens\":" + std::to_string(r.output_tokens) + ",\"outcome\":";
    append_json_string(out, r.outcome);
    out += "}}";
  }
  out +=
      "],\"metadata\":{\"steps\":\"pid 1: a row of model steps per lane (tid 1 + "
      "lane)\",\"requests\":\"pid 2\"}}\n";
  return out;
}

HistoryGenRequest history_row_of(const GenRecord& r, TimePoint start) {
  HistoryGenRequest h;
  h.intended = r.arrival - start;
  h.first = r.first_token;
  h.last = r.first_token;
  if (h.last != kNever) {
    for (Duration g : r.gaps) h.last += g;
  }
  h.finished = r.finished;
  h.prompt_tokens = r.prompt_tokens;
  h.output_tokens = r.output_tokens;
  h.done = true;
  h.ok = r.reason != FinishReason::kError;
  h.outcome =
      r.reason == FinishReason::kError && !r.error.empty() ? r.error : finish_reason_name(r.reason);
  h.gaps = r.gaps;
  return h;
}

HistoryGenRequest history_row_of(const GenRequestResult& q) {
  return {q.intended,      q.first, q.last, q.finished, q.prompt_tokens, q.max_tokens,
          q.output_tokens, q.done,  q.ok,   q.outcome,  q.gaps};
}

GenRequestResult gen_result_of(const HistoryGenRequest& q) {
  GenRequestResult r;
  r.intended = q.intended;
  r.prompt_tokens = q.prompt_tokens;
  r.max_tokens = q.max_tokens;
  r.output_tokens = q.output_tokens;
  r.done = q.done;
  r.ok = q.ok;
  r.outcome = q.outcome;
  r.first = q.first;
  r.last = q.last;
  r.finished = q.finished;
  r.gaps = q.gaps;
  return r;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// Exports of a recorded run: the JSON summary, per-request and per-window CSV,
// and a Chrome Trace Event Format trace (Perfetto, chrome://tracing).
//
// Written by hand into one std::string: core/runs takes no JSON library, and
// a run of a million requests must export without a DOM of a million nodes.
// Numbers go through std::to_chars (shortest round-trip form, locale-free);
// a non-finite double becomes null in JSON and an empty field in CSV, since
// neither format has a spelling for NaN or infinity. Times are written from
// integer nanoseconds as exact decimal microseconds, so a trace's ts and dur
// match the records to the nanosecond.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/text_out.h"
#include "runs/run_record.h"

namespace batchscope {

namespace {

// Nanoseconds as exact decimal microseconds: "1234", "1234.5", "-0.001".
void append_us(std::string& out, int64_t ns) {
  // Work in unsigned magnitude so INT64_MIN does not overflow on negation.
  const bool negative = ns < 0;
  const uint64_t mag =
      negative ? uint64_t{0} - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (negative) out.push_back('-');
  append_uint(out, mag / 1000);
  uint64_t frac = mag % 1000;
  if (frac == 0) return;
  char digits[4] = {'.', static_cast<char>('0' + frac / 100),
                    static_cast<char>('0' + frac / 10 % 10), static_cast<char>('0' + frac % 10)};
  size_t n = 4;
  while (digits[n - 1] == '0') --n;
  out.append(digits, n);
}

int64_t ns_since(TimePoint t, TimePoint start) { return (t - start).count(); }

// Writes `"key":` with a leading comma for every member but the first of an
// object. Keys here are literals that need no escaping.
class JsonObject {
 public:
  explicit JsonObject(std::string& out) : out_(out) { out_.push_back('{'); }
  ~JsonObject() { out_.push_back('}'); }
  JsonObject(const JsonObject&) = delete;
  JsonObject& operator=(const JsonObject&) = delete;

  std::string& key(std::string_view k) {
    if (!first_) out_.push_back(',');
    first_ = false;
    out_.push_back('"');
    out_.append(k);
    out_.append("\":");
    return out_;
  }
  void number(std::string_view k, double v) { append_json_number(key(k), v); }
  void uint(std::string_view k, uint64_t v) { append_uint(key(k), v); }
  void sint(std::string_view k, int64_t v) { append_int(key(k), v); }
  void string(std::string_view k, std::string_view v) { append_json_string(key(k), v); }

 private:
  std::string& out_;
  bool first_ = true;
};

void append_latency(std::string& out, const RunLatency& l, bool full) {
  JsonObject o(out);
  o.number("p50", l.p50_ms);
  o.number("p90", l.p90_ms);
  if (full) o.number("p95", l.p95_ms);
  o.number("p99", l.p99_ms);
  if (full) o.number("p999", l.p999_ms);
  o.number("max", l.max_ms);
  o.number("mean", l.mean_ms);
}

void append_config(std::string& out, const RunConfig& c) {
  JsonObject o(out);
  o.string("target", c.target);
  o.string("model", c.model);
  o.number("duration_s", c.duration_s);
  o.uint("seed", c.seed);
  o.string("strategy", strategy_name(c.options.strategy));
  o.uint("max_batch_size", c.options.max_batch_size);
  o.sint("max_wait_us", c.options.max_wait_us);
  o.uint("queue_capacity", c.options.queue_capacity);
  o.sint("request_timeout_ms", c.options.request_timeout_ms);
  o.uint("num_lanes", c.options.num_lanes);
  o.number("target_p99_ms", c.options.target_p99_ms);
}

void append_window(std::string& out, const RunWindow& w) {
  JsonObject o(out);
  o.number("start_s", w.start_s);
  o.number("length_s", w.length_s);
  o.uint("sent", w.sent);
  o.uint("ok", w.ok);
  o.uint("rejected", w.rejected);
  o.uint("timed_out", w.timed_out);
  o.uint("errors", w.errors);
  o.number("throughput_rps", w.throughput_rps);
  append_latency(o.key("latency_ms"), w.latency, /*full=*/false);
  o.number("batch_mean", w.batch_mean);
  o.uint("batch_max", w.batch_max);
  o.number("depth_mean", w.depth_mean);
  o.uint("depth_max", w.depth_max);
}

// Separates CSV fields; the first field of a line gets none.
void csv_sep(std::string& out) { out.push_back(','); }

}  // namespace

std::string run_summary_json(const RunData& run, const RunSummary& s) {
  std::string out;
  out.reserve(2048 + 400 * s.windows.size());
  {
    JsonObject o(out);
    o.uint("sent", s.sent);
    o.uint("ok", s.ok);
    o.uint("rejected", s.rejected);
    o.uint("timed_out", s.timed_out);
    o.uint("errors", s.errors);
    // The error classes lumped into "errors", counted per outcome so a report
    // can tell model failures from cancellations.
    {
      uint64_t by_outcome[kOutcomeCount] = {};
      for (const RunRequest& r : run.requests) {
        const auto i = static_cast<size_t>(r.outcome);
        if (i < static_cast<size_t>(kOutcomeCount)) ++by_outcome[i];
      }
      JsonObject oc(o.key("outcomes"));
      for (int i = 0; i < kOutcomeCount; ++i) {
        oc.uint(outcome_name(static_cast<Outcome>(i)), by_outcome[i]);
      }
    }
    o.number("duration_s", s.duration_s);
    o.number("throughput_rps", s.throughput_rps);
    append_latency(o.key("latency_ms"), s.latency, /*full=*/true);
    {
      JsonObject lag(o.key("send_lag_ms"));
      lag.number("p50", s.lag_p50_ms);
      lag.number("p99", s.lag_p99_ms);
      lag.number("max", s.lag_max_ms);
    }
    {
      JsonObject batch(o.key("batch_size"));
      batch.number("mean", s.batch_mean);
      JsonObject hist(batch.key("histogram"));
      char name[16];
      for (const auto& [size, count] : s.batch_histogram) {
        const auto r = std::to_chars(name, name + sizeof name, size);
        hist.uint(std::string_view(name, static_cast<size_t>(r.ptr - name)), count);
      }
    }
    {
      JsonObject depth(o.key("queue_depth"));
      depth.number("mean", s.depth_mean);
      depth.uint("max", s.depth_max);
    }
    if (s.padded_length > 0) {
      JsonObject padding(o.key("padding"));
      padding.number("waste", s.padding_waste);
      padding.uint("real", s.real_length);
      padding.uint("padded", s.padded_length);
    }
    if (!s.stages.empty()) {
      JsonObject stages(o.key("stages_ms"));
      for (const StageFigures& f : s.stages) {
        JsonObject one(stages.key(stage_key(f.stage)));
        one.uint("count", f.count);
        one.number("p50", f.p50_ms);
        one.number("p99", f.p99_ms);
        one.number("mean", f.mean_ms);
      }
    }
    if (const auto& b = run.band) {
      // The prediction again at the band's ends: each figure [fast, slow].
      JsonObject band(o.key("band"));
      band.number("fast", b->fast);
      band.number("slow", b->slow);
      band.string("source", b->source);
      append_latency(band.key("latency_ms_fast"), b->at_fast, /*full=*/true);
      append_latency(band.key("latency_ms_slow"), b->at_slow, /*full=*/true);
      band.number("throughput_rps_fast", b->rps_fast);
      band.number("throughput_rps_slow", b->rps_slow);
      if (b->draws > 0) {
        // The run's own noise: each figure's range over other draws of the traffic.
        band.uint("draws", static_cast<uint64_t>(b->draws));
        append_latency(band.key("latency_ms_draws_low"), b->draws_low, /*full=*/true);
        append_latency(band.key("latency_ms_draws_high"), b->draws_high, /*full=*/true);
      }
    }
    if (run.others) {
      // What else the machine was doing: a busy run refines no kept cost.
      JsonObject others(o.key("others"));
      others.number("cores", run.others->cores);
      others.string("busiest", run.others->describe());
    }
    append_config(o.key("config"), run.config);
    o.string("pattern", run.config.pattern);
    std::string& w = o.key("windows");
    w.push_back('[');
    for (size_t i = 0; i < s.windows.size(); ++i) {
      if (i > 0) w.push_back(',');
      append_window(w, s.windows[i]);
    }
    w.push_back(']');
  }
  out.push_back('\n');
  return out;
}

std::string run_requests_csv(const RunData& run) {
  std::string out;
  out.reserve(128 + 96 * run.requests.size());
  out.append(
      "index,intended_us,sent_us,done_us,latency_ms,outcome,http_status,batch_id,batch_size\n");
  for (const RunRequest& r : run.requests) {
    append_uint(out, r.index);
    csv_sep(out);
    append_us(out, ns_since(r.intended, run.start));
    csv_sep(out);
    append_us(out, ns_since(r.sent, run.start));
    csv_sep(out);
    append_us(out, ns_since(r.done, run.start));
    csv_sep(out);
    append_number(out, to_ms(r.done - r.intended), "");
    csv_sep(out);
    out.append(outcome_name(r.outcome));  // fixed lowercase words, no quoting needed
    csv_sep(out);
    append_int(out, r.http_status);
    csv_sep(out);
    append_uint(out, r.batch_id);
    csv_sep(out);
    append_uint(out, r.batch_size);
    out.push_back('\n');
  }
  return out;
}

std::string run_windows_csv(const RunSummary& s) {
  std::string out;
  out.reserve(256 + 160 * s.windows.size());
  out.append(
      "start_s,length_s,sent,ok,rejected,timed_out,errors,throughput_rps,p50_ms,p90_ms,p99_ms,"
      "max_ms,mean_ms,batch_mean,batch_max,depth_mean,depth_max\n");
  for (const RunWindow& w : s.windows) {
    append_number(out, w.start_s, "");
    csv_sep(out);
    append_number(out, w.length_s, "");
    for (uint64_t v : {w.sent, w.ok, w.rejected, w.timed_out, w.errors}) {
      csv_sep(out);
      append_uint(out, v);
    }
    for (double v : {w.throughput_rps, w.latency.p50_ms, w.latency.p90_ms, w.latency.p99_ms,
                     w.latency.max_ms, w.latency.mean_ms, w.batch_mean}) {
      csv_sep(out);
      append_number(out, v, "");
    }
    csv_sep(out);
    append_uint(out, w.batch_max);
    csv_sep(out);
    append_number(out, w.depth_mean, "");
    csv_sep(out);
    append_uint(out, w.depth_max);
    out.push_back('\n');
  }
  return out;
}

namespace {

constexpr int kTracePid = 1;
constexpr uint64_t kRequestTidBase = 1000;
// Requests overlap heavily; spreading them over a few tracks keeps each
// track's stack shallow enough to read without hiding any of them.
constexpr uint64_t kRequestTracks = 16;

void append_thread_meta(std::string& out, uint64_t tid, std::string_view name) {
  out.append(",{\"ph\":\"M\",\"pid\":1,\"tid\":");
  append_uint(out, tid);
  out.append(",\"ts\":0,\"name\":\"thread_name\",\"args\":{\"name\":");
  append_json_string(out, name);
  out.append("}}");
  // Sort tracks by tid so lanes sit above the request tracks.
  out.append(",{\"ph\":\"M\",\"pid\":1,\"tid\":");
  append_uint(out, tid);
  out.append(",\"ts\":0,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
  append_uint(out, tid);
  out.append("}}");
}

// Common head of a complete ("X") event, up to and including "args":{.
void append_x_head(std::string& out, std::string_view cat, std::string_view name_prefix,
                   uint64_t number, uint64_t tid, int64_t ts_ns, int64_t dur_ns) {
  out.append(",\n{\"ph\":\"X\",\"cat\":\"");
  out.append(cat);
  out.append("\",\"name\":\"");
  out.append(name_prefix);
  append_uint(out, number);
  out.append("\",\"pid\":1,\"tid\":");
  append_uint(out, tid);
  out.append(",\"ts\":");
  append_us(out, ts_ns);
  out.append(",\"dur\":");
  append_us(out, std::max<int64_t>(dur_ns, 0));  // viewers reject negative spans
  out.append(",\"args\":{");
}

}  // namespace

std::string run_trace_json(const RunData& run) {
  std::string out;
  out.reserve(1024 + 220 * run.requests.size() + 220 * run.batches.size());
  out.append("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  out.append(
      "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"ts\":0,\"name\":\"process_name\","
      "\"args\":{\"name\":\"batchscope run\"}}");
  static_assert(kTracePid == 1, "the event templates above spell pid 1");

  // Name every configured lane, and any lane a batch claims beyond that.
  uint64_t lanes = run.config.options.num_lanes;
  for (const BatchRecord& b : run.batches) lanes = std::max<uint64_t>(lanes, uint64_t{b.lane} + 1);
  if (run.batches.empty()) lanes = 0;  // no engine records: no empty lane tracks
  for (uint64_t lane = 0; lane < lanes; ++lane) {
    append_thread_meta(out, lane + 1, "lane " + std::to_string(lane));
  }
  const uint64_t request_tracks = std::min<uint64_t>(kRequestTracks, run.requests.size());
  for (uint64_t k = 0; k < request_tracks; ++k) {
    append_thread_meta(out, kRequestTidBase + k, "requests");
  }

  for (const BatchRecord& b : run.batches) {
    // A batch that never started running (it failed before) is drawn from
    // the moment it was cut.
    const TimePoint begin = b.run_start != TimePoint{} ? b.run_start : b.batched;
    const TimePoint end = b.run_end != TimePoint{} ? b.run_end : begin;
    append_x_head(out, "batch", "batch ", b.id, uint64_t{b.lane} + 1, ns_since(begin, run.start),
                  (end - begin).count());
    out.append("\"size\":");
    append_uint(out, b.size);
    out.append(",\"reason\":\"");
    out.append(batch_reason_name(b.reason));
    out.append("\",\"queue_depth_after\":");
    append_uint(out, b.queue_depth_after);
    out.append(",\"failed\":");
    out.append(b.failed ? "true" : "false");
    out.append("}}");
  }

  for (const RunRequest& r : run.requests) {
    append_x_head(out, "request", "request ", r.index, kRequestTidBase + r.index % kRequestTracks,
                  ns_since(r.intended, run.start), (r.done - r.intended).count());
    out.append("\"outcome\":\"");
    out.append(outcome_name(r.outcome));
    out.append("\",\"batch_id\":");
    append_uint(out, r.batch_id);
    out.append(",\"lag_us\":");
    append_us(out, (r.sent - r.intended).count());
    out.append("}}");
  }
  out.append("\n]}\n");
  return out;
}

}  // namespace batchscope

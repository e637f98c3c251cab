// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/prometheus.h"
#include "api/prometheus_lines.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>

#include "batching/engine_types.h"
#include "common/options.h"
#include "common/text_out.h"
#include "runs/histogram.h"
#include "runs/records.h"

namespace batchscope {
namespace prom {

// ---- number and label formatting ----

// The shortest text that reads back as the same double, so sums and rates lose
// nothing; the format's own spellings for the non-finite values, which Go's
// ParseFloat (Prometheus' parser) accepts where C's "nan"/"inf" would not be
// portable.
void append_double(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[40];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}

// ---- exposition lines ----

// Both lines of a family's preamble. HELP texts here are literals free of
// backslashes and newlines, so they need no escaping.
void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// `name{labels} ` or `name ` ; `labels` is already formatted (k="v",...).
void sample_start(std::string& out, std::string_view name, std::string_view labels) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
}

void sample_u(std::string& out, std::string_view name, std::string_view labels, uint64_t v) {
  sample_start(out, name, labels);
  append_uint(out, v);
  out += '\n';
}

void sample_f(std::string& out, std::string_view name, std::string_view labels, double v) {
  sample_start(out, name, labels);
  append_double(out, v);
  out += '\n';
}

void gauge_u(std::string& out, std::string_view name, std::string_view help, uint64_t v) {
  family(out, name, "gauge", help);
  sample_u(out, name, {}, v);
}

void gauge_f(std::string& out, std::string_view name, std::string_view help, double v) {
  family(out, name, "gauge", help);
  sample_f(out, name, {}, v);
}

void counter(std::string& out, std::string_view name, std::string_view help, uint64_t v) {
  family(out, name, "counter", help);
  sample_u(out, name, {}, v);
}

}  // namespace prom

namespace {

using namespace prom;

// ---- histograms ----

// One fixed "le" bound: its value in the histogram's integer unit and its
// label text, spelled once here so that "0.0001" never becomes "1e-04".
struct Edge {
  uint64_t bound;
  std::string_view le;
};

constexpr std::array<Edge, 13> kBatchSizeEdges{{
    {1, "1"},
    {2, "2"},
    {4, "4"},
    {8, "8"},
    {16, "16"},
    {32, "32"},
    {64, "64"},
    {128, "128"},
    {256, "256"},
    {512, "512"},
    {1024, "1024"},
    {2048, "2048"},
    {4096, "4096"},
}};

// Seconds as nanoseconds: the latency histograms count nanoseconds.
constexpr std::array<Edge, 16> kLatencyEdges{{
    {100'000, "0.0001"},
    {250'000, "0.00025"},
    {500'000, "0.0005"},
    {1'000'000, "0.001"},
    {2'500'000, "0.0025"},
    {5'000'000, "0.005"},
    {10'000'000, "0.01"},
    {25'000'000, "0.025"},
    {50'000'000, "0.05"},
    {100'000'000, "0.1"},
    {250'000'000, "0.25"},
    {500'000'000, "0.5"},
    {1'000'000'000, "1"},
    {2'500'000'000, "2.5"},
    {5'000'000'000, "5"},
    {10'000'000'000, "10"},
}};

// Emits the _bucket lines of `h` over `edges` and returns the +Inf count.
// Each log bucket goes to the first edge at or above its upper end (clamped
// to the exact observed max), as the header explains. `labels` are extra
// labels that precede "le", empty for none.
template <size_t N>
uint64_t bucket_lines(std::string& out, std::string_view bucket_name, std::string_view labels,
                      const std::array<Edge, N>& edges, const LogHistogram& h) {
  std::array<uint64_t, N + 1> counts{};  // per edge, not cumulative; [N] is +Inf
  h.for_each_bucket([&](uint64_t lower, uint64_t upper, uint64_t count) {
    const uint64_t top = std::max(lower, std::min(upper, h.max()));
    const auto it = std::partition_point(edges.begin(), edges.end(),
                                         [top](const Edge& e) { return e.bound < top; });
    counts[static_cast<size_t>(it - edges.begin())] += count;
  });

  uint64_t cumulative = 0;
  auto line = [&](std::string_view le) {
    out += bucket_name;
    out += '{';
    if (!labels.empty()) {
      out += labels;
      out += ',';
    }
    out += "le=\"";
    out += le;
    out += "\"} ";
    append_uint(out, cumulative);
    out += '\n';
  };
  for (size_t i = 0; i < N; ++i) {
    cumulative += counts[i];
    line(edges[i].le);
  }
  cumulative += counts[N];
  line("+Inf");
  return cumulative;
}

}  // namespace

void prom::latency_histogram(std::string& out, std::string_view name, std::string_view labels,
                             const LogHistogram& ns) {
  const std::string base(name);
  const uint64_t count = bucket_lines(out, base + "_bucket", labels, kLatencyEdges, ns);
  sample_f(out, base + "_sum", labels, static_cast<double>(ns.sum()) / 1e9);
  sample_u(out, base + "_count", labels, count);
}

namespace {

void batch_size_histogram(std::string& out, const MetricsWindow& totals) {
  constexpr std::string_view name = "batchscope_batch_size";
  family(out, name, "histogram", "Requests per batch cut, over all batches folded so far.");
  const uint64_t count =
      bucket_lines(out, "batchscope_batch_size_bucket", {}, kBatchSizeEdges, totals.batch_sizes);
  sample_u(out, "batchscope_batch_size_sum", {}, totals.batch_size_sum);
  // The histogram's own count, which the aggregator keeps equal to
  // totals.batches: the format requires _count to equal the +Inf bucket.
  sample_u(out, "batchscope_batch_size_count", {}, count);
}

// Requests of varying length: the padding waste is
// 1 - rate(real) / rate(padded) over any range.
void padding_counters(std::string& out, const MetricsWindow& totals) {
  if (totals.padded_length == 0) return;
  counter(out, "batchscope_padded_positions_total",
          "Positions the batches held, padded to each batch's longest request (batch size x "
          "longest), over all batches folded so far.",
          totals.padded_length);
  counter(out, "batchscope_real_positions_total",
          "Positions of the requests themselves (the sum of their lengths); the rest of "
          "batchscope_padded_positions_total is padding.",
          totals.real_length);
}

void duration_histograms(std::string& out, const MetricsWindow& totals) {
  constexpr std::string_view name = "batchscope_request_duration_seconds";
  family(out, name, "histogram",
         "Latency of successful requests by stage: queue (arrival to batched), of which "
         "prepare_wait and prepare (waiting for and in a Python model's preprocess pool) "
         "and batch_wait (the rest); lane_wait (batched to its run); run (the batch on the "
         "model), of which postprocess (a Python model's) and, where the lane prepared the "
         "requests (preprocess_workers 0), prepare; total (arrival to callback).");
  struct Stage {
    std::string_view labels;
    const LogHistogram* ns;
    bool always;  // else only where some request went through it
  };
  const std::array<Stage, 8> stages{{
      {"stage=\"queue\"", &totals.queue_wait_ns, true},
      {"stage=\"prepare_wait\"", &totals.stages.of(RunStage::kPreprocessWait), false},
      {"stage=\"prepare\"", &totals.stages.of(RunStage::kPreprocess), false},
      {"stage=\"batch_wait\"", &totals.stages.of(RunStage::kBatchWait), false},
      {"stage=\"lane_wait\"", &totals.stages.of(RunStage::kLaneWait), false},
      {"stage=\"run\"", &totals.run_ns, true},
      {"stage=\"postprocess\"", &totals.stages.of(RunStage::kPostprocess), false},
      {"stage=\"total\"", &totals.total_ns, true},
  }};
  for (const Stage& st : stages) {
    if (st.always || st.ns->count() > 0) latency_histogram(out, name, st.labels, *st.ns);
  }
}

// ---- counters from the engine ----

uint64_t outcome_count(const EngineCounters& c, Outcome o) {
  switch (o) {
    case Outcome::kOk: return c.ok;
    case Outcome::kRejected: return c.rejected;
    case Outcome::kTimedOut: return c.timed_out;
    case Outcome::kCancelled: return c.cancelled;
    case Outcome::kModelError: return c.model_errors;
    case Outcome::kShuttingDown: return c.shutdown;
    case Outcome::kInvalid: return c.invalid;
  }
  return 0;
}

void engine_counters(std::string& out, const EngineCounters& c) {
  std::string labels;
  labels.reserve(32);

  family(out, "batchscope_requests_total", "counter",
         "Requests finished since start, by outcome (exact engine counts).");
  for (int i = 0; i < kOutcomeCount; ++i) {
    const auto o = static_cast<Outcome>(i);
    labels.assign("outcome=\"").append(outcome_name(o)).append("\"");
    sample_u(out, "batchscope_requests_total", labels, outcome_count(c, o));
  }

  counter(out, "batchscope_requests_admitted_total",
          "Requests admitted to the queue; each finishes as ok, timeout, cancelled, error or "
          "shutdown.",
          c.admitted);

  family(out, "batchscope_batches_total", "counter",
         "Batches cut since start, by reason: full, timeout (max wait reached), drain (stopping).");
  for (int i = 0; i < kBatchReasonCount; ++i) {
    labels.assign("reason=\"").append(batch_reason_name(static_cast<BatchReason>(i))).append("\"");
    sample_u(out, "batchscope_batches_total", labels, c.batches_by_reason[i]);
  }

  counter(out, "batchscope_failed_batches_total",
          "Batches whose model run returned an error or threw.", c.failed_batches);
  counter(out, "batchscope_records_dropped_total",
          "Metric records lost because the record buffer was full; histograms miss these.",
          c.records_dropped);
  counter(out, "batchscope_wakeups_total", "Notifications sent to a sleeping engine thread.",
          c.wakeups);
  counter(out, "batchscope_callback_exceptions_total",
          "Exceptions thrown by completion callbacks and swallowed by the engine.",
          c.callback_exceptions);
}

void live_gauges(std::string& out, const EngineStatus& e) {
  gauge_u(out, "batchscope_running", "1 while the engine is started and not stopping.",
          e.running ? 1 : 0);
  gauge_u(out, "batchscope_queue_depth", "Requests admitted and waiting for a batch.",
          e.queue_depth);
  gauge_u(out, "batchscope_preparing_requests",
          "Requests in the prepare stage (a Python model's preprocess pool), not yet queued; "
          "they count against queue_capacity.",
          e.preparing);
  gauge_u(out, "batchscope_busy_lanes", "Runner lanes running a batch or its callbacks.",
          e.busy_lanes);
  gauge_u(out, "batchscope_lanes", "Runner lanes alive.", e.live_lanes);
  gauge_f(out, "batchscope_arrival_rate_per_second", "Recent request arrival rate estimate.",
          e.arrival_rate_per_s);
}

void option_gauges(std::string& out, const EngineStatus& e) {
  const Options& o = e.options;
  gauge_u(out, "batchscope_option_max_batch_size", "Option in force: largest batch.",
          o.max_batch_size);
  gauge_f(out, "batchscope_option_max_wait_seconds",
          "Option in force: longest the oldest request waits for a batch to fill.",
          static_cast<double>(o.max_wait_us) / 1e6);
  gauge_u(out, "batchscope_option_queue_capacity", "Option in force: admission queue bound.",
          o.queue_capacity);
  gauge_f(out, "batchscope_option_request_timeout_seconds",
          "Option in force: a queued request not dispatched in this time fails.",
          static_cast<double>(o.request_timeout_ms) / 1e3);
  gauge_u(out, "batchscope_option_lanes", "Option in force: runner lanes.", o.num_lanes);
  gauge_u(out, "batchscope_options_version",
          "Version of the options in force, bumped by every accepted change.", e.options_version);

  family(out, "batchscope_option_strategy_info", "gauge",
         "Option in force: batching strategy (value always 1).");
  std::string labels = "strategy=\"";
  append_prometheus_label_value(labels, strategy_name(o.strategy));
  labels += '"';
  sample_u(out, "batchscope_option_strategy_info", labels, 1);

  gauge_f(out, "batchscope_option_target_p99_seconds",
          "Option in force: p99 latency target of the adaptive strategy.", o.target_p99_ms / 1e3);

  gauge_u(out, "batchscope_effective_max_batch_size",
          "Batch cap the strategy applies now (adaptive may lower it).", e.limits.max_batch);
  gauge_f(out, "batchscope_effective_max_wait_seconds",
          "Max wait the strategy applies now (adaptive may shorten it).",
          static_cast<double>(e.limits.max_wait.count()) / 1e9);
}

}  // namespace

void server_families(std::string& out, const ServerInfo& info) {
  family(out, "batchscope_model_info", "gauge",
         "Model served, device and batchscope version (value always 1).");
  std::string labels;
  labels.reserve(info.model.size() + info.device.size() + info.version.size() + 40);
  labels += "model=\"";
  append_prometheus_label_value(labels, info.model);
  labels += "\",device=\"";
  append_prometheus_label_value(labels, info.device);
  labels += "\",version=\"";
  append_prometheus_label_value(labels, info.version);
  labels += '"';
  sample_u(out, "batchscope_model_info", labels, 1);
  if (info.workers) {
    gauge_u(out, "batchscope_workers_ready", "Model worker processes ready to take a batch.",
            static_cast<uint64_t>(std::max(0, info.workers->ready)));
    counter(out, "batchscope_worker_restarts_total",
            "Model worker processes started again after one was lost.", info.workers->restarts);
    counter(out, "batchscope_worker_deaths_total",
            "Model worker processes that died (a signal or an exit).", info.workers->deaths);
    counter(out, "batchscope_worker_timeouts_total",
            "Model worker processes killed for running a batch past --worker-timeout-ms.",
            info.workers->timeouts);
  }
  if (const auto& p = info.preprocess_workers) {
    gauge_u(out, "batchscope_preprocess_workers_ready",
            "Preprocess pool processes ready to take a request.",
            static_cast<uint64_t>(std::max(0, p->ready)));
    counter(out, "batchscope_preprocess_worker_restarts_total",
            "Preprocess pool processes started again after one was lost.", p->restarts);
    counter(out, "batchscope_preprocess_worker_deaths_total",
            "Preprocess pool processes that died (a signal or an exit).", p->deaths);
    counter(out, "batchscope_preprocess_worker_timeouts_total",
            "Preprocess pool processes killed for running past --worker-timeout-ms.", p->timeouts);
  }

  counter(out, "batchscope_http_requests_total", "HTTP requests answered, all routes.",
          info.http_requests);
  counter(out, "batchscope_http_errors_total", "HTTP requests answered with status >= 400.",
          info.http_errors);
  counter(out, "batchscope_http_received_total",
          "HTTP requests read, or refused while being read; each is answered or dropped.",
          info.http_parsed);
  counter(out, "batchscope_http_dropped_total",
          "HTTP answers never written because the client had disconnected.", info.http_dropped);
  family(out, "batchscope_http_responses_total", "counter",
         "HTTP answers written, by status code.");
  for (const auto& [code, n] : info.http_by_status) {
    sample_u(out, "batchscope_http_responses_total", "code=\"" + std::to_string(code) + "\"", n);
  }
  if (info.http_max_connections == 0) return;  // not behind a listener
  gauge_u(out, "batchscope_http_connections", "HTTP connections open.", info.http_connections);
  gauge_u(out, "batchscope_http_connections_max", "The HTTP connection limit (--max-connections).",
          info.http_max_connections);
  counter(out, "batchscope_http_connections_closed_for_room_total",
          "Idle keep-alive HTTP connections closed to make room at the connection limit.",
          info.http_closed_for_room);
  counter(out, "batchscope_http_refused_at_limit_total",
          "HTTP requests answered 503 because every connection was busy at the limit.",
          info.http_refused_at_limit);
  counter(out, "batchscope_http_accept_errors_total",
          "HTTP connections the kernel could not hand over (out of descriptors); accepting "
          "pauses, then resumes.",
          info.http_accept_errors);
}

void append_prometheus_label_value(std::string& out, std::string_view value) {
  size_t i = 0;
  while (i < value.size()) {
    const char c = value[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      const size_t n = utf8_sequence_length(value, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD for one bad byte, then resynchronise
        ++i;
      } else {
        out.append(value.substr(i, n));
        i += n;
      }
      continue;
    }
    ++i;
  }
}

std::string prometheus_text(const MetricsSnapshot& s, const ServerInfo& info) {
  std::string out;
  // About 9 KiB with every family; reserving once avoids regrowth.
  out.reserve(12 * 1024 + info.model.size() + info.device.size() + info.version.size());
  engine_counters(out, s.engine.counters);
  live_gauges(out, s.engine);
  batch_size_histogram(out, s.totals);
  padding_counters(out, s.totals);
  duration_histograms(out, s.totals);
  option_gauges(out, s.engine);
  server_families(out, info);
  return out;
}

}  // namespace batchscope

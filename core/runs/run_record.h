// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A recorded traffic run: every request the generator sent (when it was meant
// to go, when it went, when its answer came, how it ended) and, for runs
// against the in-process engine, every batch and queue-depth sample. Latency
// is measured from the intended send time, so a stalled server shows up as
// latency, not as less load (no coordinated omission).
// summarize_run() folds a run into totals and fixed windows; the exports
// write it out as JSON, CSV and Chrome Trace Event Format.
// Thread-safety: plain values and free functions.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/options.h"
#include "runs/machine_load.h"
#include "runs/records.h"
#include "runs/run_stages.h"

namespace batchscope {

struct RunRequest {
  uint64_t index = 0;    // 0, 1, 2, ... in intended send order
  TimePoint intended{};  // when the schedule meant it to go
  TimePoint sent{};      // when it went
  TimePoint done{};      // when its answer (or error) came back
  Outcome outcome = Outcome::kOk;
  int http_status = 0;    // 0 for in-process runs
  uint64_t batch_id = 0;  // in-process runs: the batch it rode in (0: none)
  uint32_t batch_size = 0;
};

struct RunConfig {
  std::string pattern;  // "poisson rate=2000", as given
  std::string target;   // "inproc", "self-http", or a URL
  std::string model;    // model name, or "synthetic"
  Options options;      // the serving options (in-process and self-http)
  double duration_s = 0;
  uint64_t seed = 0;
};

// A request's time in a preprocess process (StageTimes::prepare_start to
// admitted), and whether it was answered.
struct PrepareSpan {
  TimePoint start{}, end{};
  bool answered = true;
};

struct RunLatency {
  double p50_ms = 0, p90_ms = 0, p95_ms = 0, p99_ms = 0, p999_ms = 0, max_ms = 0, mean_ms = 0;
};

// A prediction's band (target "predict"): the run predicted again with t(b)
// `fast` and `slow` times as long (tuning/cost_drift.h), its latencies and
// throughput there. Beside it, the run's own noise: the same traffic drawn
// again with `draws` other seeds at the nominal t(b), each latency figure's
// lowest and highest over those draws (a run of a few thousand requests
// rests its p99 on a few dozen).
struct PredictedBand {
  double fast = 1, slow = 1;
  std::string source;  // where the factors came from
  RunLatency at_fast, at_slow;
  double rps_fast = 0, rps_slow = 0;
  int draws = 0;
  RunLatency draws_low, draws_high;
};

struct RunData {
  RunConfig config;
  TimePoint start{};  // time zero of the schedule
  std::vector<RunRequest> requests;
  std::vector<BatchRecord> batches;  // in-process and self-http runs
  std::vector<DepthSample> depth;    // in-process and self-http runs
  // In-process and self-http runs: the engine's time in each stage.
  RunStages stages;
  // In-process and self-http runs: each request's time in a preprocess
  // process, where a pool prepared it (CostModel::from_run reads what
  // preprocess cost, by how many ran at once).
  std::vector<PrepareSpan> prepared;
  // In-process runs: what other processes used over the run (machine_load.h;
  // its own children, a Python model's workers, left out); none: not watched.
  // A run on a busy machine refines no kept cost (tuning/cost_drift.h).
  std::optional<CompetingLoad> others;
  std::optional<PredictedBand> band;
};

// Adds `r`'s time in a preprocess process to `out` where a pool prepared
// it, answered or not.
void keep_prepared(const RequestRecord& r, std::vector<PrepareSpan>& out);

struct RunWindow {
  double start_s = 0;  // since RunData::start
  double length_s = 0;
  uint64_t sent = 0, ok = 0, rejected = 0, timed_out = 0, errors = 0;
  double throughput_rps = 0;  // ok per second
  RunLatency latency;         // ok requests that finished in this window
  double batch_mean = 0;      // batches run in this window
  uint32_t batch_max = 0;
  double depth_mean = 0;
  uint32_t depth_max = 0;
};

struct RunSummary {
  uint64_t sent = 0, ok = 0, rejected = 0, timed_out = 0, errors = 0;
  double duration_s = 0;      // first intended send to last answer
  double throughput_rps = 0;  // ok per second over duration_s
  RunLatency latency;         // of ok requests, from intended send to answer
  double lag_p50_ms = 0, lag_p99_ms = 0, lag_max_ms = 0;  // sent - intended
  double batch_mean = 0;
  std::map<uint32_t, uint64_t> batch_histogram;  // size -> batches
  double depth_mean = 0;
  uint32_t depth_max = 0;
  // Requests of varying length: the lengths run and the slots their padded
  // batches held (size x longest, summed), and the share that was padding.
  // All 0 where lengths do not vary.
  uint64_t real_length = 0, padded_length = 0;
  double padding_waste = 0;
  // The engine's stages (run_stages.h), those any request went through.
  std::vector<StageFigures> stages;
  std::vector<RunWindow> windows;
};

RunSummary summarize_run(const RunData& run, Duration window = std::chrono::seconds(1));

// The windows a rate over time is drawn from: all of them but a last one
// shorter than half the first. Its answers per second are a rate over the
// few milliseconds after sending stopped, when what was in flight comes back
// at once (a 2 s run at 2,000 req/s drew 30,000 answers/s there), which
// says nothing about the run's rate. Its answers still count in the totals.
std::span<const RunWindow> rate_windows(const RunSummary& s);

// Exports. JSON summary keys: sent, ok, rejected, timed_out, errors,
// throughput_rps, latency_ms {p50, p90, p95, p99, p999, max, mean},
// batch_size {mean, histogram}, queue_depth {mean, max}, send_lag_ms
// {p50, p99, max}, padding {waste, real, padded} (where lengths vary),
// stages_ms {STAGE: {count, p50, p99, mean}} (where the engine's records
// were kept), config, pattern, windows [...].
std::string run_summary_json(const RunData& run, const RunSummary& s);
std::string run_requests_csv(const RunData& run);
std::string run_windows_csv(const RunSummary& s);
// Chrome Trace Event Format: batches as complete events on a track per lane,
// requests as complete events (intended send to answer) on request tracks.
std::string run_trace_json(const RunData& run);
// The summary bench prints after a run: traffic, target and model; the
// options; the counts; throughput; latency, send lag, batch sizes, queue
// depth and padding, each a line (run_text.cpp).
std::string run_summary_text(const RunData& run, const RunSummary& s);

}  // namespace batchscope

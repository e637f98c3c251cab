// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Measures a model's batch cost curve t(b), b = 1, 2, 4, ... up to a maximum,
// through the same run path the engine uses (stack, forward, split), and fits
// t(b) ~ a + c*b. The fit says what batching can buy: per-item time falls
// from a + c towards c, an asymptotic speedup of 1 + a/c.
// Each size is measured until it settles (torch/settle.h): on a busy machine
// a size that does not settle is kept but marked, with the reason, and the
// line is fitted through the settled sizes alone. What else ran meanwhile is
// read from /proc (runs/machine_load.h): the reason names the competing
// processes and their CPU share, and the result keeps the busiest. The medians the cost model
// reads are made monotone (a larger batch never costs less: pooled adjacent
// violators); the medians as measured are kept beside them.
// A caller that gives up (a window closing) stops it between runs: it
// returns kCancelled after the run in progress, never a partial curve.
// Thread-safety: profile_model() runs on the calling thread, and calls the
// options' callbacks there.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "batching/engine.h"
#include "common/model_metadata.h"
#include "common/status.h"

namespace batchscope {

struct ProfilePoint {
  uint32_t batch = 0;
  double median_us = 0;  // the monotone fit's t(b); as measured until the curve is complete
  double per_item_us = 0;
  double speedup = 0;  // per-item time at b = 1 over per-item time here
  // Run-to-run jitter as the relative half-width of a uniform spread with the
  // same 10th-to-90th percentile width: (p90 - p10) / (1.6 * median).
  double spread = 0;
  int runs = 0;
  double measured_us = 0;  // the median as measured
  // Run time over the median at p0, p1/64, ..., p100: the jitter's shape.
  std::vector<double> run_quantiles;
  // How far it can be trusted (settle.h): settled, the windows it took, the
  // measuring thread's lowest CPU share and the windows' largest gap.
  bool settled = true;
  int windows = 0;
  double cpu_share = 1;
  double window_gap = 0;
  std::string why;  // why it did not settle; empty when it did
};

struct ProfileOptions {
  std::string device = "cpu";
  uint32_t max_batch = 0;          // 0: the model's max_batch_size
  int intra_op_threads = 0;        // 0: TorchOptions' default
  int blas_threads = 0;            // 0: all cores (one lane)
  double seconds_per_point = 0.3;  // time spent measuring each batch size
  // Above 1: t(b) is measured again with 2, 3, ... `lanes` copies of the
  // model running batches at once, each on a thread of its own (and on a GPU
  // a CUDA stream of its own), as that many engine lanes at saturation. On a
  // CPU each copy gets the lanes' share of the BLAS threads, as the engine's
  // lanes do.
  uint32_t lanes = 1;
  // A model whose inputs vary in length: t(b, L) is measured again at each
  // of these lengths (cut to its largest) for every size t(b) was measured
  // at, on a thread of its own as a lane runs, each point in three windows
  // of one run at least; a step where the time jumps is halved and its
  // middle measured too (up to three times). Empty: the powers of two from
  // 16 up to the largest, and the largest (default_grid_lengths()).
  // Ignored for other models.
  std::vector<uint32_t> lengths;
  bool length_grid = true;  // false: t(b) at the reference length alone
  int cliff_rounds = 3;     // halvings of a jumping step at most (0: none)
  int min_runs = 7;
  int max_runs = 2000;
  // Windows measured at most per size before it is reported unsettled; a
  // settled size takes 3, each a third of seconds_per_point.
  int max_windows = 10;
  // Called after each point is measured (its speedup against b = 1 filled
  // in), so a caller can show how far the curve has got.
  std::function<void(const ProfilePoint&)> on_point;
  // Called after each point of the length grid (batch, length, median us).
  std::function<void(uint32_t, uint32_t, double)> on_grid_point;
  // Asked before the model loads, between its warm-up sizes and before each
  // run; once it says true the profile stops and returns kCancelled.
  std::function<bool()> cancelled;
};

// t(b) of one lane while `lanes` lanes run batches of the same size at once.
struct LanesProfile {
  uint32_t lanes = 2;
  std::vector<ProfilePoint> points;  // speedup: batches per second of all lanes over one lane's
};

struct ProfileResult {
  std::string model;
  std::string device;
  std::vector<ProfilePoint> points;
  double a_us = 0;                // fitted fixed cost per batch
  double c_us = 0;                // fitted cost per item
  double asymptotic_speedup = 0;  // 1 + a/c; 0 unless a > 0 and c > 0
  // Every size settled. When not, the fit is through the settled sizes only
  // (none when fewer than 2 settled: a = c = 0).
  bool settled = true;
  std::string blas;
  std::string blas_library;
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  int blas_threads = 0;
  std::vector<LanesProfile> lanes;  // 2, 3, ... up to ProfileOptions::lanes
  // A model whose inputs vary in length: the length t(b) was measured at
  // (random_inputs()'s), and t(b, L) over the sizes of `points` and
  // `grid_lengths` (the measured medians, a row per size); empty otherwise.
  uint32_t reference_length = 0;
  std::vector<uint32_t> grid_lengths;
  std::vector<double> grid_us;
  // The most CPU other processes used while a size was measured, in cores,
  // and who they were (CompetingLoad::describe); empty when below a quarter
  // of a core throughout.
  double competing_cores = 0;
  std::string competing;
  // A model whose requests are prepared before batching (a Python class
  // with preprocess): one request's time in the preprocess pool with k
  // processes kept busy (entry k - 1: 65 quantiles p0..p100, in
  // microseconds), and what preparing one request adds to a lane's batch
  // (quantiles); empty otherwise.
  std::vector<std::vector<double>> preprocess_pool_us;
  std::vector<double> preprocess_lane_us;
  // The requests behind each: entry k - 1 for the pool, and the lane's.
  std::vector<uint64_t> preprocess_pool_requests;
  uint64_t preprocess_lane_requests = 0;
};

// The sizes that did not settle, "b = 16, 32", and why the first did not;
// empty when all did.
std::string unsettled_text(const std::vector<ProfilePoint>& points);

// Least-squares line through (b, t): {a, c}.
struct LineFit {
  double a = 0;
  double c = 0;
};
LineFit fit_line(const std::vector<ProfilePoint>& points);

// A TorchScript model's t(b), loaded from its file (profile_runners on its
// TorchModels).
Expected<ProfileResult> profile_model(const std::string& model_path, const ProfileOptions& options);

// What profile_runners measures: any model's lanes, as the engine's runners.
struct ProfileSubject {
  ModelMetadata metadata;
  std::string device = "cpu";
  std::string what;  // the model, as errors name it (its file)
  // Lane `lane` of `lanes` that share the machine, ready to run (prepared,
  // warmed up to the profile's largest size); called on the profiling thread.
  std::function<Expected<std::unique_ptr<Runner>>(uint32_t lanes, uint32_t lane)> lane;
  // How a lane runs, for the result (torch_info(), TorchModel's threads);
  // 0 and "" where not known.
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  int blas_threads = 0;
  std::string blas;
  std::string blas_library;
  // The runner hands each batch to a child process (a Python model's
  // worker) and waits: the measuring thread's own CPU share says nothing,
  // and the children's CPU is the model's, not a competing load.
  bool runs_elsewhere = false;
};

// t(b) through the subject's runners: the same measurement as profile_model
// (settling, the length grid, lanes at once) for a model of any kind.
Expected<ProfileResult> profile_runners(const ProfileSubject& subject,
                                        const ProfileOptions& options);

// The lengths a grid measures by default for lengths up to `largest`: 16,
// 32, 64, ... below it, and it; with `reference` among them.
std::vector<uint32_t> default_grid_lengths(uint32_t largest, uint32_t reference);

// The middles of the grid's steps that look like a cliff: between two
// neighbouring lengths lo < hi at least 8 apart, some size's time grew more
// than 2 x (hi / lo)^2 (twice as fast as the square of the length). `columns`
// maps a length to a time per size, every column the same size.
std::vector<uint32_t> cliff_middles(const std::map<uint32_t, std::vector<double>>& columns);

// {"format": "batchscope-cost", "version": 2, "model", "device", "settled",
//  "points": [{"batch", "median_us", "measured_us", "per_item_us", "speedup",
//  "spread", "runs", "settled", "windows", "cpu_share", "window_gap", "why"
//  (when unsettled), "run_quantiles"}], "a_us", "c_us", "asymptotic_speedup",
//  "speedup_at": {"1": .., "32": ..}, "blas", "blas_library",
//  "intra_op_threads", "inter_op_threads", "blas_threads", and when measured
//  "lanes": [{"lanes": 2, "points": [{"batch", "median_us", "spread", "runs",
//  "throughput_ratio"}]}]}, and where a length grid was measured
//  "length_grid": {"reference", "batches", "lengths", "median_us": [[...]]}
//  (tuning/length_grid.h), and where preprocess was measured "preprocess":
//  {"lane_us_quantiles": [...], "pool": [{"busy": 1, "us_quantiles": [...]}]}
//  (tuning/preprocess_cost.h).
std::string profile_json(const ProfileResult& r);

}  // namespace batchscope

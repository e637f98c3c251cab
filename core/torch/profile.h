#pragma once
// Measures a model's batch cost curve t(b), b = 1, 2, 4, ... up to a maximum,
// through the same run path the engine uses (stack, forward, split), and fits
// t(b) ~ a + c*b. The fit says what batching can buy: per-item time falls
// from a + c towards c, an asymptotic speedup of 1 + a/c.
// A caller that gives up (a window closing) stops it between runs: it
// returns kCancelled after the run in progress, never a partial curve.
// Thread-safety: profile_model() runs on the calling thread, and calls the
// options' callbacks there.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace batchscope {

struct ProfilePoint {
  uint32_t batch = 0;
  double median_us = 0;
  double per_item_us = 0;
  double speedup = 0;  // per-item time at b = 1 over per-item time here
  // Run-to-run jitter as the relative half-width of a uniform spread with the
  // same 10th-to-90th percentile width: (p90 - p10) / (1.6 * median).
  double spread = 0;
  int runs = 0;
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
  int min_runs = 7;
  int max_runs = 2000;
  // Called after each point is measured (its speedup against b = 1 filled
  // in), so a caller can show how far the curve has got.
  std::function<void(const ProfilePoint&)> on_point;
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
  std::string blas;
  std::string blas_library;
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  int blas_threads = 0;
  std::vector<LanesProfile> lanes;  // 2, 3, ... up to ProfileOptions::lanes
};

// Least-squares line through (b, t): {a, c}.
struct LineFit {
  double a = 0;
  double c = 0;
};
LineFit fit_line(const std::vector<ProfilePoint>& points);

Expected<ProfileResult> profile_model(const std::string& model_path, const ProfileOptions& options);

// {"model", "device", "points": [{"batch", "median_us", "per_item_us",
//  "speedup", "spread", "runs"}], "a_us", "c_us", "asymptotic_speedup",
//  "speedup_at": {"1": .., "32": ..}, "blas", "blas_library",
//  "intra_op_threads", "inter_op_threads", "blas_threads", and when measured
//  "lanes": [{"lanes": 2, "points": [{"batch", "median_us", "spread", "runs",
//  "throughput_ratio"}]}]}
std::string profile_json(const ProfileResult& r);

}  // namespace batchscope

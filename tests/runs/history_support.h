// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers for the history tests: a fresh folder per test, and a run built by
// hand with every kind of record and a stage never reached.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "runs/history.h"

namespace batchscope::testing_history {

// A new folder under the test's temporary directory, removed at the end.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = ::testing::TempDir() + "history_XXXXXX";
    path_ = mkdtemp(pattern.data());
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline const TimePoint kStart = TimePoint(std::chrono::seconds(7000));

// n requests, 1 ms apart, in batches of 4; the last is rejected (never ran).
inline RunData sample_run(int n) {
  RunData run;
  run.config.pattern = "poisson rate=1000";
  run.config.target = "inproc";
  run.config.model = "mlp";
  run.config.options.max_batch_size = 4;
  run.config.options.max_wait_us = 1500;
  run.config.options.strategy = StrategyKind::kAdaptive;
  run.config.options.target_p99_ms = 12.5;
  run.config.duration_s = n / 1000.0;
  run.config.seed = 42;
  run.start = kStart;
  for (int i = 0; i < n; ++i) {
    RunRequest q;
    q.index = static_cast<uint64_t>(i);
    q.intended = kStart + std::chrono::milliseconds(i);
    q.sent = q.intended + std::chrono::microseconds(3);
    q.done = q.intended + std::chrono::microseconds(800 + i);
    q.batch_id = static_cast<uint64_t>(i / 4 + 1);
    q.batch_size = 4;
    if (i == n - 1) {
      q.outcome = Outcome::kRejected;
      q.batch_id = 0;
      q.batch_size = 0;
    }
    run.requests.push_back(q);
  }
  for (int b = 0; b < n / 4; ++b) {
    BatchRecord r;
    r.id = static_cast<uint64_t>(b + 1);
    r.size = 4;
    r.reason = b % 2 ? BatchReason::kTimeout : BatchReason::kFull;
    r.lane = static_cast<uint16_t>(b % 2);
    r.queue_depth_after = static_cast<uint32_t>(b % 3);
    r.oldest_arrival = kStart + std::chrono::milliseconds(4 * b);
    r.batched = r.oldest_arrival + std::chrono::microseconds(3100);
    r.run_start = r.batched + std::chrono::microseconds(5);
    r.run_end = b == 0 ? TimePoint{} : r.run_start + std::chrono::microseconds(400);
    r.longest = static_cast<uint32_t>(16 + b);  // requests of varying length
    r.length_sum = 3 * r.longest;
    run.batches.push_back(r);
  }
  for (int d = 0; d < n / 10; ++d) {
    run.depth.push_back(DepthSample{kStart + std::chrono::milliseconds(10 * d),
                                    static_cast<uint32_t>(d % 5), static_cast<uint32_t>(d % 7)});
  }
  return run;
}

inline HistoryRun header_of(const RunData& run, std::string kind = "bench") {
  HistoryRun h;
  h.kind = std::move(kind);
  h.label = run.config.pattern + " -> " + run.config.target;
  h.model = run.config.model;
  h.config = run.config;
  h.context = R"({"machine":{"cpu":"test"}})";
  return h;
}

}  // namespace batchscope::testing_history

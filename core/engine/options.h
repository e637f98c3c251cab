#pragma once
// The batching options a user tunes. A full value is validated and swapped in
// as a whole; the engine reports the options in force with a version number.
// Thread-safety: a plain value.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "status.h"

namespace batchscope {

enum class StrategyKind : uint8_t {
  kFifo,      // cut when max_batch_size wait, or when the head has waited max_wait
  kAdaptive,  // like fifo, with cap and wait tuned live against target_p99_ms
};

const char* strategy_name(StrategyKind kind);
std::optional<StrategyKind> parse_strategy(std::string_view name);

struct Options {
  // Largest batch handed to the model. Range 1..kMaxBatchSize.
  uint32_t max_batch_size = 32;
  // Longest the oldest queued request waits for a batch to fill, in
  // microseconds. 0 dispatches whatever is queued as soon as a lane is free.
  // Range 0..10,000,000 (10 s).
  int64_t max_wait_us = 2000;
  // Requests admitted but not yet dispatched; beyond it submit() answers
  // kQueueFull at once. Range 1..16,777,216.
  uint32_t queue_capacity = 1024;
  // A queued request not dispatched within this many milliseconds of its
  // arrival fails with kTimedOut and never reaches the model. Range 1..3,600,000.
  int64_t request_timeout_ms = 30000;
  // Runner lanes, each with its own model instance and thread. Range 1..64.
  uint32_t num_lanes = 1;
  StrategyKind strategy = StrategyKind::kFifo;
  // Adaptive strategy only: the end-to-end p99 latency it steers towards, in
  // milliseconds. Range 0.01..600,000.
  double target_p99_ms = 50.0;

  // Ok, or kInvalidArgument naming the field, its value and the allowed range.
  Status validate() const;
  bool operator==(const Options&) const = default;
};

inline constexpr uint32_t kMaxBatchSize = 4096;

// "max_batch_size=32 max_wait_us=2000 ..." for logs and summaries.
std::string describe(const Options& o);

}  // namespace batchscope

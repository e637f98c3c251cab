// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Values of text generation: a request, what happens to it, and the records
// the generation engine keeps of requests and steps.
// Thread-safety: plain values.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "runs/gen_records.h"

namespace batchscope {

struct Sampling {
  double temperature = 1.0;      // 0: greedy (the most likely token)
  double top_p = 1.0;            // nucleus: sample among the likeliest tokens holding this mass
  std::optional<uint64_t> seed;  // the same seed and prompt give the same text
};

enum class FinishReason : uint8_t {
  kStop,       // the end-of-sequence token or a stop string
  kLength,     // max_tokens, or the model's context is full
  kCancelled,  // the client went away, or cancel()
  kTimedOut,   // request_timeout_ms passed before it finished
  kError,      // the model failed the step, or the engine stopped
};

// "stop", "length", "cancelled", "timeout", "error".
const char* finish_reason_name(FinishReason r);

struct GenRecord;

// Tokens as they are generated. Called on the engine's thread, in order, and
// must not block: `text` is the new text (whole UTF-8 characters, with any
// stop string held back until it is known not to match).
using GenOnText = std::function<void(std::string_view text, uint32_t tokens, TimePoint when)>;
// The end, exactly once per admitted request.
using GenOnDone = std::function<void(const GenRecord& record)>;

struct GenRequest {
  std::vector<int32_t> prompt;  // token ids; at least one
  uint32_t max_tokens = 16;     // at least one
  Sampling sampling;
  std::vector<std::string> stop;  // finish when the text ends with one (it is not returned)
  bool ignore_eos = false;        // for benchmarks: run to max_tokens
  GenOnText on_text;
  GenOnDone on_done;
};

// One request's life. Times are kNever where the moment did not come.
struct GenRecord {
  uint64_t id = 0;
  FinishReason reason = FinishReason::kStop;
  std::string error;  // kError: what failed
  std::string text;   // the whole completion (stop string removed)
  uint32_t prompt_tokens = 0;
  uint32_t output_tokens = 0;
  uint32_t preemptions = 0;  // times its cache was given up and recomputed
  TimePoint arrival{};
  TimePoint admitted = kNever;     // first scheduled
  TimePoint first_token = kNever;  // its first output token was sampled
  TimePoint finished{};
  // Gaps between consecutive output tokens (inter-token latency), in order.
  std::vector<Duration> gaps;
};

// One step of the engine: StepRecord, in runs/gen_records.h (a run history
// keeps them).

}  // namespace batchscope

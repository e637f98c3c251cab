// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Generation traffic on a schedule, and what it measured. The driver sends
// each request at its intended time (open loop, every arrival pattern but
// closed) with lengths and a prompt from a GenWorkload, and records, per
// request, when its tokens arrived as the client saw them; times are
// measured from the intended send time, so a server that falls behind shows
// as latency, not as less load. The summary gives time to first token
// (TTFT), inter-token latency (ITL, every gap), end-to-end latency, tokens/s
// and goodput under a TTFT/ITL objective, plus the end-to-end median of the
// short and long halves of the requests by max_tokens.
// Thread-safety: run_gen_load() blocks its caller until every request is
// answered; targets call back from any thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "generation/gen_engine.h"
#include "runs/history.h"
#include "runs/machine_load.h"
#include "traffic/arrivals.h"
#include "traffic/gen_workload.h"

namespace batchscope {

// Where a generation run sends its requests.
class GenTarget {
 public:
  struct Callbacks {
    std::function<void(TimePoint when, uint32_t tokens)> on_tokens;
    // Once: ok (the text ended by stop or length), the output tokens, the
    // time, and the failure's name ("rejected", "timeout", "error", ...).
    std::function<void(bool ok, uint32_t tokens, TimePoint when, std::string outcome)> on_done;
    // Before on_done, where the target counted the prompt itself (a
    // server's usage: a chat template adds its own tokens to the message).
    std::function<void(uint32_t prompt_tokens)> on_prompt_tokens;
  };
  virtual ~GenTarget() = default;
  virtual void send(const std::string& prompt, uint32_t max_tokens, Callbacks cb) = 0;
};

// The request the in-process engine gets for a prompt: its bytes as token
// ids, greedy, run to max_tokens (ignore_eos), without callbacks.
GenRequest gen_request_of(const std::string& prompt, uint32_t max_tokens);

// The in-process engine.
class GenEngineTarget final : public GenTarget {
 public:
  explicit GenEngineTarget(GenEngine& engine) : engine_(engine) {}
  void send(const std::string& prompt, uint32_t max_tokens, Callbacks cb) override;

 private:
  GenEngine& engine_;
};

struct GenRequestResult {
  Duration intended{0};  // send time from the run's start
  uint32_t prompt_tokens = 0;
  uint32_t max_tokens = 0;
  uint32_t output_tokens = 0;
  bool done = false;
  bool ok = false;
  std::string outcome;       // "stop"/"length" when ok, else what went wrong
  TimePoint first = kNever;  // first token
  TimePoint last = kNever;   // last token
  TimePoint finished = kNever;
  std::vector<Duration> gaps;  // between consecutive token arrivals
};

struct GenRun {
  std::string pattern, workload, target, model, options;
  uint64_t seed = 0;
  TimePoint start{};
  std::vector<GenRequestResult> requests;
  std::vector<StepRecord> steps;  // in-process runs
  // In-process runs: what other processes used over the run (a busy run
  // refines no kept step cost); none: not watched.
  std::optional<CompetingLoad> others;
  // The paged cache's token positions the run had, where known (0: not).
  uint64_t cache_tokens = 0;
};

// A generation target over HTTP, which a room above this one makes
// (core/api): this process's listener over `engine` (self-http), or another
// server when `engine` is null.
class LmHttpFront {
 public:
  virtual ~LmHttpFront() = default;
  // The target the load sends to; valid until close(). `run`'s target and
  // model may be renamed as the server gave them.
  virtual Expected<GenTarget*> open(GenEngine* engine, GenRun& run) = 0;
  virtual void close() = 0;
};

struct Quantiles {
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0, mean = 0, max = 0;  // milliseconds
};

struct GenSummary {
  uint64_t sent = 0, ok = 0, failed = 0;
  double duration_s = 0;  // first intended send to last answer
  uint64_t output_tokens = 0;
  double tokens_per_s = 0;
  double requests_per_s = 0;
  Quantiles ttft, itl, e2e;
  Quantiles e2e_short, e2e_long;  // bottom and top half by max_tokens
  // The time per output token after the first (the mean of a request's
  // gaps), averaged over the requests with two tokens or more: the TPOT
  // most published figures give.
  double tpot_mean_ms = 0;
  double slo_ttft_ms = 0, slo_itl_ms = 0;
  uint64_t good = 0;  // ok and within both objectives (0: none set)
  double goodput_rps = 0;
  uint64_t steps = 0, preemptions = 0;
  double decodes_per_step = 0;
};

// What a generation run has finished since the last hand-over, for a caller
// that keeps the run as it goes: the requests (with their index in the run)
// in the order they ended, and, where the caller adds them, engine steps.
// The first hand-over comes as the traffic starts, empty.
struct GenProgress {
  TimePoint start{};
  std::vector<uint64_t> indices;
  std::vector<GenRequestResult> requests;
  std::vector<StepRecord> steps;
};
using GenProgressFn = std::function<void(GenProgress&&)>;

struct GenLoadOptions {
  Duration drain = std::chrono::seconds(300);  // for the last answers
  // Ends the schedule early when it becomes true (looked at every 20 ms);
  // what is in flight then gets up to `drain_after_stop`, and what has not
  // ended by then stays in the run as not done.
  const std::atomic<bool>* stop = nullptr;
  Duration drain_after_stop = std::chrono::seconds(5);
  // Called from a thread of the driver's every `progress_every` (on the
  // injected clock) while the run lasts; the GenRun returned still holds
  // every request.
  GenProgressFn progress;
  Duration progress_every = std::chrono::milliseconds(500);
};

// Sends the whole schedule (closed: `spec.concurrency` in flight), then
// waits up to `drain` for the last answers.
GenRun run_gen_load(const ArrivalSpec& spec, GenWorkload& workload, GenTarget& target, Clock& clock,
                    const GenLoadOptions& options);
inline GenRun run_gen_load(const ArrivalSpec& spec, GenWorkload& workload, GenTarget& target,
                           Clock& clock, Duration drain = std::chrono::seconds(300)) {
  GenLoadOptions o;
  o.drain = drain;
  return run_gen_load(spec, workload, target, clock, o);
}

// `slo_*_ms` 0: no objective on that figure. A request meets the ITL
// objective when the mean of its gaps does (vLLM's TPOT).
GenSummary summarize_gen(const GenRun& run, double slo_ttft_ms, double slo_itl_ms);

// A request's result as a run history keeps it (runs/history.h), and back.
HistoryGenRequest history_row_of(const GenRequestResult& q);
// A request the engine finished as a generation run keeps it: its intended
// send is its arrival, from `start`; token times as the engine saw them.
HistoryGenRequest history_row_of(const GenRecord& r, TimePoint start);
GenRequestResult gen_result_of(const HistoryGenRequest& q);

std::string gen_summary_text(const GenRun& run, const GenSummary& s);
std::string gen_summary_json(const GenRun& run, const GenSummary& s);
std::string gen_requests_csv(const GenRun& run);
// Chrome trace: one row of steps (decodes and prefill tokens in each) and
// one row per request slot.
std::string gen_trace_json(const GenRun& run);

}  // namespace batchscope

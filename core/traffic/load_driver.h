// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Sends traffic to a target on a schedule and records the run.
//
// Open loop (every pattern but closed): each request has an intended send
// time from the ArrivalSchedule; the driver sends it then (or at once, if it
// is behind), and latency is measured from the intended time. A stalled
// target therefore shows up as latency and send lag, never as less offered
// load. Closed loop: `concurrency` requests are kept in flight, each sent
// when one returns. All sends come from the driver's thread; completions may
// come from any thread.
//
// Time goes through the injected Clock, so a test can run the driver on a
// ManualClock and stall a target deterministically.
// Thread-safety: run_load() blocks its caller until the run is over.

#include <atomic>
#include <functional>
#include <vector>

#include "batching/engine.h"
#include "runs/run_record.h"
#include "traffic/arrivals.h"

namespace batchscope {

// Where a run sends its requests.
class LoadTarget {
 public:
  struct Result {
    Outcome outcome = Outcome::kOk;
    int http_status = 0;
    uint64_t batch_id = 0;
    uint32_t batch_size = 0;
  };
  // Called exactly once per send(), from any thread.
  using Done = std::function<void(const Result&)>;

  virtual ~LoadTarget() = default;
  virtual void send(uint64_t index, Done done) = 0;
};

// A target over HTTP, which a room above this one makes (core/api) and a
// bench hands down: this process's listener over `engine` (self-http), or
// another server when `engine` is null.
class HttpFront {
 public:
  virtual ~HttpFront() = default;
  // The target the load sends to, `varied` the model's requests where its
  // inputs vary in length; valid until close().
  virtual Expected<LoadTarget*> open(Engine* engine, const ModelMetadata& model,
                                     const std::vector<Tensors>& varied) = 0;
  // Stops the client and, for this process's listener, the listener.
  virtual void close() = 0;
};

// The in-process engine as a target: the core alone, no network.
class EngineTarget final : public LoadTarget {
 public:
  using Payload = std::function<Tensors(uint64_t index)>;
  EngineTarget(Engine& engine, Payload payload) : engine_(engine), payload_(std::move(payload)) {}
  void send(uint64_t index, Done done) override;

 private:
  Engine& engine_;
  Payload payload_;
};

Outcome outcome_of(ErrorCode code);

// Live counts of a run under way, readable from any thread.
struct LoadCounters {
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> ok{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> failed{0};  // timed out or any other error
};

// What a run has recorded since the last hand-over, for a caller that keeps
// the run as it goes (a history): the requests answered since then, in the
// order they were answered, and (from run_inproc) the engine's batches and
// depth samples. The first hand-over comes as the traffic starts, empty.
struct RunProgress {
  TimePoint start{};  // the run's time zero
  std::vector<RunRequest> requests;
  std::vector<BatchRecord> batches;
  std::vector<DepthSample> depth;
};
using ProgressFn = std::function<void(RunProgress&&)>;

struct LoadOptions {
  // After the schedule ends, how long to wait for outstanding answers before
  // recording them as errors (and counting them as failed). Answers that come
  // later are ignored, safely: the target may outlive run_load().
  Duration drain_timeout = std::chrono::seconds(60);
  // Ends the run early when it becomes true: checked before each send and at
  // least every 20 ms while waiting for the next one.
  const std::atomic<bool>* stop = nullptr;
  // False keeps no per-request records (for open-ended traffic such as the
  // workbench's): only requests in flight are held; counts go to `counters`.
  bool keep_requests = true;
  LoadCounters* counters = nullptr;
  // Called from a thread of the driver's every `progress_every` (on the
  // injected clock) while the run and its drain last, with what was answered
  // since the last call; the RunData returned still holds every request.
  // Needs keep_requests.
  ProgressFn progress;
  Duration progress_every = std::chrono::milliseconds(500);
};

RunData run_load(const ArrivalSpec& spec, LoadTarget& target, RunConfig config, Clock& clock,
                 LoadOptions options = {});

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// `serve --record`: what the server's clients send, kept in the history as
// runs of kind "serve", written as they go. Tensor requests come with the
// batches they ran in and the queue's depth; generative requests with the
// engine's steps. Only sizes and timings are kept, never a request's body,
// unless --record-bodies asks for the bodies too (to replay the traffic).
//
// The stream is cut into one run per `every_s` (0: one run until the end).
// A request belongs to the run it arrived in: a run cut at time c takes no
// request that arrived at c or later, and stays open `grace` longer for the
// answers to those that came before, so that a request in flight over a cut
// is kept once. One still in flight `grace` after its run was cut is not
// kept. Memory: each open run holds its requests (about 64 bytes each for
// tensor requests) until it is finished.
// Thread-safety: one thread at a time (serve's listener thread, then its
// main thread once the listener has stopped).

#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "generation/gen_types.h"
#include "model/history_keeping.h"
#include "model/say.h"
#include "runs/history.h"
#include "runs/records.h"
#include "runs/run_recorder.h"

namespace batchscope {

class HistoryWriter;

struct ServeRecordOptions {
  std::string label = "served clients";
  double every_s = 0;   // 0: one run until the end
  bool bodies = false;  // --record-bodies: each request's body too
  Duration grace = std::chrono::seconds(2);
};

class ServeRecording {
 public:
  // `header`: the model, options (config) and context of every run; its
  // kind and label are set here.
  ServeRecording(HistoryWriter& writer, HistoryRun header, ServeRecordOptions o, TimePoint start);

  // One poll's records, at `now`: kept, handed to the history, and the
  // stream cut where `every_s` has passed.
  void add(const RecordBatch& records, TimePoint now);
  void add_generation(const std::vector<GenRecord>& finished, const std::vector<StepRecord>& steps,
                      TimePoint now);
  // A request's body as it arrived (with --record-bodies), kept with the run
  // it arrived in.
  void add_body(std::string_view route, const std::string& body, TimePoint arrival);
  // Ends every run at `end` and stores their summaries.
  void finish(TimePoint end);
  // Runs begun so far.
  size_t runs() const { return made_; }

 private:
  struct Part {
    uint64_t token = 0;
    TimePoint start{}, cut = kNever;
    RunRecorder tensor;
    size_t requests = 0, batches = 0, depth = 0;  // of tensor.so_far(), handed over
    std::vector<HistoryGenRequest> generation;    // a generative run's, from its start
    std::vector<StepRecord> steps;
  };
  void begin(TimePoint start);
  void cut_and_close(TimePoint now);
  void close(Part& p);
  static constexpr size_t kNone = SIZE_MAX;
  size_t part_at(TimePoint t) const;  // the open run `t` falls in, or kNone

  HistoryWriter& writer_;
  HistoryRun header_;
  ServeRecordOptions o_;
  bool generative_ = false;
  size_t made_ = 0;
  std::deque<Part> open_;  // oldest first; only the newest is uncut
};

// What serve was asked to record, and into which history.
struct ServeRecordChoice {
  bool on = false;
  ServeRecordOptions options;
  HistoryChoice history;
};

// The writer and the recording, for serve: null when not recording or when
// the history is unfit (after one warning).
struct ServeRecorder {
  Say say;
  HistoryWriterPtr writer;
  std::unique_ptr<ServeRecording> recording;
  // Once the history has failed (a full disk): says so through say.err, once,
  // and stops recording; serving goes on. True while recording.
  bool going();
  // Ends the recording at `end`, waits for the writer and says what was
  // kept (or why not).
  void finish(TimePoint end);

 private:
  bool stopped_ = false;
};
std::unique_ptr<ServeRecorder> open_serve_recorder(const ServeRecordChoice& c, HistoryRun header,
                                                   TimePoint start, const Say& say);

}  // namespace batchscope

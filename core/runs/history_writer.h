// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Writes runs into the history from a thread of its own, so that whoever
// records (the engine's drain on the GUI thread, a bench at its end) never
// waits for the disk. Each call queues its work and returns at once; the
// writer takes everything queued when it wakes and writes it in one
// transaction, so a run recorded as it goes is committed as often as its
// recorder hands records over (the window hands them over on every refresh,
// several times a second). A process killed mid-run therefore loses only
// what it had not yet handed over, and its run stays marked unfinished.
//
// Requests past `request_cap` a run are counted but not kept. An error while
// writing (a full disk, a file made read-only) stops the history: the error
// is kept for failure(), later calls are dropped, and the caller's run goes
// on.
// Thread-safety: every public member may be called from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "runs/history.h"

namespace batchscope {

inline constexpr uint64_t kDefaultHistoryRequestCap = 1'000'000;

class HistoryWriter {
 public:
  using Token = uint64_t;  // a run of this writer's, before and after it has an id

  HistoryWriter(std::unique_ptr<History> store, uint64_t request_cap = kDefaultHistoryRequestCap);
  // Writes what is queued, then stops.
  ~HistoryWriter();
  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  // Starts a run whose records' times count from `start`; with `parent`, a
  // run of this writer's that it belongs to (its id is filled in).
  Token begin(HistoryRun header, TimePoint start, Token parent = 0);
  void append(Token run, std::vector<RunRequest> requests, std::vector<BatchRecord> batches = {},
              std::vector<DepthSample> depth = {});
  // A generation run's requests, kept up to the cap as requests are, and its
  // engine's steps.
  void append_generation(Token run, std::vector<HistoryGenRequest> requests,
                         std::vector<StepRecord> steps = {});
  // Request bodies (serve --record-bodies), kept up to the cap a run.
  void append_bodies(Token run, std::vector<HistoryBody> bodies);
  // Stores the summary and marks the run finished; a `duration_s` of zero or
  // more replaces the one the run began with (a recording learns its length
  // when it stops).
  void finish(Token run, std::string summary, double duration_s = -1);

  // Removes a kept run (by its id in the file) and its records. A run that
  // is not there is no error: someone removed it first.
  void remove(int64_t id);
  // Gives a kept run a new label (its name in the window).
  void relabel(int64_t id, std::string label);
  // The same for a run of this writer's, by its token, whether or not it
  // has been written yet: the writer finds its id in turn. Never waits.
  void remove_run(Token run);
  void relabel_run(Token run, std::string label);

  // Blocks until everything queued before the call is written (or dropped).
  void flush();
  // The run's id in the file; nullopt until it is written, or if it failed.
  std::optional<int64_t> id_of(Token run) const;
  // Set once writing has failed; the history is off from then on.
  std::optional<std::string> failure() const;
  const std::string& path() const { return path_; }
  uint64_t request_cap() const { return cap_; }

 private:
  struct Op {
    enum Kind {
      kBegin,
      kAppend,
      kAppendGen,
      kAppendBodies,
      kFinish,
      kRemove,
      kRelabel
    } kind = kBegin;
    Token token = 0;
    Token parent = 0;  // kBegin
    int64_t id = 0;    // kRemove, kRelabel; 0: the run of `token`
    HistoryRun header;
    TimePoint start{};
    std::chrono::system_clock::time_point wall_start{};  // kBegin: `start` on the wall clock
    std::vector<RunRequest> requests;
    std::vector<BatchRecord> batches;
    std::vector<DepthSample> depth;
    std::vector<HistoryGenRequest> generation;
    std::vector<StepRecord> steps;
    std::vector<HistoryBody> bodies;
    std::string summary;     // kFinish; the label for kRelabel
    double duration_s = -1;  // kFinish
  };
  struct RunState {
    int64_t id = 0;
    TimePoint start{};
    uint64_t seen = 0, kept = 0;
    std::chrono::system_clock::time_point wall_start{};
    uint64_t bodies = 0;
  };

  void push(Op op);
  void loop();
  Status write(std::deque<Op>& ops, std::vector<std::pair<Token, int64_t>>& begun);
  Status apply(Op& op, std::vector<std::pair<Token, int64_t>>& begun);

  std::unique_ptr<History> store_;  // the writer thread's alone
  const uint64_t cap_;
  const std::string path_;
  std::map<Token, RunState> runs_;      // the writer thread's alone
  std::map<Token, int64_t> begun_ids_;  // every run it began: its id (writer thread)

  mutable Mutex mu_;
  std::condition_variable wake_, done_;
  std::deque<Op> queue_ GUARDED_BY(mu_);
  // Ops queued and taken care of, ever.
  uint64_t queued_ GUARDED_BY(mu_) = 0, written_ GUARDED_BY(mu_) = 0;
  Token next_token_ GUARDED_BY(mu_) = 1;
  std::map<Token, int64_t> ids_ GUARDED_BY(mu_);
  std::optional<std::string> failure_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // the constructor's and destructor's; not under mu_
};

}  // namespace batchscope

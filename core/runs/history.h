// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The run history: every bench, tune, recorded and generation run kept in one
// SQLite file (WAL mode), with its context (machine, model), options, traffic,
// summary, and the requests, batches and queue-depth samples it recorded.
//
// A run is written as it goes: begin_run() makes its row, marked unfinished;
// append() adds records in whatever transaction the caller holds; finish_run()
// stores the summary and marks it finished. A process killed mid-run leaves
// an unfinished run with what was committed. Times are kept as nanoseconds
// since the run's start, NULL for a stage never reached, so load() gives back
// a RunData that summarize_run() and the exports read as they read the one
// recorded.
//
// The schema is versioned (PRAGMA user_version): an older file is migrated
// forward on open, a newer one refused by name. Writers from several
// processes share a file through SQLite's locking, waiting up to the busy
// timeout for one another.
// Thread-safety: one thread at a time per History; HistoryWriter owns one on
// its own thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "runs/gen_records.h"
#include "runs/run_record.h"

namespace batchscope {

namespace sqlite {
class Db;
class Stmt;
}  // namespace sqlite

inline constexpr int kHistorySchemaVersion = 5;

// One run's row.
struct HistoryRun {
  int64_t id = 0;
  std::string kind;            // "bench", "tune", "recorded", "generation", "serve"
  std::string started_at;      // UTC, "2026-11-28T19:40:00.123Z": when its traffic started
  std::string finished_at;     // when it ended; empty while unfinished
  std::string label;           // what the run was, in a line
  std::string model;           // the model's name
  RunConfig config;            // traffic, target, options, duration, seed
  std::string context;         // JSON object: {"machine": {...}, "model": {...}}
  std::string summary;         // JSON: run_summary_json(), or a tune's result
  uint64_t requests_seen = 0;  // requests the run recorded
  uint64_t requests_kept = 0;  // of them, rows kept (the rest cut by the cap)
  int64_t parent_id = 0;       // the run this one belongs to (a tune's confirmation); 0: none
  bool finished() const { return !finished_at.empty(); }
  // Its records are generative requests and engine steps: a generation
  // run, or a serve run of a generative server's clients.
  bool generative() const {
    return kind == "generation" || (kind == "serve" && config.pattern == kServedGenerationPattern);
  }
  static constexpr const char* kServedGenerationPattern = "clients over HTTP, generative";
};

// A generative request as a generation run keeps it: when it was meant to go
// (since the run's start), its token timings (kNever: not reached), lengths
// and outcome, and the gaps between its tokens.
struct HistoryGenRequest {
  Duration intended{0};
  TimePoint first = kNever, last = kNever, finished = kNever;
  uint32_t prompt_tokens = 0, max_tokens = 0, output_tokens = 0;
  bool done = false, ok = false;
  std::string outcome;
  std::vector<Duration> gaps;
};

// A client's request body as `serve --record-bodies` keeps it: when it
// arrived since the run's start, its route ("/infer", "/v1/completions")
// and its bytes.
struct HistoryBody {
  Duration at{0};
  std::string route;
  std::string body;
};

struct HistoryFilter {
  std::string model;   // exact name; empty: any
  std::string kind;    // exact kind; empty: any
  std::string since;   // runs started at or after this UTC time; empty: any
  std::string text;    // a substring of the label or model; empty: any
  int64_t parent = 0;  // runs belonging to this run; 0: any
};

// A filter as a person types it (batchscope runs list --model --kind
// --since --grep): `kind` one of HistoryRun's kinds, `since` a UTC date
// "2026-11-28" or time "2026-11-28T19:00:00Z"; the error names the flag
// and quotes the value.
Expected<HistoryFilter> parse_history_filter(std::string model, std::string kind,
                                             const std::string& since, std::string text);

// The history file's default path: $BATCHSCOPE_HISTORY, else
// $XDG_DATA_HOME/batchscope/history.sqlite, else
// ~/.local/share/batchscope/history.sqlite.
std::string default_history_path();

// Now in UTC, ISO 8601 to the millisecond: "2026-11-28T19:40:00.123Z".
std::string utc_now();
// `t` the same way.
std::string utc_text(std::chrono::system_clock::time_point t);
// The wall-clock time of `t` on the steady clock, as now less how long ago
// it was.
std::chrono::system_clock::time_point wall_time_of(TimePoint t);
// Seconds from one such UTC text to another (to the second or the
// millisecond); nullopt when either cannot be read.
std::optional<double> seconds_between(const std::string& from, const std::string& to);

class History {
 public:
  struct OpenOptions {
    bool read_only = false;  // list and show without writing
    int busy_timeout_ms = 5000;
  };
  // Opens (creating it and its folder when writing) and migrates the file.
  // Fails, naming the file and what is wrong, when it is not a history, is
  // newer than this build reads, is read-only while writing was asked, or
  // stays locked past the busy timeout.
  static Expected<std::unique_ptr<History>> open(const std::string& path, OpenOptions o);
  static Expected<std::unique_ptr<History>> open(const std::string& path) {
    return open(path, OpenOptions{});
  }

  ~History();
  const std::string& path() const;
  int schema_version() const { return version_; }

  // A write transaction (BEGIN IMMEDIATE: the write lock is taken at once, so
  // two writers queue rather than deadlock).
  Status begin();
  Status commit();
  void rollback();
  // The last call failed because another connection held the lock past the
  // busy timeout.
  bool busy() const;

  // Inserts the run's row, unfinished, and returns its id.
  Expected<int64_t> begin_run(const HistoryRun& run);
  // Appends records; times are taken relative to `start`, the run's time zero.
  Status append(int64_t id, TimePoint start, std::span<const RunRequest> requests,
                std::span<const BatchRecord> batches, std::span<const DepthSample> depth);
  Status relabel(int64_t id, const std::string& label);
  // A generation run's requests; token times relative to `start`.
  Status append_generation(int64_t id, TimePoint start,
                           std::span<const HistoryGenRequest> requests);
  // Them back, token times relative to `start`, in the order kept.
  Expected<std::vector<HistoryGenRequest>> load_generation(int64_t id, TimePoint start);
  // A generation run's engine steps, times relative to `start`; and back.
  Status append_steps(int64_t id, TimePoint start, std::span<const StepRecord> steps);
  Expected<std::vector<StepRecord>> load_steps(int64_t id, TimePoint start);
  // Request bodies, and back in the order kept.
  Status append_bodies(int64_t id, std::span<const HistoryBody> bodies);
  Expected<std::vector<HistoryBody>> load_bodies(int64_t id);
  Status set_counts(int64_t id, uint64_t seen, uint64_t kept);
  // A `duration_s` of zero or more replaces the run's duration;
  // `finished_at` (UTC text) is when it ended, now where empty.
  Status finish_run(int64_t id, const std::string& summary, uint64_t seen, uint64_t kept,
                    double duration_s = -1, const std::string& finished_at = {});

  Expected<std::vector<HistoryRun>> list(const HistoryFilter& f = {});
  Expected<HistoryRun> get(int64_t id);
  // The models the kept runs ran, sorted.
  Expected<std::vector<std::string>> models();
  // The run's records as a RunData (config from its row): requests in
  // intended order and indexed 0, 1, 2, ..., batches by cut time, depth by
  // time, as RunRecorder::finish() orders a recording.
  Expected<RunData> load(int64_t id);
  // Removes a run and its records; an unknown id is an error naming it.
  Status remove(int64_t id);
  // The same inside the caller's transaction; an unknown id is no error.
  Status remove_in_transaction(int64_t id);

 private:
  History();
  Status migrate();
  Status prepare();

  std::unique_ptr<sqlite::Db> db_owner_;
  sqlite::Db& db_;
  int version_ = 0;
  std::unique_ptr<sqlite::Stmt> insert_request_, insert_batch_, insert_depth_;
};

// The summary of a run cut short (unfinished, so it has none kept), made
// from the records it kept, as bench would have made it (about 40 windows).
// Other runs' kept summary is returned as it is.
Expected<std::string> summary_of(History& h, const HistoryRun& run);

// Reads an options object written by options_to_json() over `base`; fields it
// does not know are left as they are.
Options options_from_history_json(const std::string& json, Options base = {});

}  // namespace batchscope

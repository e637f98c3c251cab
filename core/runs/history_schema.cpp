// SPDX-License-Identifier: GPL-3.0-or-later
// The history file's schema, version by version. A file is brought from the
// version it has to kHistorySchemaVersion one step at a time, each step in
// one transaction, so a migration cut short leaves the file at a version it
// had. Never change a step that has shipped: add the next one.
#include <string>

#include "runs/history.h"
#include "runs/sqlite_db.h"

namespace batchscope {
namespace {

// Version 1: runs, and their requests, batches and depth samples.
constexpr const char* kVersion1 = R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  label TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  traffic TEXT NOT NULL DEFAULT '',
  target TEXT NOT NULL DEFAULT '',
  duration_s REAL NOT NULL DEFAULT 0,
  seed INTEGER NOT NULL DEFAULT 0,
  options TEXT NOT NULL DEFAULT '{}',
  context TEXT NOT NULL DEFAULT '{}',
  summary TEXT NOT NULL DEFAULT '{}');
CREATE TABLE requests(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  intended_ns INTEGER, sent_ns INTEGER, done_ns INTEGER,
  outcome INTEGER NOT NULL, http_status INTEGER NOT NULL,
  batch_id INTEGER NOT NULL, batch_size INTEGER NOT NULL);
CREATE INDEX requests_run ON requests(run_id);
CREATE TABLE batches(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  id INTEGER NOT NULL, size INTEGER NOT NULL, reason INTEGER NOT NULL,
  lane INTEGER NOT NULL, failed INTEGER NOT NULL, depth_after INTEGER NOT NULL,
  oldest_ns INTEGER, batched_ns INTEGER, run_start_ns INTEGER, run_end_ns INTEGER);
CREATE INDEX batches_run ON batches(run_id);
CREATE TABLE depth(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_ns INTEGER, depth INTEGER NOT NULL, peak INTEGER NOT NULL);
CREATE INDEX depth_run ON depth(run_id);
)sql";

// Version 2: a run says how many requests it recorded and how many rows it
// kept (--history-requests caps them), a run may belong to another (a tune's
// live confirmations to the tune) and goes with it, runs are found by start
// time, and a generation run keeps its requests' token timings and its
// engine's steps. Version 1 kept every request, so both counts are its rows.
constexpr const char* kVersion2 = R"sql(
ALTER TABLE runs ADD COLUMN parent_id INTEGER REFERENCES runs(id) ON DELETE CASCADE;
ALTER TABLE runs ADD COLUMN requests_seen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN requests_kept INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET requests_kept = (SELECT count(*) FROM requests WHERE run_id = runs.id);
UPDATE runs SET requests_seen = requests_kept;
CREATE INDEX runs_started ON runs(started_at);
CREATE INDEX runs_parent ON runs(parent_id);
CREATE TABLE gen_requests(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL, intended_ns INTEGER NOT NULL,
  first_ns INTEGER, last_ns INTEGER, finished_ns INTEGER,
  prompt_tokens INTEGER NOT NULL, max_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
  done INTEGER NOT NULL, ok INTEGER NOT NULL, outcome TEXT NOT NULL,
  gaps BLOB);
CREATE INDEX gen_requests_run ON gen_requests(run_id);
CREATE TABLE gen_steps(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL, start_ns INTEGER, end_ns INTEGER,
  decodes INTEGER NOT NULL, prefill_tokens INTEGER NOT NULL, prefills INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL, running INTEGER NOT NULL, waiting INTEGER NOT NULL,
  blocks_used INTEGER NOT NULL, blocks_total INTEGER NOT NULL, preempted INTEGER NOT NULL,
  finished INTEGER NOT NULL, seqs BLOB);
CREATE INDEX gen_steps_run ON gen_steps(run_id);
)sql";

// Version 3: a generation step keeps the context its sequences read, the
// step cost's third term; steps kept before it read none.
constexpr const char* kVersion3 = R"sql(
ALTER TABLE gen_steps ADD COLUMN context_tokens INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 4: a generation step keeps the engine lane that ran it; steps
// kept before it ran on lane 0, the only one there was.
constexpr const char* kVersion4 = R"sql(
ALTER TABLE gen_steps ADD COLUMN lane INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 5: a batch keeps its longest request and the sum of their lengths
// (0 where lengths did not vary, as for every batch kept before); the
// request bodies `serve --record-bodies` keeps, with when each arrived
// since the run's start and its route; and times
// are kept to the millisecond: those kept to the second gain ".000", so that
// every time sorts as text in the order it happened.
constexpr const char* kVersion5 = R"sql(
ALTER TABLE batches ADD COLUMN longest INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN length_sum INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET started_at = substr(started_at, 1, 19) || '.000Z'
  WHERE length(started_at) = 20 AND substr(started_at, 20, 1) = 'Z';
UPDATE runs SET finished_at = substr(finished_at, 1, 19) || '.000Z'
  WHERE length(finished_at) = 20 AND substr(finished_at, 20, 1) = 'Z';
CREATE TABLE bodies(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  at_ns INTEGER NOT NULL,
  route TEXT NOT NULL,
  body BLOB NOT NULL
);
CREATE INDEX bodies_by_run ON bodies(run_id);
)sql";

constexpr const char* kSteps[] = {kVersion1, kVersion2, kVersion3, kVersion4, kVersion5};
static_assert(std::size(kSteps) == kHistorySchemaVersion);

}  // namespace

Status History::migrate() {
  auto v = db_.query_int("PRAGMA user_version");
  if (!v) return v.error();
  version_ = static_cast<int>(*v);
  if (version_ > kHistorySchemaVersion) {
    return Error{ErrorCode::kInvalidArgument,
                 "history " + db_.path() + " has schema version " + std::to_string(version_) +
                     "; this batchscope reads versions up to " +
                     std::to_string(kHistorySchemaVersion) +
                     " (a newer batchscope wrote it: use that one, or another --history file)"};
  }
  if (version_ < 0) {
    return Error{ErrorCode::kInvalidArgument, "history " + db_.path() + " has schema version " +
                                                  std::to_string(version_) +
                                                  ", which no batchscope writes"};
  }
  if (version_ == kHistorySchemaVersion) return {};
  if (db_.read_only()) {
    return Error{ErrorCode::kInvalidArgument,
                 "history " + db_.path() + " has schema version " + std::to_string(version_) +
                     " and is read-only, so it cannot be brought to version " +
                     std::to_string(kHistorySchemaVersion)};
  }
  while (version_ < kHistorySchemaVersion) {
    if (Status s = begin(); !s) return s;
    // Another process may have migrated it while this one waited for the lock.
    auto now = db_.query_int("PRAGMA user_version");
    if (!now) {
      rollback();
      return now.error();
    }
    if (*now != version_) {
      rollback();
      version_ = static_cast<int>(*now);
      continue;
    }
    const int next = version_ + 1;
    Status s = db_.exec(kSteps[version_]);
    if (s) s = db_.exec("PRAGMA user_version = " + std::to_string(next));
    if (s) s = commit();
    if (!s) {
      rollback();
      return Error{s.error().code, "cannot bring history " + db_.path() + " to schema version " +
                                       std::to_string(next) + ": " + s.message()};
    }
    version_ = next;
  }
  return {};
}

}  // namespace batchscope

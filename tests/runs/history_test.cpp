// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for History: a real SQLite file in a fresh folder each time. Round
// trips of every kind of record, the schema's versions (a v1 file kept beside
// these tests is migrated; a newer one is refused), and files that are not
// fit to write to (corrupt, read-only, locked).

#include "runs/history.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runs/run_record.h"
#include "tests/runs/history_support.h"

namespace batchscope {
namespace {

using namespace testing_history;

std::unique_ptr<History> open_ok(const std::string& path) {
  auto h = History::open(path);
  EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error().message);
  return h.ok() ? std::move(*h) : nullptr;
}

int64_t store(History& h, const RunData& run, const std::string& kind = "bench") {
  EXPECT_TRUE(h.begin());
  auto id = h.begin_run(header_of(run, kind));
  EXPECT_TRUE(id.ok());
  EXPECT_TRUE(h.append(*id, run.start, run.requests, run.batches, run.depth));
  const RunSummary s = summarize_run(run);
  EXPECT_TRUE(
      h.finish_run(*id, run_summary_json(run, s), run.requests.size(), run.requests.size()));
  EXPECT_TRUE(h.commit());
  return *id;
}

TEST(History, CreatesItsFolderAndTheCurrentSchema) {
  TempFolder dir;
  auto h = open_ok(dir.file("a/b/history.sqlite"));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->schema_version(), kHistorySchemaVersion);
  EXPECT_TRUE(std::filesystem::exists(dir.file("a/b/history.sqlite")));
  auto runs = h->list();
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST(History, ARunComesBackAsItWasRecorded) {
  TempFolder dir;
  const RunData run = sample_run(40);
  int64_t id;
  {
    auto h = open_ok(dir.file("h.sqlite"));
    id = store(*h, run);
  }
  auto h = open_ok(dir.file("h.sqlite"));  // a new connection reads what the first wrote
  auto row = h->get(id);
  ASSERT_TRUE(row.ok()) << row.error().message;
  EXPECT_EQ(row->kind, "bench");
  EXPECT_EQ(row->model, "mlp");
  EXPECT_EQ(row->label, "poisson rate=1000 -> inproc");
  EXPECT_TRUE(row->finished());
  EXPECT_EQ(row->requests_seen, 40u);
  EXPECT_EQ(row->requests_kept, 40u);
  EXPECT_EQ(row->config.options, run.config.options);
  EXPECT_EQ(row->config.seed, 42u);
  EXPECT_EQ(row->context, R"({"machine":{"cpu":"test"}})");

  auto back = h->load(id);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->requests.size(), run.requests.size());
  ASSERT_EQ(back->batches.size(), run.batches.size());
  ASSERT_EQ(back->depth.size(), run.depth.size());
  // Times come back to the nanosecond, relative to the start.
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RunRequest &a = run.requests[i], &b = back->requests[i];
    EXPECT_EQ(b.index, a.index);
    EXPECT_EQ(b.intended - back->start, a.intended - run.start);
    EXPECT_EQ(b.done - back->start, a.done - run.start);
    EXPECT_EQ(b.outcome, a.outcome);
    EXPECT_EQ(b.batch_id, a.batch_id);
  }
  EXPECT_EQ(back->batches[0].run_end, TimePoint{}) << "a stage never reached stays unreached";
  EXPECT_EQ(back->batches[1].run_end - back->start, run.batches[1].run_end - run.start);
  EXPECT_EQ(back->batches[1].reason, BatchReason::kTimeout);
  EXPECT_EQ(back->batches[1].lane, 1);
  EXPECT_EQ(back->batches[3].longest, 19u);
  EXPECT_EQ(back->batches[3].length_sum, 57u);
  EXPECT_EQ(back->depth[3].peak, run.depth[3].peak);
  // The summary made from what came back is the one made from the run.
  EXPECT_EQ(run_summary_json(*back, summarize_run(*back)), row->summary);
}

TEST(History, AGenerationRunKeepsItsTokenTimings) {
  TempFolder dir;
  auto h = open_ok(dir.file("h.sqlite"));
  std::vector<HistoryGenRequest> rows(3);
  rows[0].intended = std::chrono::milliseconds(5);
  rows[0].first = kStart + std::chrono::milliseconds(9);
  rows[0].last = kStart + std::chrono::milliseconds(30);
  rows[0].finished = rows[0].last;
  rows[0].prompt_tokens = 16;
  rows[0].max_tokens = 8;
  rows[0].output_tokens = 8;
  rows[0].done = rows[0].ok = true;
  rows[0].outcome = "length";
  rows[0].gaps = {std::chrono::microseconds(2900), std::chrono::microseconds(3100)};
  rows[1].intended = std::chrono::milliseconds(7);
  rows[1].outcome = "timed out";  // never reached a token: times stay kNever
  rows[2].intended = std::chrono::milliseconds(8);
  ASSERT_TRUE(h->begin());
  HistoryRun r;
  r.kind = "generation";
  auto id = h->begin_run(r);
  ASSERT_TRUE(h->append_generation(*id, kStart, rows));
  ASSERT_TRUE(h->commit());
  const TimePoint zero = TimePoint{} + std::chrono::hours(2);
  auto back = h->load_generation(*id, zero);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].intended, rows[0].intended);
  EXPECT_EQ((*back)[0].first - zero, rows[0].first - kStart);
  EXPECT_EQ((*back)[0].gaps, rows[0].gaps);
  EXPECT_EQ((*back)[0].outcome, "length");
  EXPECT_TRUE((*back)[0].ok);
  EXPECT_EQ((*back)[1].first, kNever);
  EXPECT_EQ((*back)[1].outcome, "timed out");
  EXPECT_TRUE((*back)[2].gaps.empty());

  // Its engine's steps, with their sequences.
  StepRecord step;
  step.step = 41;
  step.start = kStart + std::chrono::milliseconds(10);
  step.end = step.start + std::chrono::microseconds(2300);
  step.decodes = 2;
  step.prefills = 1;
  step.prefill_tokens = 16;
  step.blocks_used = 7;
  step.blocks_total = 64;
  step.context_tokens = 310;
  step.lane = 2;
  step.seqs = {{5, 0}, {6, 0}, {9, 16}};
  ASSERT_TRUE(h->begin());
  ASSERT_TRUE(h->append_steps(*id, kStart, std::vector<StepRecord>{step, StepRecord{}}));
  ASSERT_TRUE(h->commit());
  auto steps = h->load_steps(*id, zero);
  ASSERT_TRUE(steps.ok()) << steps.error().message;
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[0].step, 41u);
  EXPECT_EQ((*steps)[0].end - (*steps)[0].start, std::chrono::microseconds(2300));
  EXPECT_EQ((*steps)[0].start - zero, step.start - kStart);
  EXPECT_EQ((*steps)[0].seqs, step.seqs);
  EXPECT_EQ((*steps)[0].blocks_total, 64u);
  EXPECT_EQ((*steps)[0].context_tokens, 310u);
  EXPECT_EQ((*steps)[0].lane, 2u);
  EXPECT_EQ((*steps)[1].start, TimePoint{}) << "a step never timed stays so";
}

TEST(History, ListsNewestFirstAndFilters) {
  TempFolder dir;
  auto h = open_ok(dir.file("h.sqlite"));
  RunData a = sample_run(8), b = sample_run(8), c = sample_run(8);
  b.config.model = "resnet";
  c.config.pattern = "burst rate=50";
  const int64_t ia = store(*h, a), ib = store(*h, b, "tune"), ic = store(*h, c, "recorded");
  auto all = h->list();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, ic);
  EXPECT_EQ((*all)[2].id, ia);
  auto by_model = h->list({.model = "resnet"});
  ASSERT_EQ(by_model->size(), 1u);
  EXPECT_EQ((*by_model)[0].id, ib);
  auto by_kind = h->list({.kind = "recorded"});
  ASSERT_EQ(by_kind->size(), 1u);
  EXPECT_EQ((*by_kind)[0].id, ic);
  auto by_text = h->list({.text = "burst"});
  ASSERT_EQ(by_text->size(), 1u);
  EXPECT_EQ((*by_text)[0].id, ic);
  EXPECT_EQ(h->list({.since = "2999-01-01"})->size(), 0u);
  EXPECT_EQ(h->list({.since = "2000-01-01"})->size(), 3u);
}

TEST(History, AFilterIsReadAsAPersonTypesIt) {
  auto day = parse_history_filter("mlp", "tune", "2026-11-28", "burst");
  ASSERT_TRUE(day.ok()) << day.error().message;
  EXPECT_EQ(day->model, "mlp");
  EXPECT_EQ(day->kind, "tune");
  EXPECT_EQ(day->since, "2026-11-28T00:00:00Z");
  EXPECT_EQ(day->text, "burst");
  auto time = parse_history_filter("", "", "2026-11-28T19:00:00Z", "");
  ASSERT_TRUE(time.ok());
  EXPECT_EQ(time->since, "2026-11-28T19:00:00Z");
  auto kind = parse_history_filter("", "benchmark", "", "");
  ASSERT_FALSE(kind.ok());
  EXPECT_EQ(kind.error().message,
            "--kind benchmark is not one of bench, tune, recorded, generation, serve");
  for (const char* bad : {"yesterday", "2026-11-2", "2026-11-28 19:00", "2026-1x-28"}) {
    auto since = parse_history_filter("", "", bad, "");
    ASSERT_FALSE(since.ok()) << bad;
    EXPECT_NE(since.error().message.find(std::string("--since ") + bad + " is not a date"),
              std::string::npos);
  }
}

TEST(History, RemovesARunWithItsRecords) {
  TempFolder dir;
  auto h = open_ok(dir.file("h.sqlite"));
  const int64_t keep = store(*h, sample_run(12));
  const int64_t gone = store(*h, sample_run(12));
  ASSERT_TRUE(h->remove(gone));
  EXPECT_FALSE(h->get(gone).ok());
  EXPECT_EQ(h->load(keep)->requests.size(), 12u);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(dir.file("h.sqlite").c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "SELECT count(*) FROM requests WHERE run_id = ?", -1, &st, nullptr);
  sqlite3_bind_int64(st, 1, gone);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(st, 0), 0) << "its requests went with it";
  sqlite3_finalize(st);
  sqlite3_close(raw);

  Status again = h->remove(gone);
  ASSERT_FALSE(again);
  EXPECT_NE(again.message().find("no run " + std::to_string(gone)), std::string::npos)
      << again.message();
}

TEST(History, MigratesTheVersionOneFileKeptWithTheTests) {
  TempFolder dir;
  const std::string path = dir.file("v1.sqlite");
  std::filesystem::copy_file(BATCHSCOPE_TEST_DATA "/history_v1.sqlite", path);
  auto h = open_ok(path);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->schema_version(), 5);
  auto runs = h->list();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 2u);
  // Times kept to the second gain their milliseconds; batches kept before
  // lengths varied say so.
  for (const HistoryRun& r : *runs) {
    EXPECT_EQ(r.started_at.size(), 24u) << r.started_at;
    EXPECT_EQ(r.started_at.substr(19), ".000Z") << r.started_at;
    if (r.finished()) EXPECT_EQ(r.finished_at.substr(19), ".000Z") << r.finished_at;
    const auto data = h->load(r.id);  // held: a loop over a temporary's member would dangle
    ASSERT_TRUE(data.ok());
    for (const BatchRecord& b : data->batches) EXPECT_EQ(b.longest, 0u);
  }
  // Version 1 kept every request, so both counts are its rows.
  for (const HistoryRun& r : *runs) {
    const size_t rows = h->load(r.id)->requests.size();
    EXPECT_GT(rows, 0u);
    EXPECT_EQ(r.requests_seen, rows);
    EXPECT_EQ(r.requests_kept, rows);
  }
  EXPECT_EQ((*runs)[1].model, "mlp");
  EXPECT_FALSE((*runs)[0].finished()) << "the v1 file holds one unfinished run";
  // The migrated file takes new runs.
  store(*h, sample_run(8));
  EXPECT_EQ(h->list()->size(), 3u);
}

// Times to the millisecond, read back either way they were kept.
TEST(History, TimesAreKeptToTheMillisecond) {
  using namespace std::chrono;
  const system_clock::time_point t = sys_days{2026y / 11 / 28} + 19h + 40min + 5s + 123ms;
  EXPECT_EQ(utc_text(t), "2026-11-28T19:40:05.123Z");
  EXPECT_EQ(utc_text(t + 877ms + 400us), "2026-11-28T19:40:06.000Z");
  EXPECT_EQ(utc_now().size(), 24u);
  EXPECT_EQ(seconds_between("2026-11-28T19:40:05.123Z", "2026-11-28T19:40:07.373Z"), 2.25);
  EXPECT_EQ(seconds_between("2026-11-28T23:59:59Z", "2026-11-29T00:00:01.500Z"), 2.5);
  EXPECT_FALSE(seconds_between("yesterday", "2026-11-29T00:00:01Z").has_value());
  EXPECT_FALSE(seconds_between("2026-11-29T00:00:01", "2026-11-29T00:00:01Z").has_value());
  // The steady clock's now is the wall clock's now.
  const auto gap = wall_time_of(TimePoint(steady_clock::now())) - system_clock::now();
  EXPECT_LT(std::chrono::abs(gap), 1s);
}

TEST(History, RefusesANewerSchemaByName) {
  TempFolder dir;
  const std::string path = dir.file("new.sqlite");
  { open_ok(path); }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version = 9", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  auto h = History::open(path);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("schema version 9"), std::string::npos) << h.error().message;
  EXPECT_NE(h.error().message.find("newer batchscope"), std::string::npos) << h.error().message;
}

TEST(History, RefusesAFileThatIsNotAHistory) {
  TempFolder dir;
  const std::string path = dir.file("corrupt.sqlite");
  std::ofstream(path) << "this is a bench --json file, not a database\n" << std::string(5000, 'x');
  auto h = History::open(path);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("is not a Batchscope history"), std::string::npos)
      << h.error().message;
  EXPECT_NE(h.error().message.find(path), std::string::npos);
}

// Root writes any file, so as root the checks run in a child that has become
// nobody; the folder lets nobody make SQLite's shared-memory file beside it.
TEST(History, RefusesToWriteAReadOnlyFileButReadsIt) {
  TempFolder dir;
  const std::string path = dir.file("ro.sqlite");
  {
    auto h = open_ok(path);
    store(*h, sample_run(8));
  }
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);
  ASSERT_EQ(chmod(std::filesystem::path(path).parent_path().c_str(), 0777), 0);
  auto check = [&]() -> int {
    auto w = History::open(path);
    if (w.ok()) return 1;
    if (w.error().message.find("is read-only") == std::string::npos) return 2;
    auto r = History::open(path, {.read_only = true});
    if (!r.ok()) return 3;
    auto runs = (*r)->list();
    if (!runs.ok() || runs->size() != 1) return 4;
    return 0;
  };
  if (geteuid() != 0) {
    EXPECT_EQ(check(), 0);
    return;
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(9);
    _exit(check());
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: opened for writing; 2: wrong message; 3: could not "
                                       "read; 4: wrong runs; 9: could not become nobody";
}

TEST(History, SaysWhenAnotherProcessHoldsTheFileLocked) {
  TempFolder dir;
  const std::string path = dir.file("locked.sqlite");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  // A rollback-journal file under an exclusive lock: nobody else may read it.
  ASSERT_EQ(sqlite3_exec(raw, "BEGIN EXCLUSIVE; CREATE TABLE t(a);", nullptr, nullptr, nullptr),
            SQLITE_OK);
  auto h = History::open(path, {.busy_timeout_ms = 20});
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("locked"), std::string::npos) << h.error().message;
  sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  EXPECT_TRUE(History::open(path).ok()) << "once the lock is gone the file opens";
}

TEST(History, ReadsOptionsBackAndIgnoresWhatItDoesNotKnow) {
  Options o;
  o.max_batch_size = 16;
  o.scheduling = Scheduling::kStatic;
  o.strategy = StrategyKind::kAdaptive;
  EXPECT_EQ(options_from_history_json(options_to_json(o)), o);
  const Options back = options_from_history_json(
      R"({"max_batch_size": 1e30, "strategy": "nonsense", "colour": "red", "max_wait_us": 7})");
  EXPECT_EQ(back.max_batch_size, Options{}.max_batch_size) << "out of range is not taken";
  EXPECT_EQ(back.strategy, Options{}.strategy);
  EXPECT_EQ(back.max_wait_us, 7);
  EXPECT_EQ(options_from_history_json("not json"), Options{});
}

TEST(History, DefaultPathFollowsTheEnvironment) {
  const char* old_h = std::getenv("BATCHSCOPE_HISTORY");
  const char* old_x = std::getenv("XDG_DATA_HOME");
  const std::string keep_h = old_h ? old_h : "", keep_x = old_x ? old_x : "";
  unsetenv("BATCHSCOPE_HISTORY");
  setenv("XDG_DATA_HOME", "/data/x", 1);
  EXPECT_EQ(default_history_path(), "/data/x/batchscope/history.sqlite");
  setenv("BATCHSCOPE_HISTORY", "/elsewhere/h.sqlite", 1);
  EXPECT_EQ(default_history_path(), "/elsewhere/h.sqlite");
  old_h ? setenv("BATCHSCOPE_HISTORY", keep_h.c_str(), 1) : unsetenv("BATCHSCOPE_HISTORY");
  old_x ? setenv("XDG_DATA_HOME", keep_x.c_str(), 1) : unsetenv("XDG_DATA_HOME");
}

}  // namespace
}  // namespace batchscope

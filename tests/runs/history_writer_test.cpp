// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for HistoryWriter on a real SQLite file: runs written from its thread
// come back whole; the request cap cuts and says so; a process killed with
// SIGKILL mid-recording leaves an unfinished run with what it had handed
// over; two processes writing one file lose no run; a write that fails (the
// file may grow no further) stops the history and nothing else.

#include "runs/history_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "tests/runs/history_support.h"

namespace batchscope {
namespace {

using namespace testing_history;

std::unique_ptr<History> open_or_die(const std::string& path, int busy_ms = 5000) {
  auto h = History::open(path, {.busy_timeout_ms = busy_ms});
  if (!h.ok()) {
    std::fprintf(stderr, "%s\n", h.error().message.c_str());
    std::abort();
  }
  return std::move(*h);
}

// Records `run` through the writer in slices of `slice` requests.
HistoryWriter::Token record(HistoryWriter& w, const RunData& run, size_t slice,
                            const std::string& kind = "recorded") {
  const auto t = w.begin(header_of(run, kind), run.start);
  for (size_t i = 0; i < run.requests.size(); i += slice) {
    const size_t end = std::min(run.requests.size(), i + slice);
    w.append(t, {run.requests.begin() + i, run.requests.begin() + end});
  }
  w.append(t, {}, run.batches, run.depth);
  return t;
}

TEST(HistoryWriter, WritesARunFromItsThreadAndSaysItsId) {
  TempFolder dir;
  const RunData run = sample_run(100);
  HistoryWriter w(open_or_die(dir.file("h.sqlite")));
  const auto t = record(w, run, 7);
  w.finish(t, "{\"ok\":99}");
  w.flush();
  ASSERT_FALSE(w.failure()) << *w.failure();
  ASSERT_TRUE(w.id_of(t).has_value());

  auto h = open_or_die(dir.file("h.sqlite"));
  auto row = h->get(*w.id_of(t));
  ASSERT_TRUE(row.ok());
  EXPECT_TRUE(row->finished());
  EXPECT_EQ(row->kind, "recorded");
  EXPECT_EQ(row->summary, "{\"ok\":99}");
  EXPECT_EQ(row->requests_seen, 100u);
  EXPECT_EQ(row->requests_kept, 100u);
  auto back = h->load(row->id);
  ASSERT_EQ(back->requests.size(), 100u);
  EXPECT_EQ(back->requests[57].done - back->start, run.requests[57].done - run.start);
  EXPECT_EQ(back->batches.size(), run.batches.size());
}

// A run is kept as starting when its traffic started (on the steady clock,
// read on the wall clock to the millisecond) and ending its duration later;
// without a duration, when it was finished.
TEST(HistoryWriter, ARunStartsWhenItsTrafficStartedAndEndsItsDurationLater) {
  TempFolder dir;
  HistoryWriter w(open_or_die(dir.file("h.sqlite")));
  RunData run = sample_run(20);
  run.start = TimePoint(std::chrono::steady_clock::now()) - std::chrono::seconds(2);
  const std::string before = utc_text(std::chrono::system_clock::now() - std::chrono::seconds(2));
  const auto timed = w.begin(header_of(run, "bench"), run.start);
  w.finish(timed, "{}", 2.0);
  const auto untimed = w.begin(header_of(run, "bench"), run.start);
  w.finish(untimed, "{}");
  w.flush();
  ASSERT_FALSE(w.failure()) << *w.failure();
  auto h = open_or_die(dir.file("h.sqlite"));
  const HistoryRun a = *h->get(*w.id_of(timed));
  EXPECT_EQ(a.started_at.size(), 24u) << a.started_at;
  // Within a second of two seconds ago (the test's own two readings).
  EXPECT_LT(std::abs(*seconds_between(before, a.started_at)), 1.0) << before << " " << a.started_at;
  EXPECT_NEAR(*seconds_between(a.started_at, a.finished_at), 2.0, 0.0015);
  const HistoryRun b = *h->get(*w.id_of(untimed));
  EXPECT_LT(std::abs(*seconds_between(a.started_at, b.started_at)), 0.002);
  EXPECT_GE(*seconds_between(b.started_at, b.finished_at), 1.9);  // finished now
}

TEST(HistoryWriter, ARunBelongsToItsParentAndGoesWithIt) {
  TempFolder dir;
  HistoryWriter w(open_or_die(dir.file("h.sqlite")));
  const RunData run = sample_run(20);
  const auto parent = w.begin(header_of(run, "tune"), run.start);
  w.finish(parent, "{}");
  const auto child = record(w, run, 10, "tune");
  const auto other = w.begin(header_of(run, "tune"), run.start, parent);
  w.finish(other, "{}");
  w.finish(child, "{}");
  w.flush();
  auto h = open_or_die(dir.file("h.sqlite"));
  EXPECT_EQ(h->get(*w.id_of(other))->parent_id, *w.id_of(parent));
  EXPECT_EQ(h->get(*w.id_of(child))->parent_id, 0);
  HistoryFilter f;
  f.parent = *w.id_of(parent);
  EXPECT_EQ(h->list(f)->size(), 1u);
  ASSERT_TRUE(h->remove(*w.id_of(parent)));
  EXPECT_FALSE(h->get(*w.id_of(other)).ok()) << "removed with its parent";
  EXPECT_TRUE(h->get(*w.id_of(child)).ok());
}

// The window renames and removes a run it recorded a moment ago without
// waiting for the writer: by the run's token, which the writer turns into
// its id in turn. Runs it never began are left alone.
TEST(HistoryWriter, RelabelsAndRemovesARunByItsTokenWithoutWaiting) {
  TempFolder dir;
  HistoryWriter w(open_or_die(dir.file("h.sqlite")));
  const RunData run = sample_run(20);
  const auto kept = record(w, run, 10);
  w.finish(kept, "{}");
  const auto gone = record(w, run, 10);
  w.finish(gone, "{}");
  w.relabel_run(kept, "renamed");
  w.remove_run(gone);
  w.remove_run(9999);  // never begun
  w.flush();
  ASSERT_FALSE(w.failure()) << *w.failure();
  auto h = open_or_die(dir.file("h.sqlite"));
  EXPECT_EQ(h->get(*w.id_of(kept))->label, "renamed");
  EXPECT_FALSE(h->get(*w.id_of(gone)).ok()) << "removed by its token";
  EXPECT_EQ(h->list()->size(), 1u);
}

// Request bodies (serve --record-bodies) come back in the order kept, byte
// for byte, up to the cap a run, and go with their run.
TEST(HistoryWriter, KeepsRequestBodiesUpToTheCapAndRemovesThemWithTheRun) {
  TempFolder dir;
  HistoryWriter w(open_or_die(dir.file("h.sqlite")), 3);
  const RunData run = sample_run(4);
  const auto t = w.begin(header_of(run, "serve"), run.start);
  std::string binary("a\0b\xff", 4);
  w.append_bodies(t, {{std::chrono::milliseconds(2), "/infer", "{\"data\": [1]}"},
                      {std::chrono::milliseconds(5), "/v1/completions", binary}});
  w.append_bodies(t, {{std::chrono::milliseconds(7), "/infer", "x"},
                      {std::chrono::milliseconds(9), "/infer", "over the cap"}});
  w.finish(t, "{}");
  w.flush();
  ASSERT_FALSE(w.failure()) << *w.failure();
  auto h = open_or_die(dir.file("h.sqlite"));
  auto bodies = h->load_bodies(*w.id_of(t));
  ASSERT_TRUE(bodies.ok());
  ASSERT_EQ(bodies->size(), 3u);
  EXPECT_EQ((*bodies)[0].at, std::chrono::milliseconds(2));
  EXPECT_EQ((*bodies)[0].body, "{\"data\": [1]}");
  EXPECT_EQ((*bodies)[1].route, "/v1/completions");
  EXPECT_EQ((*bodies)[1].body, binary);
  ASSERT_TRUE(h->remove(*w.id_of(t)));
  EXPECT_TRUE(h->load_bodies(*w.id_of(t))->empty());
}

TEST(HistoryWriter, KeepsRequestsUpToItsCapAndCountsTheRest) {
  TempFolder dir;
  HistoryWriter w(open_or_die(dir.file("h.sqlite")), /*request_cap=*/30);
  const auto t = record(w, sample_run(100), 8);
  w.finish(t, "{}");
  const auto t2 = record(w, sample_run(20), 8);  // the cap is a run's, not the file's
  w.finish(t2, "{}");
  w.flush();
  auto h = open_or_die(dir.file("h.sqlite"));
  auto row = h->get(*w.id_of(t));
  EXPECT_EQ(row->requests_seen, 100u);
  EXPECT_EQ(row->requests_kept, 30u);
  EXPECT_EQ(h->load(row->id)->requests.size(), 30u);
  EXPECT_EQ(h->get(*w.id_of(t2))->requests_kept, 20u);
}

// The child records slices and, once the parent has seen `handed` of them
// committed, is killed mid-run, with more still coming.
TEST(HistoryWriter, AKilledRecordingLeavesAnUnfinishedRunWithWhatItHandedOver) {
  TempFolder dir;
  const std::string path = dir.file("h.sqlite");
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipefd[0]);
    HistoryWriter w(open_or_die(path));
    const RunData run = sample_run(50);
    const auto t = w.begin(header_of(run, "recorded"), run.start);
    for (int slice = 0;; ++slice) {
      w.append(t, run.requests);
      w.flush();
      const char one = 1;
      if (write(pipefd[1], &one, 1) != 1) _exit(3);
    }
  }
  close(pipefd[1]);
  char c;
  int seen = 0;
  while (seen < 20 && read(pipefd[0], &c, 1) == 1) ++seen;
  ASSERT_EQ(seen, 20);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  close(pipefd[0]);

  auto h = open_or_die(path);
  auto runs = h->list();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 1u);
  const HistoryRun& r = (*runs)[0];
  EXPECT_FALSE(r.finished()) << "a run cut short is marked unfinished";
  EXPECT_GE(r.requests_kept, 20u * 50u) << "every slice it saw committed is there";
  EXPECT_EQ(r.requests_kept, r.requests_seen);
  EXPECT_EQ(h->load(r.id)->requests.size(), r.requests_kept) << "counts agree with the rows";
}

TEST(HistoryWriter, TwoProcessesWritingOneFileLoseNoRun) {
  TempFolder dir;
  const std::string path = dir.file("h.sqlite");
  { open_or_die(path); }  // made and migrated before both start
  constexpr int kRuns = 15;
  pid_t children[2];
  for (int k = 0; k < 2; ++k) {
    children[k] = fork();
    ASSERT_GE(children[k], 0);
    if (children[k] == 0) {
      HistoryWriter w(open_or_die(path));
      for (int i = 0; i < kRuns; ++i) {
        RunData run = sample_run(400);
        run.config.model = k == 0 ? "serve" : "gui";
        const auto t = record(w, run, 50);
        w.finish(t, "{}");
        if (i % 3 == 0) w.flush();  // some transactions small, some large
      }
      w.flush();
      _exit(w.failure() ? 1 : 0);
    }
  }
  for (pid_t c : children) {
    int status = 0;
    ASSERT_EQ(waitpid(c, &status, 0), c);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a writer gave up";
  }
  auto h = open_or_die(path);
  auto runs = h->list();
  ASSERT_EQ(runs->size(), 2u * kRuns);
  EXPECT_EQ(h->list({.model = "serve"})->size(), size_t{kRuns});
  EXPECT_EQ(h->list({.model = "gui"})->size(), size_t{kRuns});
  for (const HistoryRun& r : *runs) {
    EXPECT_TRUE(r.finished());
    EXPECT_EQ(r.requests_kept, 400u);
  }
}

// A file that may not grow (RLIMIT_FSIZE: writes past it fail as on a full
// disk) in a child: the history stops with the error, later calls return at
// once, and the child goes on to exit normally.
TEST(HistoryWriter, AFailedWriteStopsTheHistoryNotTheCaller) {
  TempFolder dir;
  const std::string path = dir.file("h.sqlite");
  { open_or_die(path); }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit lim{256 * 1024, 256 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(9);
    HistoryWriter w(open_or_die(path));
    const RunData run = sample_run(2000);
    for (int i = 0; i < 50 && !w.failure(); ++i) {
      const auto t = record(w, run, 500);
      w.finish(t, "{}");
      w.flush();
    }
    if (!w.failure()) _exit(1);
    std::fprintf(stderr, "failure: %s\n", w.failure()->c_str());
    if (w.failure()->find(path) == std::string::npos) _exit(2);
    // Off from now on: calls return, and flush does not wait.
    const auto t = record(w, run, 500);
    w.finish(t, "{}");
    w.flush();
    if (w.id_of(t)) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed, not stopped by an error";
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: never failed; 2: error without the file's name; 3: wrote after failing";
  // What was committed before the failure is intact.
  auto h = open_or_die(path);
  auto runs = h->list();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  for (const HistoryRun& r : *runs) EXPECT_EQ(h->load(r.id)->requests.size(), r.requests_kept);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The Runs panel on a real run history (SQLite file in a temporary folder),
// offscreen, fed hand-built records on a hand-moved clock: a recording is in
// the history while it goes on and finished when it stops; a new panel (a
// restart) lists what was kept, newest first, unfinished runs marked;
// filters, compare with context differences, export of a kept run, remove
// (after asking) and rename all reach the file.

#include <gtest/gtest.h>

#include <QCoreApplication>

#include <QImage>

#include <QElapsedTimer>

#include <qcustomplot.h>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QTableView>
#include <QTemporaryDir>

#include "runs/history.h"
#include "runs/history_figures.h"
#include "runs/history_writer.h"
#include "tests/ui/runs/run_records_support.h"
#include "ui/runs/runs_panel.h"

namespace batchscope {
namespace {

using std::chrono::seconds;

class RunsPanelHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.isValid());
    path_ = dir_.filePath("history.sqlite").toStdString();
    writer_ = open_writer();
    panel_ = make_panel();
  }

  std::unique_ptr<HistoryWriter> open_writer() {
    auto h = History::open(path_);
    EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error().message);
    return std::make_unique<HistoryWriter>(std::move(*h));
  }

  std::unique_ptr<RunsPanel> make_panel() {
    auto p = std::make_unique<RunsPanel>();
    p->resize(1000, 320);
    p->set_clock([this] { return now_; });
    p->set_config_provider([this] {
      RunConfig c;
      c.pattern = "poisson rate=1500";
      c.target = "inproc";
      c.model = model_;
      c.options.max_batch_size = batch_;
      return c;
    });
    p->set_context_provider([this] { return context_; });
    p->set_history(writer_.get());
    return p;
  }

  // One second of traffic a step, `steps` steps; stops unless told not to.
  int record(const QString& name, int steps, bool stop = true) {
    panel_->start_recording(name);
    for (int s = 0; s < steps; ++s) {
      panel_->add(make_records(now_ + milliseconds(1), next_id_, 200, 4));
      next_id_ += 200;
      now_ += seconds(1);
    }
    return stop ? panel_->stop_recording() : -1;
  }

  std::unique_ptr<History> reopen() {
    auto h = History::open(path_, {.read_only = true});
    EXPECT_TRUE(h.ok());
    return std::move(*h);
  }

  QTemporaryDir dir_;
  std::string path_;
  std::unique_ptr<HistoryWriter> writer_;
  std::unique_ptr<RunsPanel> panel_;
  TimePoint now_ = TimePoint(seconds(9000));
  uint64_t next_id_ = 1;
  std::string model_ = "toy";
  uint32_t batch_ = 8;
  std::string context_ = R"({"machine": {"cpu": "first"}})";
};

TEST_F(RunsPanelHistoryTest, ARecordingIsKeptAsItGoesAndFinishedWhenItStops) {
  record("live", 3, /*stop=*/false);
  writer_->flush();
  {
    auto runs = reopen()->list();
    ASSERT_EQ(runs->size(), 1u);
    const HistoryRun& r = (*runs)[0];
    EXPECT_EQ(r.kind, "recorded");
    EXPECT_EQ(r.label, "live");
    EXPECT_FALSE(r.finished()) << "still recording";
    EXPECT_EQ(r.requests_kept, 3u * 200u * 4u) << "every record handed over is there";
    EXPECT_EQ(r.context, context_);
  }
  const int row = panel_->stop_recording();
  ASSERT_EQ(row, 0);
  writer_->flush();
  auto h = reopen();
  const HistoryRun r = (*h->list())[0];
  EXPECT_TRUE(r.finished());
  // What the file gives back is the run the panel holds.
  auto back = h->load(r.id);
  ASSERT_TRUE(back.ok());
  const RunData& here = *panel_->run(0).data;
  ASSERT_EQ(back->requests.size(), here.requests.size());
  for (size_t i = 0; i < here.requests.size(); i += 97) {
    EXPECT_EQ(back->requests[i].done - back->start, here.requests[i].done - here.start);
  }
  // The engine's stage times are kept in the run's summary, not per request:
  // the rest of the summary comes back whole.
  RunData here_without_stages = here;
  here_without_stages.stages = RunStages{};
  // So is what else the machine was doing over it.
  EXPECT_TRUE(here.others.has_value());
  here_without_stages.others.reset();
  EXPECT_EQ(run_summary_json(*back, summarize_run(*back, std::chrono::milliseconds(100))),
            run_summary_json(here_without_stages,
                             summarize_run(here_without_stages, std::chrono::milliseconds(100))));
  ASSERT_FALSE(here.stages.empty());
  const RunSummary kept = summary_from_json(r.summary);
  ASSERT_EQ(kept.stages.size(), stage_figures(here.stages).size()) << r.summary;
  EXPECT_EQ(kept.stages[0].count, here.stages.of(kept.stages[0].stage).count());
}

// A generation run the program could not finish kept its requests but no
// summary: the panel shows the figures of what it kept, as `runs show` does.
TEST_F(RunsPanelHistoryTest, AGenerationRunCutShortShowsTheFiguresOfWhatItKept) {
  HistoryRun h;
  h.kind = "generation";
  h.label = "lm, cut short";
  h.model = "tiny_lm";
  h.config.pattern = "poisson rate=4/s";
  h.config.target = "inproc";
  h.config.model = "tiny_lm";
  h.config.duration_s = 60;  // meant to last a minute; it ended after 2.45 s
  h.context = context_;
  const auto token = writer_->begin(std::move(h), now_);
  std::vector<HistoryGenRequest> rows;
  for (int i = 0; i < 10; ++i) {
    HistoryGenRequest q;
    q.intended = milliseconds(250 * i);
    q.first = now_ + milliseconds(250 * i + 20);
    q.finished = now_ + milliseconds(250 * i + 200);
    q.last = q.finished;
    q.prompt_tokens = 16;
    q.max_tokens = 8;
    q.output_tokens = 8;
    q.done = true;
    q.ok = i != 3;
    q.outcome = q.ok ? "length" : "the runner failed";
    q.gaps.assign(7, milliseconds(25));
    rows.push_back(std::move(q));
  }
  writer_->append_generation(token, std::move(rows), {});
  writer_->flush();
  panel_.reset();
  writer_.reset();

  writer_ = open_writer();
  panel_ = make_panel();
  ASSERT_EQ(panel_->run_count(), 1);
  const RecordedRun& r = panel_->run(0);
  EXPECT_FALSE(r.finished);
  EXPECT_EQ(panel_->model()->data(panel_->model()->index(0, RunListModel::kKind)).toString(),
            "generation · unfinished");
  EXPECT_EQ(r.summary.sent, 10u);
  EXPECT_EQ(r.summary.ok, 9u);
  EXPECT_NEAR(r.summary.duration_s, 2.45, 1e-6) << "until its last answer";
  EXPECT_NEAR(r.config.duration_s, 2.45, 1e-6);
}

TEST_F(RunsPanelHistoryTest, ARestartListsTheKeptRunsNewestFirstWithTheCutShortMarked) {
  record("morning", 2);
  model_ = "resnet";
  batch_ = 32;
  context_ = R"({"machine": {"cpu": "second"}})";
  record("afternoon", 2);
  record("cut short", 1, /*stop=*/false);  // the program dies while it records
  writer_->flush();
  panel_.reset();
  writer_.reset();

  writer_ = open_writer();
  panel_ = make_panel();
  ASSERT_EQ(panel_->run_count(), 3);
  EXPECT_EQ(panel_->run(0).name, "cut short");
  EXPECT_FALSE(panel_->run(0).finished);
  EXPECT_EQ(panel_->model()->data(panel_->model()->index(0, RunListModel::kKind)).toString(),
            "recorded · unfinished");
  EXPECT_EQ(panel_->run(0).summary.sent, 200u * 4u) << "its figures come from what it kept";
  EXPECT_GT(panel_->run(0).config.duration_s, 0.9);
  EXPECT_EQ(panel_->run(1).name, "afternoon");
  EXPECT_EQ(panel_->run(2).name, "morning");
  EXPECT_FALSE(panel_->run(2).data) << "records are read only when needed";
  EXPECT_EQ(panel_->run(2).summary.sent, 2u * 200u * 4u) << "the figures come from the summary";
  EXPECT_FALSE(panel_->run(2).summary.windows.empty());

  // Two kept runs compare from their summaries, and say where they differ.
  ASSERT_TRUE(panel_->compare(1, 2));
  EXPECT_GT(panel_->compare_plot()->graphCount(), 0);
  const QString status = panel_->export_status();  // the panel's status line
  EXPECT_TRUE(status.contains("machine.cpu (second | first)")) << status.toStdString();
  EXPECT_TRUE(status.contains("options.max_batch_size (32 | 8)")) << status.toStdString();

  // A kept run exports: its records are read then.
  QTemporaryDir out;
  ASSERT_TRUE(panel_->export_run_sync(2, out.path())) << panel_->history_status().toStdString();
  EXPECT_TRUE(panel_->run(2).data);
  EXPECT_TRUE(QFile::exists(QDir(out.path()).filePath("morning-requests.csv")));
  EXPECT_TRUE(QFile::exists(QDir(out.path()).filePath("morning.png")));
}

// A kept run exports in the background: its records are read on the
// export's thread (through a connection of its own) and kept with the run;
// the PNG is drawn by the program set for it, or here; a program that
// cannot start is named in the error.
TEST_F(RunsPanelHistoryTest, AKeptRunExportsInTheBackgroundReadingItsRecordsOffThisThread) {
  record("kept", 2);
  writer_->flush();
  panel_.reset();
  panel_ = make_panel();
  ASSERT_EQ(panel_->run_count(), 1);
  ASSERT_FALSE(panel_->run(0).data);
  auto wait = [&] {
    QElapsedTimer waited;
    waited.start();
    while (panel_->exporting() && waited.elapsed() < 60000) {
      QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    }
    return !panel_->exporting();
  };
  QTemporaryDir out;
  panel_->set_png_program("/nonexistent/batchscope");
  ASSERT_TRUE(panel_->export_run(0, out.path()));
  ASSERT_TRUE(wait());
  EXPECT_TRUE(panel_->export_status().contains("cannot start /nonexistent/batchscope"))
      << panel_->export_status().toStdString();
  EXPECT_TRUE(panel_->run(0).data) << "the records read for the export are kept";
  EXPECT_EQ(panel_->run(0).data->requests.size(), 2u * 200u * 4u);
  EXPECT_TRUE(QFile::exists(QDir(out.path()).filePath("kept-requests.csv")));

  panel_->set_png_program("");
  ASSERT_TRUE(panel_->export_run(0, out.path()));
  ASSERT_TRUE(wait());
  EXPECT_TRUE(panel_->export_status().startsWith("Exported"))
      << panel_->export_status().toStdString();
  EXPECT_EQ(QImage(QDir(out.path()).filePath("kept.png")).width(), 1400);
}

TEST_F(RunsPanelHistoryTest, FiltersNarrowTheList) {
  record("a", 1);
  model_ = "resnet";
  record("b", 1);
  record("c", 1);
  panel_->set_filter("resnet", "", "");
  EXPECT_EQ(panel_->run_count(), 2);
  panel_->set_filter("", "", "a");
  ASSERT_EQ(panel_->run_count(), 1);
  EXPECT_EQ(panel_->run(0).name, "a");
  panel_->set_filter("", "bench", "");
  EXPECT_EQ(panel_->run_count(), 0);
  panel_->set_filter("", "", "");
  EXPECT_EQ(panel_->run_count(), 3);
}

TEST_F(RunsPanelHistoryTest, RemovingAsksFirstAndRemovesFromTheHistory) {
  record("keep", 1);
  record("drop", 1);
  QString asked;
  bool answer = false;
  panel_->set_confirm([&](const QString& q) {
    asked = q;
    return answer;
  });
  panel_->table()->selectRow(0);  // "drop", newest first
  panel_->remove_selected();
  EXPECT_TRUE(asked.contains("Remove the run \"drop\"?")) << asked.toStdString();
  EXPECT_TRUE(asked.contains(QString::fromStdString(path_))) << "says it leaves the history";
  EXPECT_EQ(panel_->run_count(), 2) << "a no keeps the run";
  answer = true;
  panel_->table()->selectRow(0);
  panel_->remove_selected();
  ASSERT_EQ(panel_->run_count(), 1);
  writer_->flush();
  auto runs = reopen()->list();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].label, "keep");
}

TEST_F(RunsPanelHistoryTest, ARenameIsTheKeptRunsLabel) {
  record("first name", 1);
  ASSERT_TRUE(panel_->rename(0, "after retune"));
  writer_->flush();
  EXPECT_EQ((*reopen()->list())[0].label, "after retune");
}

TEST_F(RunsPanelHistoryTest, AnUnreadableHistoryIsSaidAndThePanelStillRecords) {
  panel_.reset();
  writer_.reset();
  QFile(QString::fromStdString(path_)).remove();
  {
    QFile f(QString::fromStdString(path_));
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(8192, 'x'));
  }
  EXPECT_FALSE(History::open(path_).ok()) << "the app opens no writer on such a file";
  panel_ = make_panel();  // with no writer: the history is off
  EXPECT_FALSE(panel_->history_on());
  panel_->show_history_problem(QString::fromStdString(History::open(path_).error().message));
  EXPECT_TRUE(panel_->export_status().contains("is not a Batchscope history"))
      << panel_->export_status().toStdString();
  record("here only", 1);
  EXPECT_EQ(panel_->run_count(), 1);
}

}  // namespace
}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The runs panel, offscreen, fed hand-built engine records on a hand-moved
// clock: a recording keeps what falls in its span, runs can be renamed,
// compared and exported (synchronously and in the background), and the run
// list model stays consistent (QAbstractItemModelTester).

#include "ui/runs/runs_panel.h"

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <atomic>
#include <memory>
#include <thread>

#include "batching/engine.h"
#include "batching/monitor.h"
#include "batching/synthetic_runner.h"
#include "tests/ui/runs/run_records_support.h"

namespace batchscope {
namespace {

using std::chrono::seconds;

const TimePoint kBase = TimePoint(seconds(9000));

QStringList model_failures;
void collect_model_failures(QtMsgType, const QMessageLogContext& context, const QString& text) {
  if (QByteArray(context.category) == "qt.modeltest") model_failures << text;
}

class RunsPanelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    panel_ = std::make_unique<RunsPanel>();
    panel_->resize(1000, 320);
    panel_->set_clock([this] { return now_; });
    panel_->set_config_provider([] {
      RunConfig c;
      c.pattern = "poisson rate=1500";
      c.target = "inproc";
      c.model = "toy";
      c.options.max_batch_size = 8;
      return c;
    });
  }

  // Records a run of `seconds_long` seconds: 200 batches of `k` a second,
  // each running `run_us`; plus records from before and after its span.
  int record(const QString& name, int seconds_long, int k, int64_t run_us) {
    const TimePoint start = now_;
    panel_->add(make_records(start - seconds(1), 1, 10, k));  // not recording yet
    panel_->start_recording(name);
    panel_->add(make_records(start - milliseconds(20), next_id_, 3, k));  // arrived before
    next_id_ += 3;
    for (int s = 0; s < seconds_long; ++s) {
      panel_->add(make_records(start + seconds(s), next_id_, 200, k, run_us));
      next_id_ += 200;
    }
    now_ = start + seconds(seconds_long);
    panel_->add(make_records(now_, next_id_, 4, k));  // arrived at the end or later
    next_id_ += 4;
    const int row = panel_->stop_recording();
    now_ += seconds(10);
    return row;
  }

  TimePoint now_ = kBase;
  uint64_t next_id_ = 100;
  std::unique_ptr<RunsPanel> panel_;
};

TEST_F(RunsPanelTest, ARecordingKeepsWhatFallsInItsSpan) {
  EXPECT_EQ(panel_->stop_recording(), -1);
  EXPECT_FALSE(panel_->recording());
  const int row = record("baseline", 2, 4, 600);
  EXPECT_FALSE(panel_->recording());
  ASSERT_EQ(row, 0);
  ASSERT_EQ(panel_->run_count(), 1);
  const RecordedRun& run = panel_->run(0);
  EXPECT_EQ(run.name, "baseline");
  const RunData& data = *run.data;
  EXPECT_EQ(data.start, kBase);
  EXPECT_DOUBLE_EQ(data.config.duration_s, 2.0);
  EXPECT_EQ(data.config.pattern, "poisson rate=1500");
  EXPECT_EQ(data.config.model, "toy");
  EXPECT_EQ(data.config.options.max_batch_size, 8u);
  // 2 s of 200 batches of 4; nothing from before or after.
  ASSERT_EQ(data.requests.size(), 1600u);
  EXPECT_EQ(data.batches.size(), 400u);
  EXPECT_EQ(data.depth.size(), 400u);
  for (size_t i = 0; i < data.requests.size(); ++i) {
    ASSERT_EQ(data.requests[i].index, i);
    ASSERT_GE(data.requests[i].intended, kBase);
    ASSERT_LT(data.requests[i].intended, kBase + seconds(2));
  }
  const RunSummary& s = run.summary;
  EXPECT_EQ(s.sent, 1600u);
  EXPECT_EQ(s.ok, 1600u);
  EXPECT_DOUBLE_EQ(s.batch_mean, 4.0);
  // Waits 350, 250, 150, 50 µs plus 600 µs of running: 0.65 to 0.95 ms.
  EXPECT_NEAR(s.latency.max_ms, 0.95, 0.95 * 0.005);
  // A 2 s run gets windows of 0.1 s, as `batchscope bench` would make.
  EXPECT_EQ(s.windows.size(), 20u);

  const QAbstractItemModel* m = panel_->model();
  EXPECT_EQ(m->data(m->index(0, RunListModel::kSent)).toULongLong(), 1600u);
  EXPECT_EQ(m->data(m->index(0, RunListModel::kDuration)).toString(), "2.0");
  EXPECT_EQ(m->data(m->index(0, RunListModel::kBatchMean)).toString(), "4.0");
}

TEST_F(RunsPanelTest, RunsCanBeRenamedButNotToNothing) {
  record("first", 1, 2, 500);
  record("", 1, 2, 500);
  EXPECT_EQ(panel_->run(1).name, "run 2");  // a blank name is made up
  EXPECT_TRUE(panel_->rename(0, "  before retune "));
  EXPECT_EQ(panel_->run(0).name, "before retune");
  EXPECT_FALSE(panel_->rename(0, "   "));
  EXPECT_EQ(panel_->run(0).name, "before retune");
  EXPECT_FALSE(panel_->rename(7, "nope"));
  QAbstractItemModel* m = panel_->model();
  EXPECT_TRUE(m->flags(m->index(0, RunListModel::kName)) & Qt::ItemIsEditable);
  EXPECT_FALSE(m->flags(m->index(0, RunListModel::kP99)) & Qt::ItemIsEditable);
  EXPECT_TRUE(m->setData(m->index(1, RunListModel::kName), "after", Qt::EditRole));
  EXPECT_EQ(m->data(m->index(1, RunListModel::kName)).toString(), "after");
  EXPECT_FALSE(m->setData(m->index(1, RunListModel::kP50), "1.0", Qt::EditRole));
}

TEST_F(RunsPanelTest, CompareOverlaysTheFansOfTwoRuns) {
  record("fast", 2, 4, 400);
  record("slow", 3, 4, 2000);
  EXPECT_FALSE(panel_->compare(0, 0));
  EXPECT_FALSE(panel_->compare(0, 2));
  ASSERT_TRUE(panel_->compare(0, 1));
  QCustomPlot* plot = panel_->compare_plot();
  // Per run: the p99 edge, the p90..p99 band and the p50 line.
  ASSERT_EQ(plot->graphCount(), 6);
  QStringList names;
  for (int i = 0; i < plot->graphCount(); ++i) {
    names << plot->graph(i)->name();
    EXPECT_GT(plot->graph(i)->dataCount(), 10) << plot->graph(i)->name().toStdString();
  }
  EXPECT_TRUE(names.contains("fast p50"));
  EXPECT_TRUE(names.contains("fast p90–p99"));
  EXPECT_TRUE(names.contains("slow p50"));
  EXPECT_TRUE(names.contains("slow p90–p99"));
  EXPECT_EQ(plot->legend->itemCount(), 4);
  // The axes take in both: the slow run is 3 s long and its latency ~2.4 ms.
  EXPECT_GE(plot->xAxis->range().upper, 2.99);
  EXPECT_GE(plot->yAxis->range().upper, 2.35);

  // Removing a compared run clears the comparison.
  panel_->remove_run(1);
  EXPECT_EQ(plot->graphCount(), 0);
  EXPECT_EQ(panel_->run_count(), 1);
}

QJsonObject read_json(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &error);
  EXPECT_EQ(error.error, QJsonParseError::NoError) << error.errorString().toStdString();
  return doc.object();
}

int lines_in(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return -1;
  return static_cast<int>(f.readAll().count('\n'));
}

void expect_exported(const QString& dir, const QString& base, const RecordedRun& run) {
  const QDir d(dir);
  const QJsonObject summary = read_json(d.filePath(base + ".json"));
  EXPECT_EQ(summary["sent"].toInteger(), static_cast<qint64>(run.summary.sent));
  EXPECT_EQ(summary["ok"].toInteger(), static_cast<qint64>(run.summary.ok));
  EXPECT_EQ(summary["pattern"].toString(), "poisson rate=1500");
  EXPECT_EQ(summary["windows"].toArray().size(),
            static_cast<qsizetype>(run.summary.windows.size()));
  EXPECT_EQ(lines_in(d.filePath(base + "-requests.csv")),
            static_cast<int>(run.data->requests.size()) + 1);
  EXPECT_EQ(lines_in(d.filePath(base + "-windows.csv")),
            static_cast<int>(run.summary.windows.size()) + 1);
  const QJsonObject trace = read_json(d.filePath(base + "-trace.json"));
  EXPECT_FALSE(trace["traceEvents"].toArray().isEmpty());
  const QImage png(d.filePath(base + ".png"));
  EXPECT_FALSE(png.isNull());
  EXPECT_EQ(png.width(), 1400);
}

TEST_F(RunsPanelTest, ExportWritesTheFiveFiles) {
  record("tuned / max_wait 0.5", 1, 4, 600);
  QTemporaryDir tmp;
  ASSERT_TRUE(tmp.isValid());
  const QString dir = tmp.filePath("out");  // made on the way
  const Status s = panel_->export_run_sync(0, dir);
  ASSERT_TRUE(s.ok()) << s.message();
  // The name becomes a safe file name.
  expect_exported(dir, "tuned___max_wait_0.5", panel_->run(0));
  EXPECT_EQ(QDir(dir).entryList(QDir::Files).size(), 5);

  const Status bad = panel_->export_run_sync(0, "/proc/batchscope-no-such-dir");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("/proc/batchscope-no-such-dir"), std::string::npos) << bad.message();
  EXPECT_FALSE(panel_->export_run_sync(3, dir).ok());
}

TEST_F(RunsPanelTest, ExportInTheBackgroundReportsWhenDone) {
  record("background", 2, 8, 900);
  QTemporaryDir tmp;
  ASSERT_TRUE(tmp.isValid());
  ASSERT_TRUE(panel_->export_run(0, tmp.path()));
  EXPECT_TRUE(panel_->exporting());
  EXPECT_FALSE(panel_->export_run(0, tmp.path()));  // one at a time
  // A removal while the thread writes does not pull the run from under it.
  const RecordedRun kept = panel_->run(0);
  panel_->remove_run(0);
  QElapsedTimer waited;
  waited.start();
  while (panel_->exporting() && waited.elapsed() < 60000) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
  }
  ASSERT_FALSE(panel_->exporting()) << "the export did not finish within a minute";
  EXPECT_TRUE(panel_->export_status().startsWith("Exported"))
      << panel_->export_status().toStdString();
  expect_exported(tmp.path(), "background", kept);
}

TEST_F(RunsPanelTest, APanelClosedDuringAnExportWaitsForItsThread) {
  record("closing", 3, 8, 900);
  QTemporaryDir tmp;
  ASSERT_TRUE(tmp.isValid());
  ASSERT_TRUE(panel_->export_run(0, tmp.path()));
  panel_.reset();  // joins; what the thread posted is dropped with the panel
  QCoreApplication::processEvents();
}

TEST_F(RunsPanelTest, TheRunListModelStaysConsistent) {
  model_failures.clear();
  const QtMessageHandler previous = qInstallMessageHandler(collect_model_failures);
  {
    QAbstractItemModelTester tester(panel_->model(),
                                    QAbstractItemModelTester::FailureReportingMode::Warning);
    record("a", 1, 2, 500);
    record("b", 1, 2, 500);
    record("c", 1, 2, 500);
    panel_->rename(1, "bee");
    panel_->remove_run(0);
    panel_->remove_run(1);
    record("d", 1, 2, 500);
    panel_->remove_run(0);
    panel_->remove_run(0);
    EXPECT_EQ(panel_->run_count(), 0);
  }
  qInstallMessageHandler(previous);
  EXPECT_TRUE(model_failures.isEmpty()) << model_failures.join('\n').toStdString();
}

TEST(RunsPanelEngineTest, RecordsARealEnginesTraffic) {
  Engine engine(SyntheticRunner::factory({.fixed_us = 200, .per_item_us = 5}),
                Options{.max_batch_size = 16, .max_wait_us = 500});
  ASSERT_TRUE(engine.start().ok());
  EngineMonitor monitor;
  monitor.poll(engine);  // nothing before the run
  RunsPanel panel;       // the engine's clock and the panel's default are both steady
  panel.start_recording("live");
  constexpr int kRequests = 300;
  std::atomic<int> answered{0};
  for (int i = 0; i < kRequests; ++i) {
    Tensors in;
    in.push_back(Tensor::from_floats(std::vector<float>(4, 1.0f)));
    engine.submit(std::move(in), [&answered](TensorResponse&&) { ++answered; });
    if (i % 50 == 0) {  // a few polls while traffic flows, as the window's tick does
      monitor.poll(engine);
      panel.add(monitor.last_records());
    }
  }
  const auto give_up = std::chrono::steady_clock::now() + seconds(20);
  while (answered < kRequests && std::chrono::steady_clock::now() < give_up)
    std::this_thread::yield();
  ASSERT_EQ(answered, kRequests);
  monitor.poll(engine);
  panel.add(monitor.last_records());
  ASSERT_EQ(panel.stop_recording(), 0);
  engine.stop();

  const RecordedRun& run = panel.run(0);
  EXPECT_EQ(run.summary.sent, static_cast<uint64_t>(kRequests));
  EXPECT_EQ(run.summary.ok, static_cast<uint64_t>(kRequests));
  uint64_t in_batches = 0;
  for (const BatchRecord& b : run.data->batches) in_batches += b.size;
  EXPECT_EQ(in_batches, static_cast<uint64_t>(kRequests));
  EXPECT_GT(run.summary.latency.p50_ms, 0.0);
  EXPECT_FALSE(run.summary.windows.empty());
}

}  // namespace
}  // namespace batchscope

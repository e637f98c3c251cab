// SPDX-License-Identifier: GPL-3.0-or-later
// The batch inspector, offscreen, fed hand-built engine records: it keeps the
// newest batches up to its capacity, its table model stays consistent while
// rows come and go (QAbstractItemModelTester), and a batch picked in the
// table, by id or by a click on its bar shows its size, why it was cut and
// its requests' waits.

#include "ui/workbench/batch_inspector.h"

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QMouseEvent>
#include <QTableView>
#include <atomic>
#include <memory>
#include <thread>

#include "batching/engine.h"
#include "batching/monitor.h"
#include "batching/synthetic_runner.h"

namespace batchscope {
namespace {

using std::chrono::seconds;

const TimePoint kInspectorBase = TimePoint(seconds(7000));

// `n` batches of `k` requests, ids from `first_id`, one every `gap` on lanes
// taken in turn. Batch i's requests arrive 100 µs apart; it is cut 50 µs
// after the last, starts 5 µs later and runs 500 + 20·k µs. So its requests
// waited 50, 150, ..., 100·(k-1) + 50 µs, and it formed in 100·(k-1) + 50 µs.
// Every third batch is cut on max_wait, the others full.
RecordBatch make_records(uint64_t first_id, int n, int k, int lanes = 1,
                         Duration gap = milliseconds(2)) {
  RecordBatch out;
  for (int i = 0; i < n; ++i) {
    const uint64_t id = first_id + static_cast<uint64_t>(i);
    BatchRecord b;
    b.id = id;
    b.size = static_cast<uint32_t>(k);
    b.lane = static_cast<uint16_t>(id % static_cast<uint64_t>(lanes));
    b.reason = id % 3 == 0 ? BatchReason::kTimeout : BatchReason::kFull;
    b.queue_depth_after = static_cast<uint32_t>(id % 5);
    b.oldest_arrival = kInspectorBase + gap * static_cast<int64_t>(id);
    b.batched = b.oldest_arrival + microseconds(100 * (k - 1) + 50);
    b.run_start = b.batched + microseconds(5);
    b.run_end = b.run_start + microseconds(500 + 20 * k);
    for (int j = 0; j < k; ++j) {
      RequestRecord r;
      r.id = id * 1000 + static_cast<uint64_t>(j);
      r.batch_id = id;
      r.batch_size = b.size;
      r.times.arrival = r.times.admitted = b.oldest_arrival + microseconds(100 * j);
      r.times.batched = b.batched;
      r.times.run_start = b.run_start;
      r.times.run_end = r.times.completed = b.run_end;
      out.requests.push_back(r);
    }
    out.batches.push_back(b);
    out.depth.push_back({b.batched, b.queue_depth_after, b.queue_depth_after + 1});
  }
  return out;
}

// Collects what QAbstractItemModelTester reports, so a broken model fails
// the test that broke it instead of aborting the run.
QStringList inspector_failures;
void collect_inspector_failures(QtMsgType, const QMessageLogContext& context, const QString& text) {
  if (QByteArray(context.category) == "qt.modeltest") inspector_failures << text;
}

class ModelFailureCatcher {
 public:
  ModelFailureCatcher() : previous_(qInstallMessageHandler(collect_inspector_failures)) {
    inspector_failures.clear();
  }
  ~ModelFailureCatcher() { qInstallMessageHandler(previous_); }

 private:
  QtMessageHandler previous_;
};

uint64_t id_at(const QAbstractItemModel* m, int row) {
  return m->data(m->index(row, BatchTableModel::kId)).toULongLong();
}

TEST(BatchInspectorTest, ThePaddingColumnsShowOnceABatchHasVaryingLengths) {
  BatchInspector inspector(100);
  inspector.add(make_records(1, 5, 3));
  EXPECT_TRUE(inspector.table()->isColumnHidden(BatchTableModel::kWaste));
  EXPECT_TRUE(inspector.table()->isColumnHidden(BatchTableModel::kLongest));
  RecordBatch padded = make_records(10, 1, 3);
  padded.batches[0].longest = 8;
  padded.batches[0].length_sum = 12;  // 3 requests padded to 8: half the positions padding
  inspector.add(padded);
  EXPECT_FALSE(inspector.table()->isColumnHidden(BatchTableModel::kWaste));
  const QAbstractItemModel* m = inspector.model();
  EXPECT_EQ(m->data(m->index(0, BatchTableModel::kWaste)).toString(), "50.0");
  EXPECT_EQ(m->data(m->index(0, BatchTableModel::kLongest)).toInt(), 8);
  EXPECT_FALSE(m->data(m->index(1, BatchTableModel::kWaste)).isValid());  // an unpadded batch
  inspector.clear();
  EXPECT_TRUE(inspector.table()->isColumnHidden(BatchTableModel::kWaste));
}

TEST(BatchInspectorTest, KeepsTheNewestBatchesUpToItsCapacity) {
  BatchInspector inspector(100);
  for (int poll = 0; poll < 3; ++poll) inspector.add(make_records(1 + 40 * poll, 40, 3));
  EXPECT_EQ(inspector.size(), 100u);
  const QAbstractItemModel* m = inspector.model();
  ASSERT_EQ(m->rowCount(), 100);
  ASSERT_EQ(m->columnCount(), BatchTableModel::kColumnCount);
  // Newest first; batches 1..20 were evicted.
  EXPECT_EQ(id_at(m, 0), 120u);
  EXPECT_EQ(id_at(m, 99), 21u);
  EXPECT_FALSE(inspector.select_batch(20));
  EXPECT_TRUE(inspector.select_batch(21));
  // One poll bigger than the capacity keeps its newest.
  inspector.add(make_records(1000, 150, 1));
  EXPECT_EQ(m->rowCount(), 100);
  EXPECT_EQ(id_at(m, 0), 1149u);
  EXPECT_EQ(id_at(m, 99), 1050u);
  // The columns say what the record says.
  const int row = 0;
  EXPECT_EQ(m->data(m->index(row, BatchTableModel::kSize)).toInt(), 1);
  EXPECT_EQ(m->data(m->index(row, BatchTableModel::kReason)).toString().toStdString(),
            "timeout");  // 1149 is a multiple of 3
  EXPECT_EQ(m->data(m->index(row, BatchTableModel::kRanMs)).toString(), "0.520");
  EXPECT_EQ(m->data(m->index(row, BatchTableModel::kDepthAfter)).toInt(), 1149 % 5);
  EXPECT_EQ(m->headerData(BatchTableModel::kFormedMs, Qt::Horizontal).toString().toStdString(),
            "formed in ms");
}

TEST(BatchInspectorTest, TheTableModelStaysConsistentWhileRowsComeAndGo) {
  ModelFailureCatcher catcher;
  BatchInspector inspector(50);
  QAbstractItemModelTester tester(inspector.model(),
                                  QAbstractItemModelTester::FailureReportingMode::Warning);
  uint64_t next = 1;
  for (int poll = 0; poll < 8; ++poll) {
    const int n = 7 + 9 * poll % 23;  // some polls evict, some do not
    inspector.add(make_records(next, n, 2, 2));
    next += static_cast<uint64_t>(n);
    inspector.refresh();
  }
  EXPECT_EQ(inspector.size(), 50u);
  inspector.add(make_records(next, 80, 1));  // more than the capacity in one poll
  next += 80;
  inspector.add(RecordBatch{});
  inspector.clear();
  EXPECT_EQ(inspector.model()->rowCount(), 0);
  inspector.clear();  // clearing an empty inspector is fine too
  inspector.set_paused(true);
  inspector.add(make_records(next, 30, 2));
  next += 30;
  EXPECT_EQ(inspector.model()->rowCount(), 0);  // held while paused
  inspector.add(make_records(next, 40, 2));
  next += 40;
  inspector.set_paused(false);
  EXPECT_EQ(inspector.model()->rowCount(), 50);  // the newest 50 of the 70 held
  EXPECT_EQ(id_at(inspector.model(), 0), next - 1);
  EXPECT_TRUE(inspector_failures.isEmpty()) << inspector_failures.join('\n').toStdString();
}

TEST(BatchInspectorTest, ABatchPickedByIdShowsItsSizeReasonAndWaits) {
  BatchInspector inspector;
  inspector.add(make_records(1, 10, 4));
  ASSERT_TRUE(inspector.select_batch(6));  // 6 % 3 == 0: cut on max_wait
  EXPECT_EQ(inspector.selected(), std::optional<uint64_t>(6));
  const QString text = inspector.details_text();
  EXPECT_TRUE(text.contains("Batch 6 · lane 0 · 4 requests")) << text.toStdString();
  EXPECT_TRUE(text.contains("Cut: timeout, because its oldest request had waited max_wait."))
      << text.toStdString();
  // Formed in 350 µs; ran 500 + 80 µs; 6 % 5 = 1 left queued.
  EXPECT_TRUE(text.contains("Formed in 0.350 ms")) << text.toStdString();
  EXPECT_TRUE(text.contains("ran 0.580 ms")) << text.toStdString();
  EXPECT_TRUE(text.contains("Queue left after the cut: 1")) << text.toStdString();
  EXPECT_TRUE(text.contains("Failed: no.")) << text.toStdString();
  // Waits 50, 150, 250, 350 µs: the median is the 2nd by nearest rank.
  EXPECT_TRUE(text.contains("(4 of 4), ms:\nmin 0.050 · median 0.150 · max 0.350"))
      << text.toStdString();
  EXPECT_TRUE(text.contains("\n0.050 0.150 0.250 0.350")) << text.toStdString();

  ASSERT_TRUE(inspector.select_batch(7));
  EXPECT_TRUE(inspector.details_text().contains("Cut: full")) << text.toStdString();
  EXPECT_FALSE(inspector.select_batch(99));
  EXPECT_EQ(inspector.selected(), std::optional<uint64_t>(7));  // unchanged

  // A row picked in the table selects its batch.
  const int row = 3;  // newest first: batch 7 is row 3 of 10
  inspector.table()->selectRow(row + 1);
  EXPECT_EQ(inspector.selected(), std::optional<uint64_t>(6));
}

TEST(BatchInspectorTest, ABatchOfPreparedRequestsShowsThePoolsWaitsAndPostprocess) {
  RecordBatch records = make_records(1, 2, 4);
  // Batch 2's requests: a process took request j after 10·(j+1) µs, and
  // it was queued 1 ms later; postprocess took the run's last 30 µs.
  int j = 0;
  for (RequestRecord& r : records.requests) {
    if (r.batch_id != 2) continue;
    r.times.prepare_start = r.times.arrival + microseconds(10 * (j + 1));
    r.times.admitted = r.times.prepare_start + milliseconds(1);
    r.times.post_start = r.times.run_end - microseconds(30);
    ++j;
  }
  BatchInspector inspector;
  inspector.add(records);
  ASSERT_TRUE(inspector.select_batch(2));
  QString text = inspector.details_text();
  EXPECT_TRUE(
      text.contains("Of which in the preprocess pool, ms: waiting for a process min "
                    "0.010 · median 0.020 · max 0.040; preprocessing min 1.00 · median "
                    "1.00 · max 1.00"))
      << text.toStdString();
  EXPECT_TRUE(text.contains("Of its run, postprocess (every request in turn): 0.030 ms"))
      << text.toStdString();
  // Batch 1 went through neither.
  ASSERT_TRUE(inspector.select_batch(1));
  text = inspector.details_text();
  EXPECT_FALSE(text.contains("preprocess")) << text.toStdString();
  EXPECT_FALSE(text.contains("postprocess")) << text.toStdString();
}

TEST(BatchInspectorTest, ABatchItsLanePreparedShowsThatPartOfItsRun) {
  RecordBatch records = make_records(1, 2, 4);
  for (RequestRecord& r : records.requests) {
    if (r.batch_id == 2) r.times.model_start = r.times.run_start + microseconds(250);
  }
  BatchInspector inspector;
  inspector.add(records);
  ASSERT_TRUE(inspector.select_batch(2));
  const QString text = inspector.details_text();
  EXPECT_TRUE(
      text.contains("Of its run, the lane preprocessing its requests (every one in "
                    "turn, before the model): 0.250 ms"))
      << text.toStdString();
  EXPECT_FALSE(text.contains("preprocess pool")) << text.toStdString();
  ASSERT_TRUE(inspector.select_batch(1));
  EXPECT_FALSE(inspector.details_text().contains("preprocessing"));
}

TEST(BatchInspectorTest, RequestsThatCameInAnotherPollAreSaidToBeMissing) {
  BatchInspector inspector;
  RecordBatch records = make_records(1, 2, 3);
  records.requests.clear();
  inspector.add(records);
  ASSERT_TRUE(inspector.select_batch(2));
  EXPECT_TRUE(inspector.details_text().contains("not seen"))
      << inspector.details_text().toStdString();
}

TEST(BatchInspectorTest, AClickOnABarSelectsThatBatch) {
  BatchInspector inspector;
  inspector.resize(1000, 460);
  inspector.show();
  // Two lanes; 30 batches of 3 every 2 ms. The timeline follows the newest
  // 50, so all of them are in view.
  const RecordBatch records = make_records(1, 30, 3, 2);
  inspector.add(records);
  inspector.refresh();
  QCustomPlot* plot = inspector.timeline();
  plot->replot();  // lay out now rather than on the next event loop pass

  // The origin of the time axis is the end of the newest batch.
  const TimePoint origin = records.batches.back().run_end;
  auto px_of = [&](TimePoint t, double lane_offset, int lane) {
    return QPointF(plot->xAxis->coordToPixel(to_ms(t - origin)),
                   plot->yAxis->coordToPixel(lane + lane_offset));
  };
  auto click = [&](QPointF at) {
    QMouseEvent press(QEvent::MouseButtonPress, at, plot->mapToGlobal(at), Qt::LeftButton,
                      Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(plot, &press);
    QMouseEvent release(QEvent::MouseButtonRelease, at, plot->mapToGlobal(at), Qt::LeftButton,
                        Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(plot, &release);
  };

  // The running bar of batch 25 (lane 1), in its middle.
  const BatchRecord& b25 = records.batches[24];
  ASSERT_EQ(b25.lane, 1);
  const TimePoint mid = b25.run_start + (b25.run_end - b25.run_start) / 2;
  EXPECT_EQ(inspector.batch_at(px_of(mid, 0.2, 1)), std::optional<uint64_t>(25));
  click(px_of(mid, 0.2, 1));
  EXPECT_EQ(inspector.selected(), std::optional<uint64_t>(25));
  EXPECT_TRUE(inspector.details_text().contains("Batch 25 · lane 1"))
      << inspector.details_text().toStdString();

  // The forming bar of batch 28 (lane 0).
  const BatchRecord& b28 = records.batches[27];
  const TimePoint forming = b28.oldest_arrival + (b28.batched - b28.oldest_arrival) / 2;
  click(px_of(forming, -0.2, 0));
  EXPECT_EQ(inspector.selected(), std::optional<uint64_t>(28));
  // The table follows the pick.
  EXPECT_EQ(inspector.table()->currentIndex().row(), 2);

  // In a gap of lane 1 (batch 1 ran until 2.8 ms, batch 3 arrives at 6 ms):
  // the pick stays.
  const QPointF gap = px_of(records.batches[0].run_end + microseconds(1600), 0.2, 1);
  EXPECT_EQ(inspector.batch_at(gap), std::nullopt);
  click(gap);
  EXPECT_EQ(inspector.selected(), std::optional<uint64_t>(28));
}

TEST(BatchInspectorTest, RepaintsOnlyWhenSomethingArrived) {
  BatchInspector inspector;
  inspector.resize(1000, 460);
  inspector.add(make_records(1, 5, 2));
  inspector.refresh();
  const QCPRange before = inspector.timeline()->xAxis->range();
  inspector.set_paused(true);
  inspector.add(make_records(6, 100, 2));
  inspector.refresh();
  // Paused: the axis holds still and nothing new is in the table.
  EXPECT_EQ(inspector.timeline()->xAxis->range(), before);
  EXPECT_EQ(inspector.size(), 5u);
  inspector.set_paused(false);
  inspector.refresh();
  EXPECT_EQ(inspector.size(), 105u);
  EXPECT_NE(inspector.timeline()->xAxis->range(), before);
  // The view spans the newest 50 batches: batch 56's arrival (the 50th
  // newest) is in view, batch 40's end is not.
  inspector.set_shown(50);
  const QCPRange shown = inspector.timeline()->xAxis->range();
  const TimePoint origin = make_records(105, 1, 2).batches[0].run_end;
  EXPECT_TRUE(shown.contains(to_ms(make_records(56, 1, 2).batches[0].oldest_arrival - origin)));
  EXPECT_FALSE(shown.contains(to_ms(make_records(40, 1, 2).batches[0].run_end - origin)));
}

TEST(BatchInspectorTest, TakesWhatAMonitorDrainsFromARealEngine) {
  Engine engine(SyntheticRunner::factory({.fixed_us = 200, .per_item_us = 5}),
                Options{.max_batch_size = 8, .max_wait_us = 1000, .num_lanes = 2});
  ASSERT_TRUE(engine.start().ok());
  constexpr int kRequests = 200;
  std::atomic<int> answered{0};
  for (int i = 0; i < kRequests; ++i) {
    Tensors in;
    in.push_back(Tensor::from_floats(std::vector<float>(4, static_cast<float>(i))));
    engine.submit(std::move(in), [&answered](TensorResponse&&) { ++answered; });
  }
  // The engine reports a batch's records before it runs their callbacks.
  const auto give_up = std::chrono::steady_clock::now() + seconds(20);
  while (answered < kRequests && std::chrono::steady_clock::now() < give_up)
    std::this_thread::yield();
  ASSERT_EQ(answered, kRequests);
  EngineMonitor monitor;
  monitor.poll(engine);
  engine.stop();

  BatchInspector inspector;
  inspector.add(monitor.last_records());
  inspector.refresh();
  const auto* model = static_cast<const BatchTableModel*>(inspector.model());
  uint32_t requests = 0;
  for (const InspectedBatch& b : model->rows()) {
    requests += b.batch.size;
    EXPECT_LE(b.batch.size, 8u);
    EXPECT_EQ(b.waits_us.size(), b.batch.size) << "batch " << b.batch.id;
    EXPECT_LE(b.batch.oldest_arrival, b.batch.batched);
  }
  EXPECT_EQ(requests, static_cast<uint32_t>(kRequests));
  ASSERT_TRUE(inspector.select_batch(model->rows().front().batch.id));
  EXPECT_TRUE(inspector.details_text().contains("Queue waits of its requests"));
}

}  // namespace
}  // namespace batchscope

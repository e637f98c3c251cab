// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/batch_inspector.h"

#include "ui/workbench/batch_lanes.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace batchscope {

BatchInspector::BatchInspector(size_t capacity, QWidget* parent)
    : QWidget(parent), model_(new BatchTableModel(capacity, this)) {
  auto* col = new QVBoxLayout(this);
  col->setContentsMargins(4, 4, 4, 4);

  auto* header = new QHBoxLayout;
  auto swatch = [](const QColor& c, const QString& text) {
    return QString("<span style='color:%1'>&#9632;</span>&nbsp;%2").arg(c.name(), text);
  };
  auto* legend = new QLabel(
      "Pale: forming, from the oldest arrival to the cut · dark: running "
      "· cut because: " +
      swatch(batch_reason_colour(BatchReason::kFull), "full") + " &nbsp;" +
      swatch(batch_reason_colour(BatchReason::kTimeout), "timeout (max_wait reached)") + " &nbsp;" +
      swatch(batch_reason_colour(BatchReason::kDrain), "drain") + " &nbsp;" +
      swatch(batch_failed_colour(), "failed (runner error)"));
  legend->setTextFormat(Qt::RichText);
  header->addWidget(legend);
  header->addStretch();
  header->addWidget(new QLabel("Show the last"));
  shown_box_ = new QComboBox;
  for (int n : {25, 50, 100, 250}) shown_box_->addItem(QString("%1 batches").arg(n), n);
  shown_box_->setCurrentIndex(1);
  header->addWidget(shown_box_);
  col->addLayout(header);

  make_timeline();
  col->addWidget(timeline_, 3);

  auto* split = new QSplitter(Qt::Horizontal);
  table_ = new QTableView;
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  // Fixed widths from the header and a wide sample value: measuring rows
  // that change 30 times a second would cost more than it shows.
  const QFontMetrics fm = table_->fontMetrics();
  const char* widest[] = {"0000000", "00",    "0000", "timeout, failed", "0000.00",
                          "000.00",  "00000", "0000", "padding %"};
  static_assert(std::size(widest) == BatchTableModel::kColumnCount);
  for (int c = 0; c < BatchTableModel::kColumnCount; ++c) {
    const QString head = model_->headerData(c, Qt::Horizontal).toString();
    table_->setColumnWidth(
        c, std::max(fm.horizontalAdvance(head), fm.horizontalAdvance(widest[c])) + 12);
  }
  table_->horizontalHeader()->setStretchLastSection(true);
  show_padding(false);  // until a batch of varying lengths comes
  table_->setAlternatingRowColors(true);
  split->addWidget(table_);

  details_ = new QLabel("Click a batch in the timeline or the table to see what it was made of.");
  details_->setWordWrap(true);
  details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setContentsMargins(6, 2, 6, 2);
  auto* scroll = new QScrollArea;
  scroll->setWidget(details_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  split->addWidget(scroll);
  waits_plot_ = new QCustomPlot;
  waits_plot_->setMinimumSize(180, 110);
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  waits_plot_->xAxis->setLabel("request queue wait (ms)");
  waits_plot_->yAxis->setLabel("requests");
  for (QCPAxis* a : {waits_plot_->xAxis, waits_plot_->yAxis}) {
    a->setLabelFont(small);
    a->setTickLabelFont(small);
  }
  auto counts = QSharedPointer<QCPAxisTickerFixed>::create();
  counts->setTickStep(1);
  counts->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  waits_plot_->yAxis->setTicker(counts);
  waits_plot_->setVisible(false);
  split->addWidget(waits_plot_);
  split->setStretchFactor(0, 5);
  split->setStretchFactor(1, 3);
  split->setStretchFactor(2, 2);
  split->setSizes({510, 290, 200});
  col->addWidget(split, 2);

  connect(shown_box_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this] { set_shown(shown_box_->currentData().toInt()); });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (syncing_ || !current.isValid()) return;
            select_batch(model_->at(current.row()).batch.id);
          });
}

void BatchInspector::make_timeline() {
  timeline_ = new QCustomPlot;
  timeline_->setMinimumHeight(150);
  timeline_->layer("overlay")->setMode(QCPLayer::lmLogical);  // one paint buffer
  timeline_->setMouseTracking(true);
  timeline_->xAxis->setLabel("ms (0 = end of the newest batch)");
  timeline_->yAxis->setRangeReversed(true);
  timeline_->yAxis->setSubTicks(false);
  timeline_->yAxis->grid()->setVisible(false);
  timeline_->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  timeline_->axisRect()->setRangeDrag(Qt::Horizontal);
  timeline_->axisRect()->setRangeZoom(Qt::Horizontal);
  lanes_ = new BatchLanes(timeline_->xAxis, timeline_->yAxis, model_->rows());
  empty_note_ = new QCPItemText(timeline_);
  empty_note_->position->setType(QCPItemPosition::ptAxisRectRatio);
  empty_note_->position->setAxisRect(timeline_->axisRect());
  empty_note_->position->setCoords(0.5, 0.5);
  empty_note_->setText("No batches yet: start traffic to see them form and run.");
  empty_note_->setColor(QColor(0x55, 0x55, 0x55));

  // A click (press and release in one place) selects the batch under it; a
  // drag pans when paused.
  connect(timeline_, &QCustomPlot::mousePress, this,
          [this](QMouseEvent* e) { press_at_ = e->position(); });
  connect(timeline_, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
    if ((e->position() - press_at_).manhattanLength() > 4) return;
    if (const auto id = batch_at(e->position())) select_batch(*id);
  });
  connect(timeline_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    const auto id = batch_at(e->position());
    const int row = id ? model_->row_of(*id) : -1;
    if (row < 0) return QToolTip::hideText();
    const BatchRecord& b = model_->at(row).batch;
    QToolTip::showText(e->globalPosition().toPoint(),
                       QString("batch %1 · lane %2 · %3 requests · cut %4\nformed in %5 ms · "
                               "ran %6 ms")
                           .arg(b.id)
                           .arg(b.lane)
                           .arg(b.size)
                           .arg(batch_reason_name(b.reason), batch_ms_text(batch_formed_ms(b)),
                                batch_ms_text(batch_ran_ms(b))),
                       timeline_);
  });
  follow_newest();
}

std::vector<InspectedBatch> BatchInspector::inspect(const RecordBatch& records) const {
  std::vector<InspectedBatch> fresh;
  fresh.reserve(records.batches.size());
  for (const BatchRecord& b : records.batches) fresh.push_back(InspectedBatch{.batch = b});
  // Newest on top means most recently finished: lanes finish out of id order.
  std::stable_sort(fresh.begin(), fresh.end(), [](const auto& x, const auto& y) {
    return finished_at(x.batch) < finished_at(y.batch);
  });
  std::unordered_map<uint64_t, size_t> slot;
  for (size_t i = 0; i < fresh.size(); ++i) slot[fresh[i].batch.id] = i;
  for (const RequestRecord& r : records.requests) {
    if (r.batch_id == 0) continue;
    const auto it = slot.find(r.batch_id);
    if (it == slot.end()) continue;
    fresh[it->second].waits_us.push_back(
        static_cast<float>(to_us(r.times.batched - r.times.arrival)));
    // A request a preprocess pool prepared before it was queued.
    if (r.times.prepare_start != TimePoint{}) {
      fresh[it->second].prepare_wait_us.push_back(
          static_cast<float>(to_us(r.times.prepare_start - r.times.arrival)));
      fresh[it->second].prepared_us.push_back(
          static_cast<float>(to_us(r.times.admitted - r.times.prepare_start)));
    }
    if (r.times.post_start != TimePoint{}) {
      fresh[it->second].post_us = static_cast<float>(to_us(r.times.run_end - r.times.post_start));
    }
    if (r.times.model_start != TimePoint{}) {
      fresh[it->second].lane_prepare_us =
          static_cast<float>(to_us(r.times.model_start - r.times.run_start));
    }
  }
  for (InspectedBatch& b : fresh) {
    std::sort(b.waits_us.begin(), b.waits_us.end());
    std::sort(b.prepare_wait_us.begin(), b.prepare_wait_us.end());
    std::sort(b.prepared_us.begin(), b.prepared_us.end());
  }
  return fresh;
}

void BatchInspector::add(const RecordBatch& records) {
  if (records.batches.empty()) return;
  std::vector<InspectedBatch> fresh = inspect(records);
  if (table_->isColumnHidden(BatchTableModel::kWaste) &&
      std::any_of(records.batches.begin(), records.batches.end(),
                  [](const BatchRecord& b) { return b.longest > 0; })) {
    show_padding(true);
  }
  if (paused_) {
    for (InspectedBatch& b : fresh) held_.push_back(std::move(b));
    while (held_.size() > model_->capacity()) held_.pop_front();
    return;
  }
  // The view's current row may be evicted; that is not the user choosing
  // another batch.
  syncing_ = true;
  model_->add(std::move(fresh));
  if (selected_ && model_->row_of(selected_->batch.id) < 0) table_->clearSelection();
  syncing_ = false;
  dirty_ = true;
}

void BatchInspector::show_padding(bool on) {
  table_->setColumnHidden(BatchTableModel::kLongest, !on);
  table_->setColumnHidden(BatchTableModel::kWaste, !on);
}

void BatchInspector::refresh() {
  if (!dirty_ || paused_) return;
  dirty_ = false;
  redraw();
}

void BatchInspector::redraw() {
  follow_newest();
  timeline_->replot(QCustomPlot::rpQueuedReplot);
}

void BatchInspector::follow_newest() {
  const auto& rows = model_->rows();
  empty_note_->setVisible(rows.empty());
  timeline_->xAxis->setTickLabels(!rows.empty());
  int lanes = 1;
  TimePoint newest{};
  for (const InspectedBatch& ib : rows) {
    lanes = std::max(lanes, int(ib.batch.lane) + 1);
    newest = std::max(newest, finished_at(ib.batch));
  }
  lanes_->set_lanes(lanes);
  lanes_->set_origin(newest);
  auto ticker = timeline_->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
  if (ticker->ticks().size() != lanes) {
    ticker->clear();
    for (int l = 0; l < lanes; ++l) ticker->addTick(l, QString("lane %1").arg(l));
  }
  timeline_->yAxis->setRange(-0.55, lanes - 0.45);
  double lower = 0;
  const size_t n = std::min(rows.size(), static_cast<size_t>(shown_));
  for (size_t i = 0; i < n; ++i) lower = std::min(lower, lanes_->ms(batch_arrival(rows[i].batch)));
  const double span = lower < 0 ? -lower : 1.0;
  timeline_->xAxis->setRange(lower - 0.03 * span, 0.03 * span);
}

void BatchInspector::set_paused(bool paused) {
  if (paused == paused_) return;
  paused_ = paused;
  timeline_->setInteractions(paused ? QCP::iRangeDrag | QCP::iRangeZoom : QCP::Interactions());
  if (!paused) {
    std::vector<InspectedBatch> held(std::make_move_iterator(held_.begin()),
                                     std::make_move_iterator(held_.end()));
    held_.clear();
    syncing_ = true;
    model_->add(std::move(held));
    syncing_ = false;
    dirty_ = true;  // follow the newest again, even if nothing arrived
  }
}

void BatchInspector::clear() {
  syncing_ = true;
  model_->clear();
  syncing_ = false;
  held_.clear();
  show_padding(false);
  selected_.reset();
  lanes_->set_highlight(std::nullopt);
  details_->setText("Click a batch in the timeline or the table to see what it was made of.");
  waits_plot_->setVisible(false);
  redraw();
}

void BatchInspector::set_shown(int batches) {
  shown_ = std::clamp(batches, 1, 100000);
  const int i = shown_box_->findData(shown_);
  if (i >= 0 && i != shown_box_->currentIndex()) shown_box_->setCurrentIndex(i);
  if (!paused_) redraw();
}

bool BatchInspector::select_batch(uint64_t id) {
  const int row = model_->row_of(id);
  if (row < 0) return false;
  selected_ = model_->at(row);
  lanes_->set_highlight(id);
  syncing_ = true;
  table_->selectRow(row);
  table_->scrollTo(model_->index(row, 0));
  syncing_ = false;
  show_details();
  timeline_->replot(QCustomPlot::rpQueuedReplot);
  return true;
}

std::optional<uint64_t> BatchInspector::selected() const {
  if (!selected_) return std::nullopt;
  return selected_->batch.id;
}

std::optional<uint64_t> BatchInspector::batch_at(QPointF pixel) const { return lanes_->hit(pixel); }

void BatchInspector::show_details() {
  if (!selected_) return;
  const BatchRecord& b = selected_->batch;
  const std::vector<float>& w = selected_->waits_us;
  QString text = QString("Batch %1 · lane %2 · %3 requests\n").arg(b.id).arg(b.lane).arg(b.size);
  text += QString("Cut: %1, because %2.\n").arg(batch_reason_name(b.reason), batch_cut_why(b));
  text += QString(
              "Formed in %1 ms (oldest arrival to cut), ran %2 ms, starting %3 ms after the "
              "cut.\n")
              .arg(batch_ms_text(batch_formed_ms(b)), batch_ms_text(batch_ran_ms(b)),
                   batch_ms_text(b.run_start > b.batched ? to_ms(b.run_start - b.batched) : 0.0));
  text += QString("Queue left after the cut: %1.\nFailed: %2.\n")
              .arg(b.queue_depth_after)
              .arg(b.failed ? "yes, the runner returned an error" : "no");
  if (w.empty()) {
    text += "Queue waits of its requests: not seen (they came in another poll).";
  } else {
    const size_t median = (w.size() + 1) / 2 - 1;  // nearest rank
    text += QString("Queue waits of its requests (%1 of %2), ms:\nmin %3 · median %4 · max %5\n")
                .arg(w.size())
                .arg(b.size)
                .arg(batch_ms_text(w.front() / 1000.0), batch_ms_text(w[median] / 1000.0),
                     batch_ms_text(w.back() / 1000.0));
    constexpr size_t kListed = 12;
    QStringList list;
    for (size_t i = 0; i < std::min(w.size(), kListed); ++i) list << batch_ms_text(w[i] / 1000.0);
    text += list.join(' ');
    if (w.size() > kListed) text += QString(" … (%1 more)").arg(w.size() - kListed);
    auto spread = [](const std::vector<float>& p) {
      const size_t mid = (p.size() + 1) / 2 - 1;
      return QString("min %1 · median %2 · max %3")
          .arg(batch_ms_text(p.front() / 1000.0), batch_ms_text(p[mid] / 1000.0),
               batch_ms_text(p.back() / 1000.0));
    };
    if (!selected_->prepared_us.empty()) {
      text += "\nOf which in the preprocess pool, ms: waiting for a process " +
              spread(selected_->prepare_wait_us) + "; preprocessing " +
              spread(selected_->prepared_us);
    }
  }
  if (selected_->lane_prepare_us > 0) {
    text += QString(
                "\nOf its run, the lane preprocessing its requests (every one in turn, "
                "before the model): %1 ms")
                .arg(batch_ms_text(selected_->lane_prepare_us / 1000.0));
  }
  if (selected_->post_us > 0) {
    text += QString("\nOf its run, postprocess (every request in turn): %1 ms")
                .arg(batch_ms_text(selected_->post_us / 1000.0));
  }
  details_->setText(text);
  show_waits(*selected_);
}

void BatchInspector::show_waits(const InspectedBatch& ib) {
  waits_plot_->clearPlottables();
  const std::vector<float>& w = ib.waits_us;
  waits_plot_->setVisible(!w.empty());
  if (w.empty()) return;
  const double lo = w.front() / 1000.0, hi = w.back() / 1000.0;
  const int bins = hi > lo ? std::clamp(static_cast<int>(w.size()), 1, 16) : 1;
  const double width = hi > lo ? (hi - lo) / bins : std::max(hi * 0.1, 0.001);
  QVector<double> keys(bins), counts(bins, 0);
  for (int i = 0; i < bins; ++i) keys[i] = lo + width * (i + 0.5);
  for (float us : w) {
    const int i = hi > lo ? std::min(bins - 1, static_cast<int>((us / 1000.0 - lo) / width)) : 0;
    counts[i] += 1;
  }
  auto* bars = new QCPBars(waits_plot_->xAxis, waits_plot_->yAxis);
  bars->setData(keys, counts, true);
  bars->setWidth(width * 0.9);
  bars->setPen(Qt::NoPen);
  bars->setBrush(batch_colour(ib.batch));
  waits_plot_->xAxis->setRange(lo - width, hi + width);
  waits_plot_->yAxis->setRange(0, *std::max_element(counts.begin(), counts.end()) * 1.15);
  waits_plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString BatchInspector::details_text() const { return details_->text(); }

}  // namespace batchscope

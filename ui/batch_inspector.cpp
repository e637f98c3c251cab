#include "batch_inspector.h"

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

namespace {

// Running bars by why the batch was cut; the forming bar is a pale wash of
// the same colour, so a lane reads as "pale = waiting, dark = running".
const QColor kFullColour(0x2f, 0x74, 0xc0);
const QColor kTimeoutColour(0xc4, 0x4e, 0x00);
const QColor kDrainColour(0x70, 0x70, 0x70);
const QColor kFailedColour(0xb0, 0x1c, 0x2e);

QColor colour_of(const BatchRecord& b) {
  if (b.failed) return kFailedColour;
  switch (b.reason) {
    case BatchReason::kFull: return kFullColour;
    case BatchReason::kTimeout: return kTimeoutColour;
    case BatchReason::kDrain: return kDrainColour;
  }
  return kDrainColour;
}

QColor pale(QColor c) {
  c.setAlpha(75);
  return c;
}

// Where a batch's bars sit inside its lane's row (value units, lane L at
// the row's centre; the axis is reversed so lane 0 is on top).
constexpr double kFormTop = -0.38, kFormBottom = -0.06;
constexpr double kRunTop = -0.02, kRunBottom = 0.38;

TimePoint arrival_of(const BatchRecord& b) {
  return b.oldest_arrival != TimePoint{} ? b.oldest_arrival : b.batched;
}

double formed_ms(const BatchRecord& b) { return to_ms(b.batched - arrival_of(b)); }
double ran_ms(const BatchRecord& b) {
  return b.run_end > b.run_start ? to_ms(b.run_end - b.run_start) : 0.0;
}

// Milliseconds with as many decimals as their size deserves.
QString ms_text(double ms) {
  const int decimals = ms < 1 ? 3 : ms < 100 ? 2 : 1;
  return QString::number(ms, 'f', decimals);
}

const char* reason_why(const BatchRecord& b) {
  switch (b.reason) {
    case BatchReason::kFull: return "max_batch_size requests were waiting";
    case BatchReason::kTimeout: return "its oldest request had waited max_wait";
    case BatchReason::kDrain: return "the engine was stopping and emptied its queue";
  }
  return "";
}

}  // namespace

// The timeline's bars: one custom plottable that draws every kept batch in
// the visible range, so a repaint is one pass over at most `capacity` rows
// and nothing is allocated per batch.
class BatchLanes : public QCPAbstractPlottable {
 public:
  BatchLanes(QCPAxis* x, QCPAxis* y, const std::deque<InspectedBatch>& rows)
      : QCPAbstractPlottable(x, y), rows_(rows) {
    setSelectable(QCP::stNone);
  }

  void set_origin(TimePoint t) { origin_ = t; }
  TimePoint origin() const { return origin_; }
  void set_lanes(int n) { lanes_ = n; }
  void set_highlight(std::optional<uint64_t> id) { highlight_ = id; }
  double ms(TimePoint t) const { return to_ms(t - origin_); }

  std::optional<uint64_t> hit(QPointF px) const {
    if (!keyAxis()->axisRect()->rect().contains(px.toPoint())) return std::nullopt;
    const double x = keyAxis()->pixelToCoord(px.x());
    const double v = valueAxis()->pixelToCoord(px.y());
    const long lane = std::lround(v);
    const double in_row = v - static_cast<double>(lane);
    const bool running_half = in_row > (kFormBottom + kRunTop) / 2;
    // A few pixels of slack so that a sliver of a bar can still be hit.
    const double slack = std::abs(keyAxis()->pixelToCoord(px.x() + 3) - x);
    std::optional<uint64_t> best;
    double best_distance = slack;
    for (const InspectedBatch& ib : rows_) {  // newest first: newest wins ties
      const BatchRecord& b = ib.batch;
      if (b.lane != lane) continue;
      const double lo = running_half ? ms(b.run_start) : ms(arrival_of(b));
      const double hi = running_half ? ms(b.run_end) : ms(b.batched);
      const double d = x < lo ? lo - x : x > hi ? x - hi : 0.0;
      if (d < best_distance || (d == 0 && !best)) {
        best_distance = d;
        best = b.id;
        if (d == 0) break;
      }
    }
    return best;
  }

  double selectTest(const QPointF&, bool, QVariant*) const override { return -1; }

  QCPRange getKeyRange(bool& found, QCP::SignDomain) const override {
    found = !rows_.empty();
    QCPRange r(0, 0);
    for (const InspectedBatch& ib : rows_) {
      r.lower = std::min(r.lower, ms(arrival_of(ib.batch)));
      r.upper = std::max(r.upper, ms(ib.batch.run_end));
    }
    return r;
  }

  QCPRange getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const override {
    found = true;
    return QCPRange(-0.5, lanes_ - 0.5);
  }

 protected:
  void draw(QCPPainter* painter) override {
    const QCPRange xr = keyAxis()->range();
    auto rect = [this](double x0, double x1, double lane, double top, double bottom,
                       double min_px) {
      QRectF r(QPointF(keyAxis()->coordToPixel(x0), valueAxis()->coordToPixel(lane + top)),
               QPointF(keyAxis()->coordToPixel(x1), valueAxis()->coordToPixel(lane + bottom)));
      r = r.normalized();
      if (r.width() < min_px) r.setWidth(min_px);
      return r;
    };
    painter->setPen(Qt::NoPen);
    const InspectedBatch* picked = nullptr;
    // Oldest first, so newer bars lie on top of older ones.
    for (auto it = rows_.rbegin(); it != rows_.rend(); ++it) {
      const BatchRecord& b = it->batch;
      const double a = ms(arrival_of(b)), c = ms(b.batched);
      const double s = ms(b.run_start), e = ms(b.run_end);
      if (std::max(c, e) < xr.lower || a > xr.upper) continue;
      const double lane = b.lane;
      const QColor colour = colour_of(b);
      painter->setBrush(pale(colour));
      painter->drawRect(rect(a, c, lane, kFormTop, kFormBottom, 1.0));
      painter->setBrush(colour);
      painter->drawRect(rect(s, e, lane, kRunTop, kRunBottom, 2.0));
      if (highlight_ && b.id == *highlight_) picked = &*it;
    }
    if (picked) {
      const BatchRecord& b = picked->batch;
      painter->setBrush(Qt::NoBrush);
      painter->setPen(QPen(Qt::black, 2));
      const double lane = b.lane;
      painter->drawRect(rect(ms(arrival_of(b)), ms(b.batched), lane, kFormTop, kFormBottom, 1.0)
                            .adjusted(-1, -1, 1, 1));
      painter->drawRect(rect(ms(b.run_start), ms(b.run_end), lane, kRunTop, kRunBottom, 2.0)
                            .adjusted(-1, -1, 1, 1));
    }
  }

  void drawLegendIcon(QCPPainter*, const QRectF&) const override {}

 private:
  const std::deque<InspectedBatch>& rows_;
  TimePoint origin_{};
  int lanes_ = 1;
  std::optional<uint64_t> highlight_;
};

// ---- BatchTableModel ------------------------------------------------------

BatchTableModel::BatchTableModel(size_t capacity, QObject* parent)
    : QAbstractTableModel(parent), capacity_(std::max<size_t>(capacity, 1)) {}

void BatchTableModel::add(std::vector<InspectedBatch> batches) {
  if (batches.empty()) return;
  if (batches.size() > capacity_) {
    batches.erase(batches.begin(), batches.end() - static_cast<std::ptrdiff_t>(capacity_));
  }
  const size_t n = batches.size();
  // Evict first, so the table never holds more than its capacity.
  if (rows_.size() + n > capacity_) {
    const size_t evict = rows_.size() + n - capacity_;
    beginRemoveRows(QModelIndex(), static_cast<int>(rows_.size() - evict),
                    static_cast<int>(rows_.size() - 1));
    rows_.erase(rows_.end() - static_cast<std::ptrdiff_t>(evict), rows_.end());
    endRemoveRows();
  }
  beginInsertRows(QModelIndex(), 0, static_cast<int>(n - 1));
  for (InspectedBatch& b : batches) rows_.push_front(std::move(b));
  endInsertRows();
}

void BatchTableModel::clear() {
  if (rows_.empty()) return;
  beginResetModel();
  rows_.clear();
  endResetModel();
}

int BatchTableModel::row_of(uint64_t id) const {
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].batch.id == id) return static_cast<int>(i);
  }
  return -1;
}

int BatchTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BatchTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant BatchTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const BatchRecord& b = rows_[static_cast<size_t>(index.row())].batch;
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case kId: return QVariant::fromValue<qulonglong>(b.id);
        case kLane: return int(b.lane);
        case kSize: return uint(b.size);
        case kReason: return QString(batch_reason_name(b.reason)) + (b.failed ? ", failed" : "");
        case kFormedMs: return ms_text(formed_ms(b));
        case kRanMs: return ms_text(ran_ms(b));
        case kDepthAfter: return uint(b.queue_depth_after);
      }
      return {};
    case Qt::TextAlignmentRole:
      return column == kReason ? int(Qt::AlignLeft | Qt::AlignVCenter)
                               : int(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      if (b.failed) return QBrush(kFailedColour);
      return {};
    case Qt::ToolTipRole:
      if (column == kReason) return QString(reason_why(b));
      return {};
  }
  return {};
}

QVariant BatchTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kId: return QStringLiteral("batch");
    case kLane: return QStringLiteral("lane");
    case kSize: return QStringLiteral("size");
    case kReason: return QStringLiteral("cut");
    case kFormedMs: return QStringLiteral("formed in ms");
    case kRanMs: return QStringLiteral("ran ms");
    case kDepthAfter: return QStringLiteral("queue after");
  }
  return {};
}

// ---- BatchInspector -------------------------------------------------------

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
      swatch(kFullColour, "full") + " &nbsp;" + swatch(kTimeoutColour, "timeout (max_wait reached)") + " &nbsp;" +
      swatch(kDrainColour, "drain") + " &nbsp;" + swatch(kFailedColour, "failed (runner error)"));
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
  const char* widest[] = {"0000000", "00", "0000", "timeout, failed", "0000.00", "000.00", "00000"};
  for (int c = 0; c < BatchTableModel::kColumnCount; ++c) {
    const QString head = model_->headerData(c, Qt::Horizontal).toString();
    table_->setColumnWidth(
        c, std::max(fm.horizontalAdvance(head), fm.horizontalAdvance(widest[c])) + 12);
  }
  table_->horizontalHeader()->setStretchLastSection(true);
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
    QToolTip::showText(
        e->globalPosition().toPoint(),
        QString("batch %1 · lane %2 · %3 requests · cut %4\nformed in %5 ms · "
                "ran %6 ms")
            .arg(b.id)
            .arg(b.lane)
            .arg(b.size)
            .arg(batch_reason_name(b.reason), ms_text(formed_ms(b)), ms_text(ran_ms(b))),
        timeline_);
  });
  follow_newest();
}

std::vector<InspectedBatch> BatchInspector::inspect(const RecordBatch& records) const {
  std::vector<InspectedBatch> fresh;
  fresh.reserve(records.batches.size());
  for (const BatchRecord& b : records.batches) fresh.push_back({b, {}});
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
  }
  for (InspectedBatch& b : fresh) std::sort(b.waits_us.begin(), b.waits_us.end());
  return fresh;
}

void BatchInspector::add(const RecordBatch& records) {
  if (records.batches.empty()) return;
  std::vector<InspectedBatch> fresh = inspect(records);
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
  for (size_t i = 0; i < n; ++i) lower = std::min(lower, lanes_->ms(arrival_of(rows[i].batch)));
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
  text += QString("Cut: %1, because %2.\n").arg(batch_reason_name(b.reason), reason_why(b));
  text += QString(
              "Formed in %1 ms (oldest arrival to cut), ran %2 ms, starting %3 ms after the "
              "cut.\n")
              .arg(ms_text(formed_ms(b)), ms_text(ran_ms(b)),
                   ms_text(b.run_start > b.batched ? to_ms(b.run_start - b.batched) : 0.0));
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
                .arg(ms_text(w.front() / 1000.0), ms_text(w[median] / 1000.0),
                     ms_text(w.back() / 1000.0));
    constexpr size_t kListed = 12;
    QStringList list;
    for (size_t i = 0; i < std::min(w.size(), kListed); ++i) list << ms_text(w[i] / 1000.0);
    text += list.join(' ');
    if (w.size() > kListed) text += QString(" … (%1 more)").arg(w.size() - kListed);
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
  bars->setBrush(colour_of(ib.batch));
  waits_plot_->xAxis->setRange(lo - width, hi + width);
  waits_plot_->yAxis->setRange(0, *std::max_element(counts.begin(), counts.end()) * 1.15);
  waits_plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString BatchInspector::details_text() const { return details_->text(); }

}  // namespace batchscope

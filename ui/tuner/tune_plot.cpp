// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/tuner/tune_plot.h"

#include <qcustomplot.h>

#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "ui/common/number_text.h"

namespace batchscope {

namespace {

const QColor kEvaluated(0x99, 0x99, 0x99, 110);
const QColor kFront(0x1f, 0x5f, 0xbf);
const QColor kBand(0x1f, 0x5f, 0xbf, 70);
const QColor kLive(0xd9, 0x60, 0x0b);
const QColor kBest(0x2e, 0x9d, 0x3a);
const QColor kCalibrated(0x7b, 0x3f, 0xb5);
const QColor kSlo(0xc6, 0x28, 0x28);
constexpr double kPickPx = 8;  // how near the pointer a point must be

// The x coordinate of a point: a log axis has no place for 0, so a p99 of 0
// (nothing answered) sits at the left edge.
double x_of(double p99_ms) { return std::max(p99_ms, 1e-3); }

QString figures(const char* what, const Evaluated& e) {
  return QString("%1: %2 req/s · p50 %3 ms · p99 %4 ms · %5% lost")
      .arg(what)
      .arg(e.throughput_rps, 0, 'f', 1)
      .arg(ms_text(e.p50_ms), ms_text(e.p99_ms))
      .arg(100.0 * e.loss_rate(), 0, 'f', 2);
}

// Ticks at 1, 2 and 5 times the powers of ten across [lo, hi], or at the
// powers alone when those are too many to label: a log axis's own ticker
// labels only the powers, and a search often spans less than a decade.
void set_latency_ticks(QCPAxis* axis, double lo, double hi) {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  std::vector<double> ticks;
  for (int k = static_cast<int>(std::floor(std::log10(lo))); std::pow(10.0, k) <= hi; ++k) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, k);
      if (v >= lo && v <= hi) ticks.push_back(v);
    }
  }
  if (ticks.size() > 9)
    std::erase_if(ticks, [](double v) { return std::log10(v) != std::round(std::log10(v)); });
  for (double v : ticks) ticker->addTick(v, QString::number(v, 'g', 3));
  ticker->setSubTickCount(0);
  axis->setTicker(ticker);
}

}  // namespace

TunePlot::TunePlot(QWidget* parent) : QWidget(parent) {
  auto* col = new QVBoxLayout(this);
  col->setContentsMargins(0, 0, 0, 0);
  plot_ = new QCustomPlot;
  plot_->setMinimumSize(320, 200);
  col->addWidget(plot_);
  const QFont small(font().family(), 8);
  QCPAxis* x = plot_->xAxis;
  QCPAxis* y = plot_->yAxis;
  for (QCPAxis* a : {x, y}) {
    a->setLabelFont(small);
    a->setTickLabelFont(small);
    a->setPadding(2);
    a->setLabelPadding(2);
  }
  x->setLabel("p99 latency, ms (log scale)");
  x->setScaleType(QCPAxis::stLogarithmic);
  y->setLabel("throughput, req/s");

  all_ = plot_->addGraph();
  all_->setName("all predicted");
  all_->setLineStyle(QCPGraph::lsNone);
  all_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kEvaluated, 4));
  front_ = plot_->addGraph();
  front_->setName("Pareto front");
  front_->setLineStyle(QCPGraph::lsNone);
  front_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(kFront, 1.5),
                                          QColor(0x1f, 0x5f, 0xbf, 90), 7));
  live_ = plot_->addGraph();
  live_->setName("measured live");
  live_->setLineStyle(QCPGraph::lsNone);
  live_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, QPen(kLive, 1.5), kLive, 9));
  calibrated_ = plot_->addGraph();
  calibrated_->setName("calibrated");
  calibrated_->setLineStyle(QCPGraph::lsNone);
  calibrated_->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssTriangle, QPen(kCalibrated, 1.5), Qt::NoBrush, 9));
  best_ = plot_->addGraph();
  best_->setName("best");
  best_->setLineStyle(QCPGraph::lsNone);
  best_->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssStar, QPen(kBest, 2.2), Qt::NoBrush, 15));
  selected_ = plot_->addGraph();
  selected_->setLineStyle(QCPGraph::lsNone);
  selected_->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::black, 1.5), Qt::NoBrush, 15));
  selected_->removeFromLegend();

  // The legend in a strip above the axis rect: points may be anywhere inside.
  QCPLayoutGrid* layout = plot_->plotLayout();
  layout->insertRow(0);
  layout->addElement(0, 0, plot_->legend);
  layout->setRowStretchFactor(0, 0.001);
  plot_->legend->setVisible(true);
  plot_->legend->setFont(small);
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot_->legend->setRowSpacing(0);
  plot_->legend->setColumnSpacing(8);
  plot_->legend->setIconSize(12, 10);
  plot_->legend->setIconTextPadding(3);
  plot_->legend->setBorderPen(Qt::NoPen);
  plot_->legend->setMargins(QMargins(2, 0, 2, 0));

  slo_line_ = new QCPItemStraightLine(plot_);
  slo_line_->setPen(QPen(kSlo, 1.3, Qt::DashLine));
  slo_label_ = new QCPItemText(plot_);
  slo_label_->position->setTypeX(QCPItemPosition::ptPlotCoords);
  slo_label_->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  slo_label_->setPositionAlignment(Qt::AlignTop | Qt::AlignRight);
  slo_label_->setPadding(QMargins(0, 2, 4, 0));
  slo_label_->setFont(small);
  slo_label_->setColor(kSlo);
  note_ = new QCPItemText(plot_);
  note_->position->setType(QCPItemPosition::ptAxisRectRatio);
  note_->position->setCoords(0.5, 0.5);
  note_->setFont(small);
  note_->setColor(QColor(110, 110, 110));

  plot_->setMouseTracking(true);
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    const QString text = text_at(e->pos());
    if (text.isEmpty()) return QToolTip::hideText();
    QToolTip::showText(e->globalPosition().toPoint(), text, plot_);
  });
  // A click (press and release in one place) picks the row under it.
  connect(plot_, &QCustomPlot::mousePress, this,
          [this](QMouseEvent* e) { press_at_ = e->position(); });
  connect(plot_, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
    if ((e->position() - press_at_).manhattanLength() > 4) return;
    if (const auto row = row_at(e->pos()); row && on_pick_) on_pick_(*row);
  });
  clear("Run a search to see the configurations it predicts.");
}

void TunePlot::clear_items() {
  for (QCPItemLine* l : links_) plot_->removeItem(l);
  links_.clear();
  for (QCPItemLine* l : bands_) plot_->removeItem(l);
  bands_.clear();
  for (QCPGraph* g : {all_, front_, live_, calibrated_, best_, selected_}) g->data()->clear();
}

void TunePlot::clear(const QString& note) {
  clear_items();
  evaluated_.clear();
  rows_.clear();
  best_row_.reset();
  slo_line_->setVisible(false);
  slo_label_->setVisible(false);
  note_->setText(note);
  note_->setVisible(true);
  plot_->xAxis->setRange(0.1, 100);
  set_latency_ticks(plot_->xAxis, 0.1, 100);
  plot_->yAxis->setRange(0, 1000);
  plot_->replot();
}

void TunePlot::show_result(const std::vector<Evaluated>& evaluated,
                           const std::vector<TuneRow>& rows, std::optional<size_t> best,
                           double slo_p99_ms) {
  clear_items();
  evaluated_ = evaluated;
  rows_ = rows;
  best_row_ = best;
  slo_p99_ms_ = slo_p99_ms;
  note_->setVisible(evaluated_.empty());
  note_->setText("Nothing was evaluated.");

  double lo = slo_p99_ms, hi = slo_p99_ms;
  double least = std::numeric_limits<double>::infinity(), most = 0;
  auto extend = [&](const Evaluated& e) {
    if (e.ok == 0) return;  // nothing answered: no latency to place
    lo = std::min(lo, x_of(e.p99_ms));
    hi = std::max(hi, x_of(e.p99_ms));
    least = std::min(least, e.throughput_rps);
    most = std::max(most, e.throughput_rps);
  };
  for (const Evaluated& e : evaluated_) {
    extend(e);
    if (e.ok > 0) all_->addData(x_of(e.p99_ms), e.throughput_rps);
  }
  for (const TuneRow& row : rows_) {
    extend(row.predicted);
    front_->addData(x_of(row.predicted.p99_ms), row.predicted.throughput_rps);
    if (const auto& b = row.predicted.band; b && row.predicted.ok > 0) {
      auto* bar = new QCPItemLine(plot_);
      bar->setPen(QPen(kBand, 3, Qt::SolidLine, Qt::FlatCap));
      bar->start->setCoords(x_of(b->p99_ms.low), row.predicted.throughput_rps);
      bar->end->setCoords(x_of(b->p99_ms.high), row.predicted.throughput_rps);
      bar->setSelectable(false);
      bands_.push_back(bar);
      lo = std::min(lo, x_of(b->p99_ms.low));
      hi = std::max(hi, x_of(b->p99_ms.high));
    }
    if (!row.live) continue;
    const Evaluated& m = row.live->measured;
    extend(m);
    live_->addData(x_of(m.p99_ms), m.throughput_rps);
    auto* link = new QCPItemLine(plot_);
    link->setPen(QPen(kLive, 1.2, Qt::DashLine));
    link->start->setCoords(x_of(row.predicted.p99_ms), row.predicted.throughput_rps);
    link->end->setCoords(x_of(m.p99_ms), m.throughput_rps);
    links_.push_back(link);
    if (const auto& c = row.live->recalibrated; c && c->ok > 0) {
      extend(*c);
      calibrated_->addData(x_of(c->p99_ms), c->throughput_rps);
    }
  }
  if (best && *best < rows_.size()) {
    const Evaluated& b = rows_[*best].predicted;
    best_->addData(x_of(b.p99_ms), b.throughput_rps);
  }
  plot_->xAxis->setRange(lo / 1.6, hi * 1.6);
  set_latency_ticks(plot_->xAxis, lo / 1.6, hi * 1.6);
  // Throughput from the least to the most served, not from 0: every
  // configuration that keeps up serves the offered rate, and what tells them
  // apart is a few percent.
  if (most > 0) {
    const double span = std::max(most - least, 0.02 * most);
    plot_->yAxis->setRange(std::max(0.0, least - 0.15 * span), most + 0.15 * span);
  } else {
    plot_->yAxis->setRange(0, 1000);
  }

  slo_line_->point1->setCoords(slo_p99_ms, 0);
  slo_line_->point2->setCoords(slo_p99_ms, 1);
  slo_line_->setVisible(true);
  slo_label_->position->setCoords(slo_p99_ms, 0);
  slo_label_->setText(QString("SLO p99 %1 ms").arg(ms_text(slo_p99_ms)));
  slo_label_->setVisible(true);
  set_selected(std::nullopt);
}

void TunePlot::set_selected(std::optional<size_t> row) {
  selected_->data()->clear();
  if (row && *row < rows_.size()) {
    const Evaluated& e = rows_[*row].predicted;
    selected_->addData(x_of(e.p99_ms), e.throughput_rps);
  }
  plot_->replot();
}

QPointF TunePlot::pixel(double p99_ms, double rps) const {
  return {plot_->xAxis->coordToPixel(x_of(p99_ms)), plot_->yAxis->coordToPixel(rps)};
}

QPoint TunePlot::pixel_of(int row, Point which) const {
  if (row < 0 || static_cast<size_t>(row) >= rows_.size()) return {};
  const TuneRow& r = rows_[static_cast<size_t>(row)];
  const Evaluated* e = &r.predicted;
  if (which == Point::kMeasured && r.live) e = &r.live->measured;
  if (which == Point::kCalibrated && r.live && r.live->recalibrated) e = &*r.live->recalibrated;
  return pixel(e->p99_ms, e->throughput_rps).toPoint();
}

std::optional<TunePlot::Hit> TunePlot::hit(const QPoint& pos) const {
  std::optional<Hit> best;
  auto consider = [&](const Evaluated& e, int row, size_t at, bool measured) {
    if (e.ok == 0) return;
    const double d = std::hypot(pixel(e.p99_ms, e.throughput_rps).x() - pos.x(),
                                pixel(e.p99_ms, e.throughput_rps).y() - pos.y());
    if (d <= kPickPx && (!best || d < best->distance)) best = Hit{d, row, at, measured};
  };
  // The rows first: a grey point under a row's point is the same prediction.
  for (size_t i = 0; i < rows_.size(); ++i) {
    consider(rows_[i].predicted, static_cast<int>(i), 0, false);
    if (rows_[i].live) consider(rows_[i].live->measured, static_cast<int>(i), 0, true);
    if (rows_[i].live && rows_[i].live->recalibrated) {
      consider(*rows_[i].live->recalibrated, static_cast<int>(i), 0, false);
    }
  }
  if (best) return best;
  for (size_t i = 0; i < evaluated_.size(); ++i) consider(evaluated_[i], -1, i, false);
  return best;
}

std::optional<int> TunePlot::row_at(const QPoint& pos) const {
  const auto h = hit(pos);
  if (!h || h->row < 0) return std::nullopt;
  return h->row;
}

QString TunePlot::text_at(const QPoint& pos) const {
  const auto h = hit(pos);
  if (!h) return {};
  if (h->row < 0) {
    const Evaluated& e = evaluated_[h->evaluated];
    return options_brief(e.options) + "\n" + figures("predicted", e) +
           "\nNot on the Pareto front: another configuration does better on every figure.";
  }
  const TuneRow& r = rows_[static_cast<size_t>(h->row)];
  QString text = options_brief(r.predicted.options);
  if (best_row_ && *best_row_ == static_cast<size_t>(h->row)) text += "  ★ best";
  text += "\n" + figures("predicted", r.predicted);
  if (r.live) {
    text += "\n" + figures("measured", r.live->measured) + QString(" (%1 runs)").arg(r.live->runs);
    if (r.live->recalibrated) text += "\n" + figures("calibrated", *r.live->recalibrated);
  }
  if (r.alike > 0) text += QString("\n%1 more configurations predict the same").arg(r.alike);
  if (!r.on_front) text += "\nNot on the Pareto front.";
  text += "\nClick to select it in the table.";
  return text;
}

}  // namespace batchscope

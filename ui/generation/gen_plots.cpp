// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_plots.h"

#include <qcustomplot.h>

#include "ui/common/plot_panels.h"

#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

namespace batchscope {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

QCPGraph* line(QCustomPlot* plot, QCPAxisRect* rect, const QString& name, QColor color,
               Qt::PenStyle style = Qt::SolidLine, double width = 1.6) {
  QCPGraph* g = plot->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  g->setName(name);
  g->setPen(QPen(color, width, style));
  g->setLineStyle(QCPGraph::lsStepLeft);
  return g;
}

void set(QCPGraph* g, const std::vector<double>& x, const std::vector<double>& y) {
  g->setData(QVector<double>(x.begin(), x.end()), QVector<double>(y.begin(), y.end()), true);
}

void fit_y(QCPAxisRect* rect, double span) {
  double upper = 0;
  for (QCPAbstractPlottable* p : rect->plottables()) {
    bool found = false;
    const QCPRange r = p->getValueRange(found, QCP::sdBoth, QCPRange(-span, 0));
    if (found) upper = std::max(upper, r.upper);
  }
  rect->axis(QCPAxis::atLeft)->setRange(0, std::max(1.0, upper * 1.15));
}

int valued(const QCPGraph* g) {
  int n = 0;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
    if (!std::isnan(it->value)) ++n;
  return n;
}

// A fan: p99 over p90 over p50, the bands between them filled.
void fan(QCPGraph* p50, QCPGraph* p90, QCPGraph* p99, QColor light, QColor mid) {
  p99->setBrush(QColor(light.red(), light.green(), light.blue(), 60));
  p99->setChannelFillGraph(p90);
  p90->setBrush(QColor(mid.red(), mid.green(), mid.blue(), 70));
  p90->setChannelFillGraph(p50);
}

}  // namespace

GenPlotSeries gen_plot_series(const std::deque<GenWindow>& windows, double span_s,
                              size_t skip_newest) {
  GenPlotSeries out;
  if (windows.size() <= skip_newest) return out;
  const size_t end = windows.size() - skip_newest;
  const Duration length = windows[end - 1].length;
  const double length_s = seconds(length);
  out.newest = windows[end - 1].start + length;
  size_t first = end;  // the windows in the span, and the one before it so lines reach the edge
  while (first > 0 && seconds(windows[first - 1].start - out.newest) >= -span_s - length_s) --first;
  for (size_t i = first; i < end; ++i) {
    const GenWindow& w = windows[i];
    const double per_s = length_s > 0 ? 1.0 / length_s : 0;
    out.x.push_back(seconds(w.start - out.newest));
    const bool t = !w.ttft_ns.empty();
    out.ttft_p50_ms.push_back(t ? ms(w.ttft_ns.quantile(0.5)) : kNaN);
    out.ttft_p90_ms.push_back(t ? ms(w.ttft_ns.quantile(0.9)) : kNaN);
    out.ttft_p99_ms.push_back(t ? ms(w.ttft_ns.quantile(0.99)) : kNaN);
    const bool g = !w.itl_ns.empty();
    out.itl_p50_ms.push_back(g ? ms(w.itl_ns.quantile(0.5)) : kNaN);
    out.itl_p90_ms.push_back(g ? ms(w.itl_ns.quantile(0.9)) : kNaN);
    out.itl_p99_ms.push_back(g ? ms(w.itl_ns.quantile(0.99)) : kNaN);
    out.output_tps.push_back(static_cast<double>(w.output_tokens) * per_s);
    out.prefill_tps.push_back(static_cast<double>(w.prefill_tokens) * per_s);
    const bool s = w.steps > 0;
    const double steps = static_cast<double>(w.steps);
    out.running_mean.push_back(s ? static_cast<double>(w.running_sum) / steps : kNaN);
    out.running_max.push_back(s ? w.running_max : kNaN);
    out.waiting_mean.push_back(s ? static_cast<double>(w.waiting_sum) / steps : kNaN);
    out.blocks_used.push_back(s ? w.blocks_used_max : kNaN);
    out.blocks_total.push_back(s ? w.blocks_total : kNaN);
  }
  return out;
}

GenPlots::GenPlots(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  plot_ = new QCustomPlot;
  layout->addWidget(plot_);
  make_panels();
}

void GenPlots::make_panels() {
  prepare_stacked_plot(plot_, 560, 480);
  auto add_rect = [&](const QString& ylabel) { return add_panel(plot_, ylabel); };
  ttft_ = add_rect("TTFT (ms)");
  itl_ = add_rect("ITL (ms)");
  tps_ = add_rect("tokens / s");
  seqs_ = add_rect("sequences");
  cache_ = add_rect("cache blocks");
  cache_->axis(QCPAxis::atBottom)->setLabel("seconds ago");
  auto* layout = plot_->plotLayout();
  int row = 0;
  for (QCPAxisRect* r : {ttft_, itl_, tps_, seqs_, cache_}) layout->addElement(row++, 0, r);
  auto* group = new QCPMarginGroup(plot_);
  for (QCPAxisRect* r : {ttft_, itl_, tps_, seqs_, cache_}) r->setMarginGroup(QCP::msLeft, group);

  ttft99_ = line(plot_, ttft_, "p99", QColor(110, 160, 220));
  ttft90_ = line(plot_, ttft_, "p90", QColor(40, 100, 190));
  ttft50_ = line(plot_, ttft_, "p50", QColor(10, 40, 120), Qt::SolidLine, 2.0);
  fan(ttft50_, ttft90_, ttft99_, QColor(110, 160, 220), QColor(40, 100, 190));
  itl99_ = line(plot_, itl_, "p99", QColor(230, 150, 90));
  itl90_ = line(plot_, itl_, "p90", QColor(200, 100, 20));
  itl50_ = line(plot_, itl_, "p50", QColor(120, 50, 0), Qt::SolidLine, 2.0);
  fan(itl50_, itl90_, itl99_, QColor(230, 150, 90), QColor(200, 100, 20));
  out_tps_ = line(plot_, tps_, "output", QColor(30, 30, 30), Qt::SolidLine, 1.8);
  prefill_tps_ = line(plot_, tps_, "prefill", QColor(130, 130, 130), Qt::DashLine, 1.4);
  running_ = line(plot_, seqs_, "running (mean)", QColor(20, 130, 90), Qt::SolidLine, 1.8);
  running_->setBrush(QColor(20, 130, 90, 40));
  running_max_ = line(plot_, seqs_, "running (max)", QColor(120, 120, 120), Qt::DashLine, 1.0);
  waiting_ = line(plot_, seqs_, "waiting (mean)", QColor(210, 40, 40), Qt::SolidLine, 1.6);
  blocks_ = line(plot_, cache_, "in use (max)", QColor(120, 60, 160), Qt::SolidLine, 1.8);
  blocks_->setBrush(QColor(120, 60, 160, 40));
  blocks_total_ = line(plot_, cache_, "pool", QColor(120, 120, 120), Qt::DotLine, 1.2);
  for (QCPAxisRect* r : {ttft_, itl_, tps_, seqs_, cache_}) {
    auto* legend = panel_legend(r);
    for (QCPGraph* g : r->graphs()) legend->addItem(new QCPPlottableLegendItem(legend, g));
  }
  plot_->setInteractions(QCP::iRangeZoom);
  plot_->setMouseTracking(true);
  connect(plot_, &QCustomPlot::mouseMove, this,
          [this](QMouseEvent* e) { hover(e->pos(), e->globalPosition().toPoint()); });
}

void GenPlots::hover(const QPoint& pos, const QPoint& global) {
  QCPAxisRect* rect = plot_->axisRectAt(pos);
  if (!rect) return QToolTip::hideText();
  const double at = rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
  const QString text = hover_readout(rect, at);
  QToolTip::showText(global, text, plot_);
}

bool GenPlots::draw(const GenMetrics& m, double span_s) {
  const auto& windows = m.windows();
  if (windows.size() < 2) return false;
  const TimePoint newest = windows[windows.size() - 2].start;
  if (newest == drawn_newest_ && !dirty_) return false;
  const GenPlotSeries p = gen_plot_series(windows, span_s);
  if (p.x.empty()) return false;
  drawn_newest_ = newest;
  dirty_ = false;
  set(ttft50_, p.x, p.ttft_p50_ms);
  set(ttft90_, p.x, p.ttft_p90_ms);
  set(ttft99_, p.x, p.ttft_p99_ms);
  set(itl50_, p.x, p.itl_p50_ms);
  set(itl90_, p.x, p.itl_p90_ms);
  set(itl99_, p.x, p.itl_p99_ms);
  set(out_tps_, p.x, p.output_tps);
  set(prefill_tps_, p.x, p.prefill_tps);
  set(running_, p.x, p.running_mean);
  set(running_max_, p.x, p.running_max);
  set(waiting_, p.x, p.waiting_mean);
  set(blocks_, p.x, p.blocks_used);
  set(blocks_total_, p.x, p.blocks_total);
  // Until the span has filled, the x axis covers the data (and 10 s at least).
  const double shown = std::min(span_s, std::max(10.0, -p.x.front()));
  for (QCPAxisRect* r : {ttft_, itl_, tps_, seqs_, cache_}) {
    r->axis(QCPAxis::atBottom)->setRange(-shown, 0);
    fit_y(r, shown);
  }
  // The pool dwarfs a light load's blocks: its line joins the scale only
  // once half of it is in use, and its size is in the legend either way.
  double used = 0, pool = 0;
  for (size_t i = 0; i < p.x.size(); ++i) {
    if (std::isnan(p.blocks_used[i])) continue;
    used = std::max(used, p.blocks_used[i]);
    pool = std::max(pool, p.blocks_total[i]);
  }
  blocks_total_->setName(QString("pool: %1 blocks").arg(pool));
  if (used < pool / 2) cache_->axis(QCPAxis::atLeft)->setRange(0, std::max(4.0, used * 1.3));
  // Each legend to a corner where it hides no line (as laid out last tick).
  for (QCPAxisRect* r : {ttft_, itl_, tps_, seqs_, cache_}) place_legend_clear(r, panel_legend(r));
  plot_->replot(QCustomPlot::rpQueuedReplot);
  return true;
}

void GenPlots::clear() {
  drawn_newest_ = TimePoint{};
  dirty_ = true;
  for (QCPGraph* g : {ttft50_, ttft90_, ttft99_, itl50_, itl90_, itl99_, out_tps_, prefill_tps_,
                      running_, running_max_, waiting_, blocks_, blocks_total_})
    g->data()->clear();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

int GenPlots::ttft_points() const { return valued(ttft50_); }
int GenPlots::itl_points() const { return valued(itl50_); }
int GenPlots::throughput_points() const { return valued(out_tps_); }

}  // namespace batchscope

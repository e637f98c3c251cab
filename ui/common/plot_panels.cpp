// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/plot_panels.h"

#include <qcustomplot.h>
#include <QSet>

#include <cmath>

namespace batchscope {

void prepare_stacked_plot(QCustomPlot* plot, int min_width, int min_height) {
  plot->setAutoAddPlottableToLegend(false);  // each panel has a legend of its own
  plot->plotLayout()->clear();
  plot->setMinimumSize(min_width, min_height);
  // Plain polylines without antialiasing: a tick with five minutes of
  // history stays within a few milliseconds (bench_ui).
  plot->setPlottingHint(QCP::phFastPolylines, true);
  // One paint buffer, not two: nothing is drawn on the overlay layer, and each
  // buffer costs a clear and a blend of the whole plot per replot.
  plot->layer("overlay")->setMode(QCPLayer::lmLogical);
  plot->setNotAntialiasedElements(QCP::aePlottables | QCP::aeFills);
}

QCPAxisRect* add_panel(QCustomPlot* plot, const QString& ylabel) {
  auto* r = new QCPAxisRect(plot);
  r->axis(QCPAxis::atLeft)->setLabel(ylabel);
  r->axis(QCPAxis::atBottom)->setRange(-60, 0);
  r->setRangeZoom(Qt::Vertical);
  auto* legend = new QCPLegend;
  r->insetLayout()->addElement(legend, Qt::AlignTop | Qt::AlignLeft);
  legend->setLayer("legend");
  legend->setFont(QFont(plot->font().family(), 8));
  legend->setRowSpacing(0);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setBrush(QColor(255, 255, 255, 200));
  r->setProperty("legend", QVariant::fromValue(static_cast<void*>(legend)));
  return r;
}

QCPLegend* panel_legend(QCPAxisRect* panel) {
  return static_cast<QCPLegend*>(panel->property("legend").value<void*>());
}

namespace {

// The data points of `rect`'s visible plottables that fall inside `area`.
int points_inside(QCPAxisRect* rect, const QRectF& area) {
  int n = 0;
  for (QCPAbstractPlottable* p : rect->plottables()) {
    QCPPlottableInterface1D* d = p->interface1D();
    if (!p->visible() || !d || !p->keyAxis()) continue;
    const QCPRange keys = p->keyAxis()->range();
    const int end = d->findEnd(keys.upper, true);
    for (int i = d->findBegin(keys.lower, true); i < end; ++i) {
      const double value = d->dataMainValue(i);
      if (std::isnan(value)) continue;
      double x = 0, y = 0;
      p->coordsToPixels(d->dataMainKey(i), value, x, y);
      if (area.contains(x, y)) ++n;
    }
  }
  return n;
}

}  // namespace

int place_legend_clear(QCPAxisRect* rect, QCPLegend* legend) {
  QCPLayoutInset* inset = rect->insetLayout();
  const int index = inset->elements(false).indexOf(legend);
  if (index < 0 || !legend->visible()) return 0;
  const QRect inner = rect->rect();
  QSize size = legend->outerRect().size();
  if (size.isEmpty()) size = legend->minimumOuterSizeHint();
  if (inner.isEmpty() || size.isEmpty()) return 0;
  const auto corner = [&](Qt::Alignment a) {
    const double x = (a & Qt::AlignLeft) ? inner.left() : inner.right() - size.width();
    const double y = (a & Qt::AlignTop) ? inner.top() : inner.bottom() - size.height();
    return QRectF(x, y, size.width(), size.height());
  };
  const Qt::Alignment now = inset->insetAlignment(index);
  const int hidden_now = points_inside(rect, corner(now));
  if (hidden_now == 0) return 0;
  Qt::Alignment best = now;
  int hidden_best = hidden_now;
  for (Qt::Alignment a : {Qt::AlignTop | Qt::AlignLeft, Qt::AlignTop | Qt::AlignRight,
                          Qt::AlignBottom | Qt::AlignLeft, Qt::AlignBottom | Qt::AlignRight}) {
    const int hidden = points_inside(rect, corner(a));
    if (hidden < hidden_best) {
      best = a;
      hidden_best = hidden;
    }
  }
  if (hidden_best > 0) {
    // Every corner hides some: the value axes grow at the top by the
    // legend's height, which leaves the top corners empty.
    const double share = (size.height() + 2.0) / inner.height();
    if (share < 0.5) {
      QSet<QCPAxis*> grown;
      for (QCPAbstractPlottable* p : rect->plottables()) {
        QCPAxis* axis = p->valueAxis();
        if (!p->visible() || !axis || grown.contains(axis)) continue;
        grown.insert(axis);
        const QCPRange r = axis->range();
        if (axis->rangeReversed() || axis->scaleType() != QCPAxis::stLinear) continue;
        axis->setRange(r.lower, r.lower + r.size() / (1.0 - share));
      }
      best =
          (now & Qt::AlignRight) ? (Qt::AlignTop | Qt::AlignRight) : (Qt::AlignTop | Qt::AlignLeft);
      hidden_best = 0;
    }
  }
  if (best != now) inset->setInsetAlignment(index, best);
  return hidden_best;
}

QString hover_readout(const QCPAxisRect* panel, double at, const QCPGraph* skip) {
  QString text = QString("%1 s ago").arg(-at, 0, 'f', 1);
  for (QCPGraph* g : panel->graphs()) {
    if (g == skip || !g->visible() || g->data()->isEmpty()) continue;
    auto it = g->data()->findBegin(at);  // the last point before `at`, or the first
    if (it == g->data()->constEnd() || it->key > at || std::isnan(it->value)) continue;
    text += QString("\n%1: %2").arg(g->name()).arg(it->value, 0, 'g', 4);
  }
  return text;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/plot_panels.h"

#include <qcustomplot.h>

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

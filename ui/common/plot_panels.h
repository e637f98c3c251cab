// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Stacked live plots share a look: one QCustomPlot with plain polylines and a
// single paint buffer, and panels (axis rects) each with its label and its
// own legend in its top-left corner, and a mouse readout of the values.
// Used by the live plots of request-level batching and by the generation
// view.
// Thread-safety: GUI thread only.

#include <QString>

class QCPAxisRect;
class QCPGraph;
class QCPLegend;
class QCustomPlot;

namespace batchscope {

// Clears `plot` and sets it up for fast redraws at `min_width` x `min_height`.
void prepare_stacked_plot(QCustomPlot* plot, int min_width, int min_height);
// A new panel showing the last 60 s, with `ylabel` and a legend of its own;
// the caller places it in the plot's layout.
QCPAxisRect* add_panel(QCustomPlot* plot, const QString& ylabel);
// The legend add_panel() gave `panel`.
QCPLegend* panel_legend(QCPAxisRect* panel);
// Moves `legend`, an inset of `rect`, to a corner of `rect` where it hides
// no data point of the visible plottables (as `rect` was last laid out). It
// stays where it is while it hides none, so a live plot's legend does not
// jump about. Where every corner hides some, the linear value axes grow at
// the top by the legend's height and it goes to a top corner. Returns the
// number it hides where it ends up (0 but for a legend over half the plot's
// height).
int place_legend_clear(QCPAxisRect* rect, QCPLegend* legend);
// What the mouse at `at` seconds on `panel`'s time axis reads out: how long
// ago that is, then "name: value" for each visible graph but `skip` whose
// point at or before `at` has a value (a point's key is its bin's start, so
// left of a graph's first point there is nothing to read).
QString hover_readout(const QCPAxisRect* panel, double at, const QCPGraph* skip = nullptr);

}  // namespace batchscope

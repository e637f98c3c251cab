// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Tuner panel's Pareto scatter: p99 latency (log scale) across,
// throughput up. Every configuration evaluated is a faint grey dot; the rows
// of the table (the distinct Pareto front, the best, the confirmed) are blue
// circles; a configuration confirmed live adds an orange diamond where it was
// measured, joined to its prediction by a dashed line, and a purple triangle
// where it is predicted again once the live runs have calibrated t(b) (the
// closer the triangle to the diamond, the truer the calibrated model); the
// best has a star;
// the SLO is a red vertical line; the row selected in the table has a ring.
// A row whose prediction has a band (tuning/tune_headroom.h) carries a
// horizontal bar across it: its p99 from t(b) at the band's fast end to
// its slow end.
// Hovering near a point reads out its options and figures; clicking a row's
// point calls the pick callback with its row (the panel selects it in the
// table).
// Thread-safety: GUI thread only.

#include <QPoint>
#include <QString>
#include <QWidget>
#include <functional>
#include <optional>
#include <vector>

#include "ui/tuner/tune_table.h"

class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCPItemLine;
class QCustomPlot;

namespace batchscope {

class TunePlot : public QWidget {
 public:
  explicit TunePlot(QWidget* parent = nullptr);

  // Draws what a search evaluated, with `rows` (tune_rows()) and the SLO.
  void show_result(const std::vector<Evaluated>& evaluated, const std::vector<TuneRow>& rows,
                   std::optional<size_t> best, double slo_p99_ms);
  // An empty plot with `note` in the middle.
  void clear(const QString& note);
  void set_selected(std::optional<size_t> row);
  // Called with the row whose point was clicked.
  void set_on_pick(std::function<void(int row)> f) { on_pick_ = std::move(f); }

  // What hovering at `pos` (plot pixels) reads out; empty when no point is
  // within a few pixels.
  QString text_at(const QPoint& pos) const;
  // The row whose point (predicted or measured) is nearest `pos`, within a
  // few pixels.
  std::optional<int> row_at(const QPoint& pos) const;
  // Where row `row`'s predicted (or measured, or calibrated) point is drawn,
  // in plot pixels.
  enum class Point { kPredicted, kMeasured, kCalibrated };
  QPoint pixel_of(int row, Point which) const;
  QPoint pixel_of(int row, bool measured = false) const {
    return pixel_of(row, measured ? Point::kMeasured : Point::kPredicted);
  }
  QCustomPlot* plot() const { return plot_; }

 private:
  struct Hit {
    double distance;
    int row;  // -1: an evaluated point that is no row
    size_t evaluated;
    bool measured;
  };
  std::optional<Hit> hit(const QPoint& pos) const;
  QPointF pixel(double p99_ms, double rps) const;
  void clear_items();

  QCustomPlot* plot_ = nullptr;
  QCPGraph* all_ = nullptr;
  QCPGraph* front_ = nullptr;
  QCPGraph* live_ = nullptr;
  QCPGraph* calibrated_ = nullptr;
  QCPGraph* best_ = nullptr;
  QCPGraph* selected_ = nullptr;
  QCPItemStraightLine* slo_line_ = nullptr;
  QCPItemText* slo_label_ = nullptr;
  QCPItemText* note_ = nullptr;
  std::vector<QCPItemLine*> links_;
  std::vector<QCPItemLine*> bands_;
  std::vector<Evaluated> evaluated_;
  std::vector<TuneRow> rows_;
  std::optional<size_t> best_row_;
  double slo_p99_ms_ = 0;
  QPointF press_at_;
  std::function<void(int)> on_pick_;
};

}  // namespace batchscope

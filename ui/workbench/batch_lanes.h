// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The batch inspector's timeline bars: one QCustomPlot plottable that draws
// every kept batch in the visible range, one row per lane, a pale bar from
// its oldest arrival to the cut and a dark one while it ran, so a repaint is
// one pass over the kept batches and nothing is allocated per batch.
// Thread-safety: GUI thread only.

#include <qcustomplot.h>

#include <deque>
#include <optional>

#include "ui/workbench/batch_table.h"

namespace batchscope {

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

  // The batch drawn under a pixel, if any (a few pixels of slack).
  std::optional<uint64_t> hit(QPointF px) const;

  double selectTest(const QPointF&, bool, QVariant*) const override { return -1; }

  QCPRange getKeyRange(bool& found, QCP::SignDomain) const override;

  QCPRange getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const override {
    found = true;
    return QCPRange(-0.5, lanes_ - 0.5);
  }

 protected:
  void draw(QCPPainter* painter) override;

  void drawLegendIcon(QCPPainter*, const QRectF&) const override {}

 private:
  const std::deque<InspectedBatch>& rows_;
  TimePoint origin_{};
  int lanes_ = 1;
  std::optional<uint64_t> highlight_;
};

}  // namespace batchscope

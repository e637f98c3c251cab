// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/batch_lanes.h"

#include <algorithm>
#include <cmath>

namespace batchscope {
namespace {

// Where a batch's bars sit inside its lane's row (value units, lane L at
// the row's centre; the axis is reversed so lane 0 is on top).
constexpr double kFormTop = -0.38, kFormBottom = -0.06;
constexpr double kRunTop = -0.02, kRunBottom = 0.38;

}  // namespace

std::optional<uint64_t> BatchLanes::hit(QPointF px) const {
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
    const double lo = running_half ? ms(b.run_start) : ms(batch_arrival(b));
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

QCPRange BatchLanes::getKeyRange(bool& found, QCP::SignDomain) const {
  found = !rows_.empty();
  QCPRange r(0, 0);
  for (const InspectedBatch& ib : rows_) {
    r.lower = std::min(r.lower, ms(batch_arrival(ib.batch)));
    r.upper = std::max(r.upper, ms(ib.batch.run_end));
  }
  return r;
}

void BatchLanes::draw(QCPPainter* painter) {
  const QCPRange xr = keyAxis()->range();
  auto rect = [this](double x0, double x1, double lane, double top, double bottom, double min_px) {
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
    const double a = ms(batch_arrival(b)), c = ms(b.batched);
    const double s = ms(b.run_start), e = ms(b.run_end);
    if (std::max(c, e) < xr.lower || a > xr.upper) continue;
    const double lane = b.lane;
    const QColor colour = batch_colour(b);
    painter->setBrush(batch_pale(colour));
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
    painter->drawRect(rect(ms(batch_arrival(b)), ms(b.batched), lane, kFormTop, kFormBottom, 1.0)
                          .adjusted(-1, -1, 1, 1));
    painter->drawRect(rect(ms(b.run_start), ms(b.run_end), lane, kRunTop, kRunBottom, 2.0)
                          .adjusted(-1, -1, 1, 1));
  }
}

}  // namespace batchscope

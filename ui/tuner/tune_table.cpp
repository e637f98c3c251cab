// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/tuner/tune_table.h"

#include <QColor>
#include <QFont>
#include <QLocale>
#include <algorithm>
#include <cmath>

#include "tuning/tune_headroom.h"
#include "ui/common/number_text.h"

namespace batchscope {

namespace {

QString wait_ms(const Options& o) {
  return QString::number(static_cast<double>(o.max_wait_us) / 1000.0, 'g', 4);
}

QString figures_tip(const char* what, const Evaluated& e) {
  return QString("%1: %2 req/s · p50 %3 ms · p99 %4 ms · %5% lost")
      .arg(what)
      .arg(number_text(e.throughput_rps, 1), ms_text(e.p50_ms), ms_text(e.p99_ms),
           number_text(100.0 * e.loss_rate(), 2));
}

}  // namespace

QString options_brief(const Options& o) {
  return QString("%1 · batch %2 · wait %3 ms · %4 %5")
      .arg(strategy_name(o.strategy))
      .arg(o.max_batch_size)
      .arg(wait_ms(o))
      .arg(o.num_lanes)
      .arg(o.num_lanes == 1 ? "lane" : "lanes");
}

std::vector<TuneRow> tune_rows(const TuneResult& r, std::span<const Confirmed> confirmed,
                               const std::optional<Options>& best, std::optional<size_t>* best_row,
                               std::span<const Evaluated> checked) {
  std::vector<TuneRow> rows;
  for (const FrontPoint& f : distinct_front(r.pareto)) {
    rows.push_back(TuneRow{r.pareto[f.index], f.alike, true, std::nullopt});
  }
  auto find = [&rows](const Options& o) -> TuneRow* {
    for (TuneRow& row : rows) {
      if (row.predicted.options == o) return &row;
    }
    return nullptr;
  };
  // The winner and the confirmed may sit off the front: the throughput band
  // counts near-equal throughputs as equal, and folding keeps one of alike
  // points. They get rows of their own.
  for (const Confirmed& c : confirmed) {
    if (TuneRow* row = find(c.predicted.options)) {
      row->live = c;
    } else {
      rows.push_back(TuneRow{c.predicted, 0, false, c});
    }
  }
  // The candidates ranked by headroom: their band and headroom on their row.
  for (const Evaluated& e : checked) {
    if (TuneRow* row = find(e.options)) {
      row->predicted.band = e.band;
      row->predicted.headroom = e.headroom;
      if (row->live) row->live->predicted = row->predicted;
    } else {
      rows.push_back(TuneRow{e, 0, false, std::nullopt});
    }
  }
  if (best && !find(*best)) {
    for (const Evaluated& e : r.evaluated) {
      if (e.options == *best) {
        rows.push_back(TuneRow{e, 0, false, std::nullopt});
        break;
      }
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const TuneRow& a, const TuneRow& b) {
    if (a.predicted.p99_ms != b.predicted.p99_ms) return a.predicted.p99_ms < b.predicted.p99_ms;
    return a.predicted.throughput_rps > b.predicted.throughput_rps;
  });
  if (best_row) {
    best_row->reset();
    for (size_t i = 0; best && i < rows.size(); ++i) {
      if (rows[i].predicted.options == *best) *best_row = i;
    }
  }
  return rows;
}

void TuneTableModel::set_rows(std::vector<TuneRow> rows, std::optional<size_t> best,
                              double slo_p99_ms, double needed) {
  needed_ = needed;
  beginResetModel();
  rows_ = std::move(rows);
  best_ = best;
  slo_p99_ms_ = slo_p99_ms;
  endResetModel();
}

void TuneTableModel::clear() { set_rows({}, std::nullopt, 0); }

int TuneTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int TuneTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant TuneTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const TuneRow& row = rows_[static_cast<size_t>(index.row())];
  const Evaluated& p = row.predicted;
  const bool is_best = best_ && *best_ == static_cast<size_t>(index.row());
  const int col = index.column();
  if (role == Qt::DisplayRole) {
    switch (col) {
      case kMark: return is_best ? QStringLiteral("★") : QString();
      case kStrategy: return QString(strategy_name(p.options.strategy));
      case kBatch: return p.options.max_batch_size;
      case kWait: return wait_ms(p.options);
      case kLanes: return p.options.num_lanes;
      case kThroughput: return number_text(p.throughput_rps, p.throughput_rps < 100 ? 1 : 0);
      case kP50: return ms_text(p.p50_ms);
      case kP99: return ms_text(p.p99_ms);
      case kLost: return number_text(100.0 * p.loss_rate(), 2);
      case kBand:
        return p.band ? ms_text(p.band->p99_ms.low) + "–" + ms_text(p.band->p99_ms.high)
                      : QString();
      case kHeadroom: {
        if (!p.headroom) return QString();
        const Headroom& h = *p.headroom;
        if (h.slowdown <= 0) return QStringLiteral("misses");
        QString t = QString("%1%2×").arg(h.slowdown_beyond ? "≥" : "").arg(h.slowdown, 0, 'f', 2);
        if (h.rate_applies) {
          t += QString(" · %1+%2%")
                   .arg(h.rate_beyond ? "≥" : "")
                   .arg(std::lround(100 * (h.rate - 1)));
        }
        return t;
      }
      case kLiveThroughput:
        return row.live ? number_text(row.live->measured.throughput_rps,
                                      row.live->measured.throughput_rps < 100 ? 1 : 0)
                        : QString();
      case kLiveP50: return row.live ? ms_text(row.live->measured.p50_ms) : QString();
      case kLiveP99: return row.live ? ms_text(row.live->measured.p99_ms) : QString();
      case kCalibratedP99:
        return row.live && row.live->recalibrated ? ms_text(row.live->recalibrated->p99_ms)
                                                  : QString();
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    if (col == kMark || col == kStrategy) return int(Qt::AlignLeft | Qt::AlignVCenter);
    return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role == Qt::FontRole && is_best) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::ForegroundRole) {
    const Evaluated& judged = row.live ? row.live->measured : p;
    if (!meets_slo(judged, slo_p99_ms_)) return QColor(0x88, 0x88, 0x88);
    if (col == kHeadroom && p.headroom && p.headroom->slowdown < needed_) {
      return QColor(0xd9, 0x60, 0x0b);
    }
    if (col == kMark) return QColor(0xc0, 0x80, 0x00);
    return {};
  }
  if (role == Qt::ToolTipRole) {
    QString tip = describe(p.options).c_str();
    if (is_best) tip.prepend("Best. ");
    tip += "\n" + figures_tip("predicted", p);
    if (row.live) {
      tip += "\n" + figures_tip("measured", row.live->measured) +
             QString(" (%1 runs, %2)")
                 .arg(row.live->runs)
                 .arg(row.live->stable ? "stable" : "not stable within the limit");
      if (row.live->recalibrated) {
        tip += "\n" + figures_tip("calibrated", *row.live->recalibrated) +
               " (predicted again with t(b) as the live runs ran it)";
      }
    }
    if (p.band) {
      tip += QString("\nBand, t(b) ×%1..×%2: p50 %3–%4 ms, p99 %5–%6 ms")
                 .arg(p.band->fast, 0, 'f', 2)
                 .arg(p.band->slow, 0, 'f', 2)
                 .arg(ms_text(p.band->p50_ms.low), ms_text(p.band->p50_ms.high),
                      ms_text(p.band->p99_ms.low), ms_text(p.band->p99_ms.high));
    }
    if (p.headroom) {
      tip += "\nHeadroom: " + QString::fromStdString(headroom_text(*p.headroom)) +
             (p.headroom->slowdown < needed_
                  ? QString(": fragile, short of the %1× asked for").arg(needed_, 0, 'f', 2)
                  : QString());
    }
    if (row.live && row.live->inside_band) {
      tip += *row.live->inside_band ? "\nMeasured inside the predicted band."
                                    : "\nMeasured outside the predicted band.";
    }
    if (row.alike > 0) tip += QString("\n%1 more configurations predict the same").arg(row.alike);
    if (!row.on_front) tip += "\nNot on the predicted Pareto front.";
    if (!meets_slo(row.live ? row.live->measured : p, slo_p99_ms_))
      tip += "\nDoes not meet the SLO.";
    return tip;
  }
  return {};
}

QVariant TuneTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    if (section == kCalibratedP99) {
      return QStringLiteral(
          "Predicted again with t(b) calibrated by the live runs (confirmed rows only)");
    }
    if (section >= kLiveThroughput) return QStringLiteral("Measured live (confirmed rows only)");
    if (section == kBand) {
      return QStringLiteral(
          "The p99 predicted again with t(b) at the band's ends: the kept drift's p10 and p90, "
          "or ±15% until it is known");
    }
    if (section == kHeadroom) {
      return QStringLiteral(
          "How much slower t(b), and how much higher the rate, before the SLO is missed "
          "(orange: short of what the tune asks)");
    }
    if (section >= kThroughput) return QStringLiteral("Predicted");
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  // Two lines where that keeps a column as narrow as its figures.
  static const char* const kNames[kColumnCount] = {"",
                                                   "strategy",
                                                   "batch",
                                                   "wait\nms",
                                                   "lanes",
                                                   "req/s",
                                                   "p50\nms",
                                                   "p99\nms",
                                                   "lost\n%",
                                                   "p99 band\nms",
                                                   "headroom\nt(b), rate",
                                                   "live\nreq/s",
                                                   "live\np50",
                                                   "live\np99",
                                                   "calib.\np99"};
  return section >= 0 && section < kColumnCount ? QString(kNames[section]) : QVariant();
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The rows the Tuner panel shows, in its table and on its Pareto scatter:
// the predicted Pareto front with points of the same figures folded into
// one, the best configuration (also where the throughput band puts it just
// off the front), the candidates ranked by headroom, and every
// configuration confirmed live, with its measured
// figures beside the predicted ones. Rows are sorted by predicted p99, then
// throughput (highest first).
//
// TuneTableModel shows them, one row each: a mark (★ for the best), strategy,
// max batch size, max wait, lanes, predicted req/s, p50, p99 and the share
// lost, the p99's band and the headroom (tuning/tune_headroom.h) where
// worked out, then the measured req/s, p50 and p99 where confirmed, and the
// p99 predicted again with t(b) calibrated by the live runs. The best row is
// bold; a row whose p99 is above the SLO (as measured when it was measured)
// is grey; a headroom short of what was asked is orange, "fragile".
// Thread-safety: GUI thread only; tune_rows() is a pure function.

#include <QAbstractTableModel>
#include <QString>
#include <optional>
#include <span>
#include <vector>

#include "tuning/tune_run.h"
#include "tuning/tuner.h"

namespace batchscope {

struct TuneRow {
  Evaluated predicted;
  size_t alike = 0;       // further front points with the same figures
  bool on_front = false;  // on the predicted Pareto front
  std::optional<Confirmed> live;
};

// The rows of a search and its confirmation. `best`: the winner's options
// (the best as measured when some were confirmed, else as predicted); its
// row goes in `best_row`. `checked`: the candidates ranked by headroom
// (HeadroomResult::checked), each a row with its band and headroom.
std::vector<TuneRow> tune_rows(const TuneResult& result, std::span<const Confirmed> confirmed,
                               const std::optional<Options>& best, std::optional<size_t>* best_row,
                               std::span<const Evaluated> checked = {});

// "fifo · batch 8 · wait 0.5 ms · 1 lane"
QString options_brief(const Options& o);

class TuneTableModel : public QAbstractTableModel {
 public:
  enum Column {
    kMark,
    kStrategy,
    kBatch,
    kWait,
    kLanes,
    kThroughput,
    kP50,
    kP99,
    kLost,
    kBand,
    kHeadroom,
    kLiveThroughput,
    kLiveP50,
    kLiveP99,
    kCalibratedP99,
    kColumnCount
  };

  explicit TuneTableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  // `needed`: the slowdown of t(b) a row's headroom should cover (0: none asked).
  void set_rows(std::vector<TuneRow> rows, std::optional<size_t> best, double slo_p99_ms,
                double needed = 0);
  void clear();
  const std::vector<TuneRow>& rows() const { return rows_; }
  const TuneRow& at(int row) const { return rows_[static_cast<size_t>(row)]; }
  std::optional<size_t> best() const { return best_; }

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<TuneRow> rows_;
  std::optional<size_t> best_;
  double slo_p99_ms_ = 0;
  double needed_ = 0;
};

}  // namespace batchscope

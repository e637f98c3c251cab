// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/batch_table.h"

#include <QBrush>
#include <algorithm>

namespace batchscope {

namespace {

const QColor kFullColour(0x2f, 0x74, 0xc0);
const QColor kTimeoutColour(0xc4, 0x4e, 0x00);
const QColor kDrainColour(0x70, 0x70, 0x70);
const QColor kFailedColour(0xb0, 0x1c, 0x2e);

}  // namespace

QColor batch_reason_colour(BatchReason reason) {
  switch (reason) {
    case BatchReason::kFull: return kFullColour;
    case BatchReason::kTimeout: return kTimeoutColour;
    case BatchReason::kDrain: return kDrainColour;
  }
  return kDrainColour;
}

QColor batch_failed_colour() { return kFailedColour; }

QColor batch_colour(const BatchRecord& b) {
  return b.failed ? kFailedColour : batch_reason_colour(b.reason);
}

QColor batch_pale(QColor c) {
  c.setAlpha(75);
  return c;
}

TimePoint batch_arrival(const BatchRecord& b) {
  return b.oldest_arrival != TimePoint{} ? b.oldest_arrival : b.batched;
}

double batch_formed_ms(const BatchRecord& b) { return to_ms(b.batched - batch_arrival(b)); }

double batch_ran_ms(const BatchRecord& b) {
  return b.run_end > b.run_start ? to_ms(b.run_end - b.run_start) : 0.0;
}

QString batch_ms_text(double ms) {
  const int decimals = ms < 1 ? 3 : ms < 100 ? 2 : 1;
  return QString::number(ms, 'f', decimals);
}

const char* batch_cut_why(const BatchRecord& b) {
  switch (b.reason) {
    case BatchReason::kFull: return "max_batch_size requests were waiting";
    case BatchReason::kTimeout: return "its oldest request had waited max_wait";
    case BatchReason::kDrain: return "the engine was stopping and emptied its queue";
  }
  return "";
}

BatchTableModel::BatchTableModel(size_t capacity, QObject* parent)
    : QAbstractTableModel(parent), capacity_(std::max<size_t>(capacity, 1)) {}

void BatchTableModel::add(std::vector<InspectedBatch> batches) {
  if (batches.empty()) return;
  if (batches.size() > capacity_) {
    batches.erase(batches.begin(), batches.end() - static_cast<std::ptrdiff_t>(capacity_));
  }
  const size_t n = batches.size();
  // Evict first, so the table never holds more than its capacity.
  if (rows_.size() + n > capacity_) {
    const size_t evict = rows_.size() + n - capacity_;
    beginRemoveRows(QModelIndex(), static_cast<int>(rows_.size() - evict),
                    static_cast<int>(rows_.size() - 1));
    rows_.erase(rows_.end() - static_cast<std::ptrdiff_t>(evict), rows_.end());
    endRemoveRows();
  }
  beginInsertRows(QModelIndex(), 0, static_cast<int>(n - 1));
  for (InspectedBatch& b : batches) rows_.push_front(std::move(b));
  endInsertRows();
}

void BatchTableModel::clear() {
  if (rows_.empty()) return;
  beginResetModel();
  rows_.clear();
  endResetModel();
}

int BatchTableModel::row_of(uint64_t id) const {
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].batch.id == id) return static_cast<int>(i);
  }
  return -1;
}

int BatchTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BatchTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant BatchTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const BatchRecord& b = rows_[static_cast<size_t>(index.row())].batch;
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case kId: return QVariant::fromValue<qulonglong>(b.id);
        case kLane: return int(b.lane);
        case kSize: return uint(b.size);
        case kReason: return QString(batch_reason_name(b.reason)) + (b.failed ? ", failed" : "");
        case kFormedMs: return batch_ms_text(batch_formed_ms(b));
        case kRanMs: return batch_ms_text(batch_ran_ms(b));
        case kDepthAfter: return uint(b.queue_depth_after);
        case kLongest: return b.longest > 0 ? QVariant(uint(b.longest)) : QVariant();
        case kWaste:
          return b.longest > 0 ? QVariant(QString::number(100.0 * padding_waste(b), 'f', 1))
                               : QVariant();
      }
      return {};
    case Qt::TextAlignmentRole:
      return column == kReason ? int(Qt::AlignLeft | Qt::AlignVCenter)
                               : int(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      if (b.failed) return QBrush(batch_failed_colour());
      return {};
    case Qt::ToolTipRole:
      if (column == kReason) return QString(batch_cut_why(b));
      if (column == kWaste && b.longest > 0) {
        return QString("%1 real of %2 padded positions (%3 requests padded to %4)")
            .arg(b.length_sum)
            .arg(static_cast<qulonglong>(b.size) * b.longest)
            .arg(b.size)
            .arg(b.longest);
      }
      return {};
  }
  return {};
}

QVariant BatchTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kId: return QStringLiteral("batch");
    case kLane: return QStringLiteral("lane");
    case kSize: return QStringLiteral("size");
    case kReason: return QStringLiteral("cut");
    case kFormedMs: return QStringLiteral("formed in ms");
    case kRanMs: return QStringLiteral("ran ms");
    case kDepthAfter: return QStringLiteral("queue after");
    case kLongest: return QStringLiteral("longest");
    case kWaste: return QStringLiteral("padding %");
  }
  return {};
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/runs/run_list.h"

#include <algorithm>

#include "ui/common/number_text.h"

namespace batchscope {

int RunListModel::add(RecordedRun run) {
  const int row = size();
  beginInsertRows(QModelIndex(), row, row);
  runs_.push_back(std::move(run));
  endInsertRows();
  return row;
}

void RunListModel::insert(int row, RecordedRun run) {
  row = std::clamp(row, 0, size());
  beginInsertRows(QModelIndex(), row, row);
  runs_.insert(runs_.begin() + row, std::move(run));
  endInsertRows();
}

void RunListModel::reset(std::vector<RecordedRun> runs) {
  beginResetModel();
  runs_ = std::move(runs);
  endResetModel();
}

void RunListModel::remove(int row) {
  if (row < 0 || row >= size()) return;
  beginRemoveRows(QModelIndex(), row, row);
  runs_.erase(runs_.begin() + row);
  endRemoveRows();
}

int RunListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : size();
}

int RunListModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const RecordedRun& r = runs_[static_cast<size_t>(index.row())];
  const RunSummary& s = r.summary;
  const int column = index.column();
  if (role == Qt::EditRole && column == kName) return r.name;
  if (role == Qt::TextAlignmentRole) {
    const bool text = column == kName || column == kStarted || column == kKind || column == kModel;
    return text ? int(Qt::AlignLeft | Qt::AlignVCenter) : int(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role == Qt::ToolTipRole) {
    const RunConfig& c = r.config;
    QString tip = QString("%1\npattern: %2 · target: %3 · model: %4\n%5")
                      .arg(r.name, QString::fromStdString(c.pattern.empty() ? "-" : c.pattern),
                           QString::fromStdString(c.target.empty() ? "-" : c.target),
                           QString::fromStdString(c.model.empty() ? "-" : c.model),
                           QString::fromStdString(describe(c.options)));
    if (r.history_id > 0) tip += QString("\nrun %1 in the history").arg(r.history_id);
    if (!r.finished) tip += "\nunfinished: the program ended while it was being recorded";
    return tip;
  }
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case kName: return r.name;
    case kStarted: return r.started;
    case kKind: return r.finished ? r.kind : r.kind + QStringLiteral(" · unfinished");
    case kModel: return QString::fromStdString(r.config.model);
    case kDuration: return number_text(r.config.duration_s, 1);
    case kSent: return QVariant::fromValue<qulonglong>(s.sent);
    case kOk: return QVariant::fromValue<qulonglong>(s.ok);
    case kRejected: return QVariant::fromValue<qulonglong>(s.rejected);
    case kP50: return s.ok ? ms_text(s.latency.p50_ms) : QStringLiteral("-");
    case kP99: return s.ok ? ms_text(s.latency.p99_ms) : QStringLiteral("-");
    case kThroughput: return QString::number(s.throughput_rps, 'f', 0);
    case kBatchMean: return number_text(s.batch_mean, 1);
  }
  return {};
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kName: return QStringLiteral("name");
    case kStarted: return QStringLiteral("started");
    case kKind: return QStringLiteral("kind");
    case kModel: return QStringLiteral("model");
    case kDuration: return QStringLiteral("duration (s)");
    case kSent: return QStringLiteral("sent");
    case kOk: return QStringLiteral("ok");
    case kRejected: return QStringLiteral("rejected");
    case kP50: return QStringLiteral("p50 ms");
    case kP99: return QStringLiteral("p99 ms");
    case kThroughput: return QStringLiteral("req/s");
    case kBatchMean: return QStringLiteral("mean batch");
  }
  return {};
}

Qt::ItemFlags RunListModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.isValid() && index.column() == kName) f |= Qt::ItemIsEditable;
  return f;
}

bool RunListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || index.column() != kName ||
      !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return false;
  const QString name = value.toString().trimmed();
  if (name.isEmpty()) return false;
  runs_[static_cast<size_t>(index.row())].name = name;
  emit dataChanged(index, index, {Qt::DisplayRole, Qt::EditRole});
  return true;
}

}  // namespace batchscope

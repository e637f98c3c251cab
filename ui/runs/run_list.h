// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The runs the Runs panel shows (RecordedRun): those recorded in this
// session and, with the run history on, those it keeps; listed one row each
// with their headline figures (RunListModel); a run's name is editable in
// place. A kept run's records are loaded only when something needs them
// (export); its summary, windows included, comes from the history's JSON.
// Thread-safety: GUI thread only.

#include <QAbstractTableModel>
#include <QString>
#include <memory>
#include <vector>

#include "runs/run_record.h"

namespace batchscope {

struct RecordedRun {
  QString name;
  std::shared_ptr<const RunData> data;  // shared with a running export; null until loaded
  RunSummary summary;
  RunConfig config;  // what it ran under (data->config once loaded)
  // The run history's side: its id there (0: not kept, or not written yet),
  // the writer's token for a run this session recorded, and what the list
  // shows of it.
  int64_t history_id = 0;
  uint64_t token = 0;
  QString kind = QStringLiteral("recorded");
  QString started;  // local time, "2026-11-28 19:40"
  bool finished = true;
  std::string context;  // JSON: machine, LibTorch, model file
  uint64_t key = 0;     // tells rows apart while they move
};

// The recorded runs, one row each, in the order they were recorded.
class RunListModel : public QAbstractTableModel {
 public:
  enum Column {
    kName,  // editable
    kStarted,
    kKind,
    kModel,
    kDuration,
    kSent,
    kOk,
    kRejected,
    kP50,
    kP99,
    kThroughput,
    kBatchMean,
    kColumnCount
  };

  explicit RunListModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  int add(RecordedRun run);  // returns its row
  void insert(int row, RecordedRun run);
  void remove(int row);
  // Replaces every row.
  void reset(std::vector<RecordedRun> runs);
  const RecordedRun& at(int row) const { return runs_[static_cast<size_t>(row)]; }
  RecordedRun& at(int row) { return runs_[static_cast<size_t>(row)]; }
  int size() const { return static_cast<int>(runs_.size()); }

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  // Renames a run (name column, EditRole); a blank name is refused.
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 private:
  std::vector<RecordedRun> runs_;
};

}  // namespace batchscope

#pragma once
// The recorded runs the Runs panel keeps (RecordedRun), listed one row each
// with their headline figures (RunListModel); a run's name is editable in
// place. Thread-safety: GUI thread only.

#include <QAbstractTableModel>
#include <QString>
#include <memory>
#include <vector>

#include "runs/run_record.h"

namespace batchscope {

struct RecordedRun {
  QString name;
  std::shared_ptr<const RunData> data;  // shared with a running export
  RunSummary summary;
};

// The recorded runs, one row each, in the order they were recorded.
class RunListModel : public QAbstractTableModel {
 public:
  enum Column {
    kName,  // editable
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
  void remove(int row);
  const RecordedRun& at(int row) const { return runs_[static_cast<size_t>(row)]; }
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

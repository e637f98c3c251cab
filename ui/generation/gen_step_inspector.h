// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The step inspector: a table of the generation engine's most recent steps,
// newest first — step number, when it ended (seconds ago), its duration,
// decodes, prefill chunks and tokens, output tokens, running and waiting
// sequences after it, cache blocks, preemptions, and the sequences it
// carried ("#12 #13 #20:48": a bare id decoded one token, id:N prefilled N
// prompt tokens). Keeps the last `capacity` steps (a few thousand); older
// ones fall off the bottom. A "follow" box keeps the view at the newest step;
// unticked, the rows stay where they are while new steps arrive above.
// Thread-safety: GUI thread only.

#include <QAbstractTableModel>
#include <QWidget>
#include <deque>
#include <vector>

#include "generation/gen_types.h"

class QCheckBox;
class QLabel;
class QTableView;

namespace batchscope {

class GenStepModel : public QAbstractTableModel {
 public:
  enum Column {
    kStep,
    kLane,
    kAgo,
    kDuration,
    kDecodes,
    kPrefills,
    kPrefillTokens,
    kOutput,
    kRunning,
    kWaiting,
    kBlocks,
    kPreempted,
    kSequences,
    kColumns
  };
  explicit GenStepModel(size_t capacity, QObject* parent = nullptr);

  // Appends steps (oldest first, as drained) and drops the oldest beyond capacity.
  void add(const std::vector<StepRecord>& steps);
  void clear();
  // "Seconds ago" is measured from this moment (the clock's now, each tick).
  void set_now(TimePoint now) { now_ = now; }

  // Row 0 is the newest step.
  const StepRecord& step_at(int row) const;
  size_t capacity() const { return capacity_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

  // "#12 #13 #20:48".
  static QString sequences_text(const StepRecord& s);

 private:
  size_t capacity_;
  std::deque<StepRecord> steps_;  // oldest first
  TimePoint now_{};
};

class GenStepInspector : public QWidget {
 public:
  explicit GenStepInspector(size_t capacity = 5000, QWidget* parent = nullptr);

  void add(const std::vector<StepRecord>& steps, TimePoint now);
  void clear();

  GenStepModel* model() const { return model_; }
  QTableView* table() const { return table_; }

 private:
  GenStepModel* model_ = nullptr;
  QTableView* table_ = nullptr;
  QCheckBox* follow_ = nullptr;
  QLabel* summary_ = nullptr;
  uint64_t seen_ = 0;
};

}  // namespace batchscope

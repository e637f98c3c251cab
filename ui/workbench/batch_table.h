// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The batch inspector's kept batches: a batch with its requests' queue waits
// (InspectedBatch), the table of them (BatchTableModel), and how a batch is
// described wherever the inspector shows one: its colour by why it was cut,
// how long it formed and ran, and the cut's reason in words.
// Thread-safety: GUI thread only.

#include <QAbstractTableModel>
#include <QColor>
#include <QString>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "runs/records.h"

namespace batchscope {

// A batch as the inspector keeps it: its record and the queue waits
// (batched - arrival) of the requests seen riding in it, sorted, in µs.
struct InspectedBatch {
  BatchRecord batch;
  std::vector<float> waits_us = {};
  // Their time in the model's preprocess pool before they were queued,
  // part of the wait: waiting for a process and in one, each sorted, in
  // µs; empty where none was spent (a model without one).
  std::vector<float> prepare_wait_us = {};
  std::vector<float> prepared_us = {};
  // Of its run, postprocess's time (a Python model's); 0 where none.
  float post_us = 0;
  // Of its run, the lane's preparing of its requests before the model (a
  // Python model at preprocess_workers 0); 0 where none.
  float lane_prepare_us = 0;
};

// The kept batches, newest first, as a table. Rows are added at the top and
// the oldest fall off the bottom once there are more than `capacity`.
class BatchTableModel : public QAbstractTableModel {
 public:
  // longest and padding: the batch's longest request and the share of its
  // padded positions that were padding (blank where lengths do not vary).
  enum Column {
    kId,
    kLane,
    kSize,
    kReason,
    kFormedMs,
    kRanMs,
    kDepthAfter,
    kLongest,
    kWaste,
    kColumnCount
  };

  explicit BatchTableModel(size_t capacity = 2000, QObject* parent = nullptr);

  // `batches` oldest first; they end up newest first at the top.
  void add(std::vector<InspectedBatch> batches);
  void clear();
  size_t capacity() const { return capacity_; }
  const InspectedBatch& at(int row) const { return rows_[static_cast<size_t>(row)]; }
  int row_of(uint64_t id) const;  // -1 when not kept
  const std::deque<InspectedBatch>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  size_t capacity_;
  std::deque<InspectedBatch> rows_;  // row 0 = front = newest
};

// A running bar's colour: by why the batch was cut, or failed. The forming
// bar is a pale wash of it (batch_pale), so "pale = waiting, dark = running".
QColor batch_reason_colour(BatchReason reason);
QColor batch_failed_colour();
QColor batch_colour(const BatchRecord& b);
QColor batch_pale(QColor c);
// The oldest request's arrival (the cut, when no request was seen).
TimePoint batch_arrival(const BatchRecord& b);
double batch_formed_ms(const BatchRecord& b);
double batch_ran_ms(const BatchRecord& b);
// Milliseconds with as many decimals as their size deserves.
QString batch_ms_text(double ms);
// Why the batch was cut, as a sentence's end.
const char* batch_cut_why(const BatchRecord& b);

}  // namespace batchscope

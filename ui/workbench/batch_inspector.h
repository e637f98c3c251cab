// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The batch inspector: the most recent batches the engine cut, and what one
// of them was made of.
//
//  - Timeline (QCustomPlot): one row per lane; each batch is a light bar from
//    its oldest request's arrival to the cut (forming) and a dark bar while it
//    ran, coloured by why it was cut. It follows the newest batches, showing
//    the last 25 to 250 of them; paused, it can be dragged and zoomed.
//  - Table (BatchTableModel): newest first, bounded like the store.
//  - Details of the batch clicked in either: id, lane, size, why it was cut,
//    how long it took to form and to run, the queue left behind, whether it
//    failed, and its requests' queue waits (min, median, max, a short list and
//    a histogram).
//
// It keeps the most recent `capacity` batches (default 2000) with the queue
// waits of their requests (4 bytes a request). add() takes what one monitor
// poll drained and updates the table at once; refresh() repaints the
// timeline only when something arrived since the last repaint, so a 30 Hz
// tick costs nothing while the engine is idle. While paused, arrivals are
// held back (the newest `capacity` of them) and shown on resuming, so that
// nothing moves under the user's pointer. A request is matched to its batch
// when both come in the same poll, as the engine reports them.
//
// Thread-safety: GUI thread only.

#include <QAbstractTableModel>
#include <QWidget>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "runs/records.h"
#include "ui/workbench/batch_table.h"

class QComboBox;
class QCPItemText;
class QCustomPlot;
class QLabel;
class QTableView;

namespace batchscope {

class BatchLanes;

class BatchInspector : public QWidget {
 public:
  explicit BatchInspector(size_t capacity = 2000, QWidget* parent = nullptr);

  // What one monitor poll drained (EngineMonitor::last_records()).
  void add(const RecordBatch& records);
  // Repaints the timeline if anything arrived since the last repaint.
  void refresh();
  // Paused: arrivals wait and the timeline holds still (and can be panned).
  void set_paused(bool paused);
  bool paused() const { return paused_; }
  void clear();

  // Shows the batch with this id in the details; false if it is not kept.
  bool select_batch(uint64_t id);
  std::optional<uint64_t> selected() const;
  // The batch drawn under a pixel of the timeline widget, if any.
  std::optional<uint64_t> batch_at(QPointF pixel) const;
  // How many of the newest batches the timeline spans (its menu offers 25 to
  // 250; default 50).
  void set_shown(int batches);

  QString details_text() const;
  QAbstractItemModel* model() const { return model_; }
  QCustomPlot* timeline() const { return timeline_; }
  QTableView* table() const { return table_; }
  size_t size() const { return model_->rows().size(); }

 private:
  // The longest and padding columns, shown once a batch has varying lengths.
  void show_padding(bool on);
  void make_timeline();
  void redraw();
  void follow_newest();
  void show_details();
  void show_waits(const InspectedBatch& b);
  std::vector<InspectedBatch> inspect(const RecordBatch& records) const;

  BatchTableModel* model_ = nullptr;
  QCustomPlot* timeline_ = nullptr;
  BatchLanes* lanes_ = nullptr;  // the timeline's bars
  QCPItemText* empty_note_ = nullptr;
  QTableView* table_ = nullptr;
  QComboBox* shown_box_ = nullptr;
  QLabel* details_ = nullptr;
  QCustomPlot* waits_plot_ = nullptr;

  std::deque<InspectedBatch> held_;  // arrivals while paused, oldest first
  std::optional<InspectedBatch> selected_;
  int shown_ = 50;
  bool paused_ = false;
  bool dirty_ = false;
  bool syncing_ = false;  // selecting the table's row from code
  QPointF press_at_;
};

}  // namespace batchscope

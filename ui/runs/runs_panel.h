#pragma once
// Recorded runs: record a stretch of the live traffic as a run, name it,
// compare two runs by overlaying their latency fans, and export a run the way
// `batchscope bench` does (JSON summary, CSV per request and per window,
// Chrome trace, PNG picture).
//
//  - Record/Stop feeds a RunRecorder from add(), which the window calls with
//    each poll's records; the run is tuned under what the config provider
//    says (options, pattern, target, model) and timed on the engine's clock.
//  - RunListModel lists the runs with their headline figures; the name is
//    editable in place.
//  - Compare overlays two runs over time since each run's start: per run the
//    p50 line and the p90..p99 band from its summary windows.
//  - Export writes NAME.json, NAME-requests.csv, NAME-windows.csv,
//    NAME-trace.json and NAME.png into a directory. The text files are built
//    and written on a thread of its own (they grow with the run); the PNG is
//    drawn afterwards on the GUI thread, which QCustomPlot needs. Progress
//    comes back as queued calls and shows under the table.
//
// Memory: a run keeps every request (about 64 bytes each) until removed.
// Thread-safety: GUI thread only. The export thread reads an immutable,
// shared copy of the run and nothing else; the destructor stops and joins it.

#include <QWidget>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "common/status.h"
#include "runs/run_record.h"
#include "runs/run_recorder.h"
#include "ui/runs/run_list.h"

class QCustomPlot;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace batchscope {

class RunsPanel : public QWidget {
 public:
  explicit RunsPanel(QWidget* parent = nullptr);
  ~RunsPanel() override;

  // What a new run is tuned under; asked once, when recording starts.
  // Default: target "inproc", default options.
  void set_config_provider(std::function<RunConfig()> provider);
  // "Now" on the engine's clock; default SteadyClock.
  void set_clock(std::function<TimePoint()> now);

  // What one monitor poll drained; kept only while recording.
  void add(const RecordBatch& records);

  // A blank name becomes "run N".
  void start_recording(const QString& name = QString());
  // The new run's row, or -1 when nothing was being recorded.
  int stop_recording();
  bool recording() const { return recorder_.recording(); }

  int run_count() const { return model_->size(); }
  const RecordedRun& run(int i) const { return model_->at(i); }
  bool rename(int i, const QString& name);
  void remove_run(int i);

  // Overlays runs i and j on the compare plot; false for a bad pair.
  bool compare(int i, int j);
  QCustomPlot* compare_plot() const { return compare_plot_; }

  // Writes the five files of run i into `dir` (made if missing) on this
  // thread and says what went wrong, naming the file.
  Status export_run_sync(int i, const QString& dir);
  // The same in the background; false if i is not a run or an export is
  // under way. exporting() turns false and export_status() says how it went
  // once it is done.
  bool export_run(int i, const QString& dir);
  bool exporting() const { return exporting_; }
  QString export_status() const;

  QAbstractItemModel* model() const { return model_; }
  QTableView* table() const { return table_; }

 private:
  void clear_compare(const QString& note);
  void finish_export(const RecordedRun& run, const QString& dir, const Status& text_files);
  std::vector<int> selected_rows() const;

  RunListModel* model_ = nullptr;
  RunRecorder recorder_;
  std::function<RunConfig()> config_;
  std::function<TimePoint()> now_;
  QString recording_name_;
  int runs_made_ = 0;

  QLineEdit* name_ = nullptr;
  QPushButton* record_ = nullptr;
  QLabel* rec_status_ = nullptr;
  QTableView* table_ = nullptr;
  QPushButton* compare_ = nullptr;
  QPushButton* export_ = nullptr;
  QPushButton* remove_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QCustomPlot* compare_plot_ = nullptr;
  std::vector<const RunData*> compared_;

  std::thread export_thread_;
  std::atomic<bool> export_cancel_{false};
  bool exporting_ = false;
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
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
//  - With the run history on (set_history), a recording is written to it as
//    it goes, from the writer's thread: each add() hands the new records
//    over, so a run recorded when the program dies is there after a restart,
//    marked unfinished. The list then shows the history, newest first,
//    filtered by model, kind and text; removing a run removes it from the
//    history after asking; renaming relabels it there; a kept run's records
//    are loaded when an export needs them. Compare also says where the two
//    runs' machine, model file, options and traffic differ.
//
// Memory: a run recorded here keeps every request (about 64 bytes each)
// until removed; a kept run holds its summary until its records are needed.
// Thread-safety: GUI thread only. The export thread reads an immutable,
// shared copy of the run and nothing else; the destructor stops and joins it.

#include <QWidget>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "common/status.h"
#include "runs/history.h"
#include "runs/run_record.h"
#include "runs/run_recorder.h"
#include "ui/runs/run_list.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace batchscope {

class HistoryWriter;

class RunsPanel : public QWidget {
 public:
  explicit RunsPanel(QWidget* parent = nullptr);
  ~RunsPanel() override;

  // What a new run is tuned under; asked once, when recording starts.
  // Default: target "inproc", default options.
  void set_config_provider(std::function<RunConfig()> provider);
  // "Now" on the engine's clock; default SteadyClock.
  void set_clock(std::function<TimePoint()> now);

  // The run history; null turns it off. The writer must outlive the panel
  // (or the next call). Reads go through a read-only connection of the
  // panel's own, which never waits for the writer (WAL).
  void set_history(HistoryWriter* writer);
  bool history_on() const { return writer_ != nullptr; }
  // The context a recording keeps (a JSON object: machine, LibTorch, model
  // file); asked when recording starts. Default: "{}".
  void set_context_provider(std::function<std::string()> context);
  // Called with each run recorded here, when its recording stops.
  void set_on_recorded(std::function<void(std::shared_ptr<const RunData>)> f) {
    on_recorded_ = std::move(f);
  }
  // A batchscope executable that draws a kept run's PNG in a process of its
  // own (`runs export ID --format png`), so that a large run's picture never
  // holds this thread; empty (the default): drawn here.
  void set_png_program(QString program) { png_program_ = std::move(program); }
  // Asked before the Remove button removes kept runs; default: a dialog.
  void set_confirm(std::function<bool(const QString& question)> confirm);
  // Re-reads the history under the filters (model, kind, text; empty: any).
  void set_filter(const QString& model, const QString& kind, const QString& text);
  void refresh_history();
  // Says in the panel why the history is off (a file that could not be
  // opened); runs recorded now stay in the window.
  void show_history_problem(const QString& why);
  // What the history side last said (a failure, a removal).
  QString history_status() const;
  // Removes the selected runs after asking, as the Remove button does.
  void remove_selected();

  // What one monitor poll drained; kept only while recording.
  void add(const RecordBatch& records);

  // A blank name becomes "run N". `kind` is the history's kind of run:
  // "recorded", or "serve" for the Server tab's Record switch.
  void start_recording(const QString& name = QString(),
                       const QString& kind = QStringLiteral("recorded"));
  // The new run's row, or -1 when nothing was being recorded.
  int stop_recording();
  bool recording() const { return recorder_.recording(); }

  int run_count() const { return model_->size(); }
  const RecordedRun& run(int i) const { return model_->at(i); }
  bool rename(int i, const QString& name);
  void remove_run(int i);

  // Loads run i's records from the history if they are not in memory;
  // false (saying why in the status) when they cannot be read.
  bool ensure_loaded(int i);
  // Whether run i's records are here or can be read from the history; says
  // why not in the status line.
  bool can_load(int i);
  // Keeps records read for an export with the run they belong to (by its
  // key), so that the next export need not read them again.
  void keep_loaded(uint64_t key, std::shared_ptr<const RunData> data);

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
  void end_export(const RecordedRun& r, const QString& dir, const Status& s);
  std::vector<int> selected_rows() const;
  void append_to_history();
  void relabel_in_history(int row);
  void resolve_history_ids();
  QString context_differences(const RecordedRun& a, const RecordedRun& b) const;
  void fill_model_filter();

  RunListModel* model_ = nullptr;
  RunRecorder recorder_;
  // What other processes use while a run records (a busy machine's run
  // refines no kept cost).
  std::optional<LoadWatch> others_;
  std::function<void(std::shared_ptr<const RunData>)> on_recorded_;
  std::function<RunConfig()> config_;
  std::function<TimePoint()> now_;
  QString recording_name_;
  QString recording_kind_ = QStringLiteral("recorded");
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
  std::vector<uint64_t> compared_;  // keys of the compared runs
  uint64_t next_key_ = 1;

  HistoryWriter* writer_ = nullptr;
  std::unique_ptr<History> reader_;
  std::function<std::string()> context_;
  std::function<bool(const QString&)> confirm_;
  uint64_t token_ = 0;             // the recording's, while the history is on
  std::string recording_context_;  // its context, asked when it began
  // Runs recorded here while the history is on, until the history lists
  // them: a filter that hides one must not lose it.
  std::vector<RecordedRun> pending_;
  size_t appended_requests_ = 0, appended_batches_ = 0, appended_depth_ = 0;
  HistoryFilter filter_;
  QWidget* filters_ = nullptr;
  QComboBox* model_filter_ = nullptr;
  QComboBox* kind_filter_ = nullptr;
  QLineEdit* text_filter_ = nullptr;
  QString history_status_;
  bool failure_shown_ = false;

  std::thread export_thread_;
  QString png_program_;
  std::atomic<bool> export_cancel_{false};
  bool exporting_ = false;
};

}  // namespace batchscope

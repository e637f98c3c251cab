// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The workbench's Tuner panel: which batching options serve the window's
// traffic best within a p99 objective, found as `batchscope tune` finds them
// (docs/tuning.md), and put in force or exported from the table.
//
//  - Inputs: the SLO (p99, ms), the objective (throughput or latency), how
//    many seconds of traffic each prediction and each live run replays, how
//    many of the best to confirm live (0..5), a time budget for the whole
//    run (as tune's --budget-s: half for the search when confirming, and no
//    live run starts after it), and the search space (checked as it is
//    typed; a bad entry is named). The traffic is the traffic panel's
//    pattern, shown here; the base options are those in force. The inputs
//    and the cost file are kept between sessions (save_settings()).
//  - Cost t(b): a cost file when one is chosen (File…: what `batchscope
//    profile --json` or `bench --cost-out` wrote, as tune's --cost; a bad
//    file is refused naming it and what is wrong), else the model's kept
//    cost on this machine (tuning/cost_cache.h), as tune and bench --target
//    predict use it: made at the first run from the loaded profile (the
//    synthetic model's formula) and a live calibration per lane count the
//    space searches (tuning/cost_calibration.h), a lane count it lacks added
//    the same way, with the window's traffic paused; every confirmation's
//    live runs refine it. A model with no cost at all cannot be tuned here,
//    and Run says so and stays disabled.
//  - Calibrate first (on by default, as tune's --calibrate): before the
//    search the traffic runs live once per lane count the space searches
//    (calibrate_live, tune_run.h), with the window's traffic paused, and
//    the search, the confirmations and their adaptive plans use the cost
//    those runs refined; the status says how far t(b) moved. A calibration
//    run that fails leaves the cost as it was, and the status says so.
//  - Run searches on a worker thread with a progress bar (the predictor
//    replays the traffic for every configuration), then confirms the best K
//    live, each on a fresh in-process engine from the model's runner factory
//    until its runs are stable. The window's own traffic pauses while they
//    run (it would share the cores and skew them) and resumes after. Cancel
//    stops the search before its next configuration and a live run at its
//    next send.
//  - The Pareto scatter (TunePlot) and the table (TuneTableModel) show the
//    front, the confirmed with their measured figures and their prediction
//    made again with t(b) calibrated by the live runs (calibrate(),
//    tune_run.h), apart from the first, and the best; when
//    nothing meets the SLO, the error names the closest configuration and
//    the front still shows. Clicking a point selects its row.
//  - Apply puts the selected row's options in force live through the
//    window; Export… opens the export dialog with them and the figures they
//    were tuned to (measured where confirmed); Save JSON… writes the last
//    run as `batchscope tune --json` does.
//
// Under load: the search takes what the predictor takes (well under a
// microsecond a request; a space of a few hundred configurations over a few
// seconds of traffic finishes in about a second); confirmation takes 3 to 6
// runs of the traffic per configuration confirmed.
// The runs' thread and its queued calls are in tuner_run.cpp; the cost file,
// the JSON and the settings in tuner_files.cpp.
// Thread-safety: GUI thread only. The worker thread reads only copies (the
// space, the cost model, the traffic, the runner factory) and the atomic
// cancel flag; its progress and results come back as queued calls to this
// panel. The destructor cancels a run under way and joins its thread, which
// takes at most one prediction or one send interval of a live run.

#include <QWidget>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/model_load.h"
#include "tuning/cost_model.h"
#include "tuning/tune_headroom.h"
#include "tuning/tune_run.h"
#include "tuning/tune_space.h"
#include "ui/common/config_io.h"
#include "ui/tuner/tune_table.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QSettings;
class QPushButton;
class QSpinBox;
class QTableView;
class QToolButton;

namespace batchscope {

class TunePlot;

// What the panel asks of the window; every hook is called on the GUI thread.
struct TunerHooks {
  std::function<ArrivalSpec()> traffic;         // the traffic panel's pattern, open-ended
  std::function<Options()> options;             // the options in force: the search's base
  std::function<Status(const Options&)> apply;  // puts options in force live
  std::function<bool()> pause_traffic;          // stops the window's traffic: was it running?
  std::function<void()> resume_traffic;         // starts it again
  std::function<void(const ExportInput&)> export_config;  // opens the export dialog
};

// The cost model a model is tuned against: the synthetic formula (exact up to
// `max_batch`), else the measured profile; an error saying why there is none.
Expected<CostModel> tuning_cost(const LoadedModel& model, uint32_t max_batch);

class TunerPanel : public QWidget {
 public:
  enum class Phase { kIdle, kCalibrating, kSearching, kConfirming };

  explicit TunerPanel(TunerHooks hooks, QWidget* parent = nullptr);
  ~TunerPanel() override;

  // The model tuned from now on (a run under way keeps the one it started
  // with). Resets the space to the default for its maximum batch size when
  // the space was the default.
  void set_model(const LoadedModel& model);
  // The model tuned, with its kept cost as it stands (made or extended by a run).
  const std::optional<LoadedModel>& model() const { return model_; }
  // Live seconds per lane count when the kept cost is made (default
  // kCalibrationSeconds, tuning/cost_calibration.h).
  void set_calibration_seconds(double s) { calibration_s_ = s; }
  // Rereads the traffic panel's pattern for the note; cheap, for a timer.
  void refresh();

  // Starts a search (and its confirmation); a refusal is shown and returned.
  Status run();
  // Asks a run under way to stop; it finishes soon after, on its own.
  void cancel();
  // Cancels a run under way and waits for its thread (for the window's
  // destructor, before the engine and the traffic go).
  void cancel_and_wait();
  Phase phase() const { return phase_; }
  bool running() const { return phase_ != Phase::kIdle; }

  // The selected row's options, put in force with max_batch_size clamped to
  // the model's limit.
  Status apply_selected();
  // What Export… hands the dialog for the selected row.
  Expected<ExportInput> export_input() const;
  // Tunes against the t(b) in `path` from now on; a file that cannot be read
  // or parsed is refused (and shown), and the cost in use stays.
  Status set_cost_file(const QString& path);
  // Back to the model's own cost.
  void clear_cost_file();
  QString cost_file() const;
  QString cost_text() const;
  // Writes the last run as tune's --json does.
  Status save_json(const QString& path) const;
  // The inputs and the cost file, under "tuner/" (a default space is not kept:
  // it follows the model).
  void save_settings(QSettings& s) const;
  void restore_settings(const QSettings& s);
  // The clock the search's share of the budget is measured on (tests); null:
  // the steady clock.
  void set_search_clock(std::shared_ptr<const Clock> clock) { search_clock_ = std::move(clock); }
  void select_row(int row);
  std::optional<int> selected_row() const;

  // The last search: what it evaluated, chose, and confirmed.
  const std::optional<TuneResult>& result() const { return result_; }
  const std::optional<HeadroomResult>& headroom() const { return headroom_; }
  const std::vector<Confirmed>& confirmed() const { return confirmed_; }
  // The cost the last run predicted with (calibrated, when it calibrated).
  const std::optional<CostModel>& run_cost_model() const { return run_cost_model_; }
  std::optional<size_t> best_row() const { return table_model_->best(); }
  QString status_text() const;
  QString error_text() const;
  QString space_error() const;
  QString traffic_note() const;

  QDoubleSpinBox* slo_box() const { return slo_; }
  QComboBox* objective_box() const { return objective_; }
  QDoubleSpinBox* seconds_box() const { return seconds_; }
  QSpinBox* confirm_box() const { return confirm_; }
  QDoubleSpinBox* budget_box() const { return budget_; }
  QCheckBox* calibrate_box() const { return calibrate_; }
  QLineEdit* space_edit() const { return space_; }
  QPushButton* run_button() const { return run_; }
  QPushButton* cancel_button() const { return cancel_; }
  QPushButton* apply_button() const { return apply_; }
  QPushButton* export_button() const { return export_; }
  QPushButton* save_json_button() const { return save_json_; }
  QProgressBar* progress_bar() const { return bar_; }
  QTableView* table() const { return table_; }
  TuneTableModel* table_model() const { return table_model_; }
  TunePlot* plot() const { return plot_; }

 private:
  Expected<TuneSpace> check_space();
  void set_space_text(const QString& text);
  // The space searched when none is typed: the model's (model_space_text()).
  std::string default_space_text() const;
  void space_edited();
  void update_controls();
  void start_worker(std::function<void()> work);
  void join_worker();
  // `calibrated`: the cost the calibration refined (none when it did not
  // run or failed); `note`: what it found, for the status.
  void search_done(uint64_t run, TuneResult result, HeadroomResult headroom,
                   std::optional<CostModel> calibrated, QString note);
  void start_confirming(std::vector<Evaluated> candidates);
  void confirmed_one(uint64_t run, Confirmed c);
  void calibrated(uint64_t run, std::vector<std::optional<Evaluated>> again);
  void confirm_done(uint64_t run, Status s);
  // The kept cost made or extended by run `run`: the model's from now on.
  void kept_made(uint64_t run, CostModel kept);
  void finish(const QString& status);
  void show_rows();
  void show_error(const QString& message);
  void post_progress(uint64_t run, int value, int maximum, const QString& what);
  void update_cost_note();
  // The cost the next run predicts with: the file's, else the model's.
  Expected<CostModel> run_cost(uint32_t max_batch) const;
  // The traffic panel's pattern, for the length of one run.
  ArrivalSpec traffic() const;

  TunerHooks hooks_;
  std::optional<LoadedModel> model_;
  bool default_space_ = true;

  QDoubleSpinBox* slo_ = nullptr;
  QComboBox* objective_ = nullptr;
  QDoubleSpinBox* seconds_ = nullptr;
  QSpinBox* confirm_ = nullptr;
  QDoubleSpinBox* budget_ = nullptr;
  QCheckBox* calibrate_ = nullptr;
  QLineEdit* space_ = nullptr;
  QLabel* space_error_ = nullptr;
  QLabel* traffic_ = nullptr;
  QLabel* cost_ = nullptr;
  QToolButton* cost_file_button_ = nullptr;
  QToolButton* cost_clear_button_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* error_ = nullptr;
  TunePlot* plot_ = nullptr;
  QTableView* table_ = nullptr;
  TuneTableModel* table_model_ = nullptr;
  QPushButton* apply_ = nullptr;
  QPushButton* export_ = nullptr;
  QPushButton* save_json_ = nullptr;
  QLabel* applied_ = nullptr;

  Phase phase_ = Phase::kIdle;
  uint64_t run_id_ = 0;  // results of an older run are dropped
  std::thread worker_;
  std::atomic<bool> stop_{false};
  bool paused_traffic_ = false;  // this panel stopped the window's traffic
  // The run under way (or the last): what it started from.
  std::optional<TuneResult> result_;
  // The best ranked by headroom (tuning/tune_headroom.h), with the search.
  std::optional<HeadroomResult> headroom_;
  std::vector<Confirmed> confirmed_;
  std::optional<Options> winner_;
  ArrivalSpec traffic_spec_;
  RunnerFactory run_factory_;
  ModelMetadata run_metadata_;
  // A model whose inputs vary in length: what live runs send, and each
  // request's length for the predictor (tune_requests()).
  TuneRequests run_requests_;
  std::string traffic_text_;
  int candidates_ = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // of the run under way
  bool budget_ran_out_ = false;              // a candidate was left unconfirmed
  std::string run_cost_text_;                // the run's cost model, described
  std::optional<CostModel> run_cost_model_;  // the run's cost model
  QString cost_path_;                        // the cost file chosen; empty: the model's
  std::optional<CostModel> file_cost_;
  double calibration_s_ = 6;
  std::shared_ptr<const Clock> search_clock_;
};

}  // namespace batchscope

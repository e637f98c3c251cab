// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The model panel of the workbench: which model the engine serves and what
// batching can buy on it.
//
//  - The models found in a folder (each NAME.pt with NAME.json beside it), a
//    file opened from anywhere, or the synthetic stand-in; the device to run
//    on (CUDA entries only where the caller lists them); a Load button.
//  - Loading is done by the caller off the GUI thread (a ModelLoader); the
//    panel shows its progress (warm-up, profile) in a bar and a status line,
//    then the result: the cost profile t(b) with its fitted line a + c·b and
//    the speedup per item on a second axis, the speedup batching allows, and
//    the BLAS and threads in use.
//  - Which t(b): the profile (each size alone), or the model's kept cost on
//    this machine (tuning/cost_cache.h) as each calibrated lane count runs
//    it under load, the curve every prediction uses; the selector lists the
//    lane counts the kept cost holds, and a note says when there is none
//    yet or it was refused.
//
// What a load takes and gives is in model_load.h; the list of a folder's
// models in model_list.h.
//
// Thread-safety: GUI thread only, except the function progress_callback()
// returns, which may be called from any thread.

#include <QAbstractListModel>
#include <QGroupBox>
#include <QString>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batching/engine.h"
#include "batching/synthetic_runner.h"
#include "common/model_metadata.h"
#include "common/options.h"
#include "common/status.h"
#include "model/model_load.h"
#include "tuning/cost_model.h"
#include "ui/workbench/model_list.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QPushButton;
class QTimer;
class QToolButton;

namespace batchscope {

class ModelPanel : public QGroupBox {
 public:
  ModelPanel(QString models_dir, std::vector<std::string> devices, QWidget* parent = nullptr);

  // The user asked to load; the window runs the loader off the GUI thread.
  void set_on_load(std::function<void(ModelRequest)> f) { on_load_ = std::move(f); }
  // Open… offers to make the sidecar of a model that has none, with it.
  void set_describer(ModelDescriber d) { describer_ = std::move(d); }
  // While on: Load and the choice are disabled and the progress bar shows.
  void set_loading(bool on);
  void set_progress(int percent, const QString& what);
  // A LoadProgress that forwards to set_progress() on the GUI thread; safe to
  // call from any thread, and a no-op once the panel is gone. Make it on the
  // GUI thread.
  LoadProgress progress_callback();
  // Fills the plot and labels from `m` and selects it in the list (adding an
  // entry for a file outside the folder).
  void show_model(const LoadedModel& m);
  void show_error(const QString& message);

  QAbstractItemModel* models() const { return list_; }
  QCustomPlot* profile_plot() const { return plot_; }
  QComboBox* model_combo() const { return model_; }
  QComboBox* device_combo() const { return device_; }
  // The t(b) shown: "Profile (alone)", then "N lane(s) under load" per lane
  // count the kept cost was calibrated with.
  QComboBox* curve_combo() const { return curve_; }
  QString curve_note() const;
  // The points on the plot now.
  const std::vector<CostPoint>& shown_points() const { return shown_; }
  QPushButton* load_button() const { return load_; }
  QProgressBar* progress_bar() const { return bar_; }
  QString speedup_text() const;
  QString status_text() const;
  QString error_text() const { return error_; }
  QString blas_text() const;
  QString threads_text() const;
  // What runs the model: "TorchScript (LibTorch), in this process", or a
  // Python model's workers as they fare now ("Python, 2 of 2 workers
  // ready · 1 restart"), refreshed each second while one is shown.
  QString runtime_text() const;

 private:
  void rebuild_choices();
  void select_path(const QString& path);
  void choice_changed();
  void open_file();
  void plot_profile(const LoadedModel& m);
  // The curve the selector names, from the model shown.
  void curve_changed();

  ModelListModel* list_ = nullptr;
  std::vector<QString> opened_;  // files opened from outside the folder
  QString synthetic_path_ = "synthetic:500,20";
  QComboBox* model_ = nullptr;
  QToolButton* rescan_ = nullptr;
  QPushButton* open_ = nullptr;
  QComboBox* device_ = nullptr;
  QPushButton* load_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* about_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QLabel* speedup_ = nullptr;
  QLabel* fit_ = nullptr;
  QLabel* blas_ = nullptr;
  QLabel* threads_ = nullptr;
  QLabel* runtime_ = nullptr;
  QTimer* workers_timer_ = nullptr;
  void show_runtime();
  QComboBox* curve_ = nullptr;
  QLabel* curve_note_ = nullptr;
  LoadedModel shown_model_;  // what show_model() was given, for the curve selector
  QString error_;
  std::vector<CostPoint> shown_;  // the profile on the plot, for the hover read-out
  std::function<void(ModelRequest)> on_load_;
  ModelDescriber describer_;
};

}  // namespace batchscope

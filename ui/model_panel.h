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
//
// Thread-safety: GUI thread only, except the function progress_callback()
// returns, which may be called from any thread. The plain structs are values;
// a CancelToken is thread-safe.

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

#include "cost_model.h"
#include "engine.h"
#include "model_metadata.h"
#include "options.h"
#include "status.h"
#include "synthetic_runner.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QPushButton;
class QToolButton;

namespace batchscope {

// A model ready for the engine, with what was measured on it.
struct LoadedModel {
  ModelMetadata metadata;
  RunnerFactory factory;
  std::string path;  // the .pt file, or "synthetic:A,C[,L]" for the stand-in
  std::string device = "cpu";
  std::string blas;                // which BLAS serves the matrix products
  std::string threads;             // intra-op, inter-op and BLAS threads per lane
  std::vector<CostPoint> profile;  // t(b) for b = 1, 2, 4, ..., with its jitter where measured
  double a_us = 0;                 // fit t(b) ≈ a + c·b: fixed cost per batch
  double c_us = 0;                 // cost per item
  double asymptotic_speedup = 0;   // 1 + a/c; 0 unless a > 0 and c > 0
  // The synthetic stand-in's cost formula, of which the profile is a sample.
  std::optional<SyntheticCost> synthetic;
};

// Progress of a load: percent 0..100 and what is being done. May be called
// from any thread.
using LoadProgress = std::function<void(int percent, const std::string& what)>;

// Asks a load to stop at its next step (a lane, a warm-up batch size, a run
// of the profile) instead of at its end, so that closing the window need not
// wait for a large model. Copies share one flag: the window keeps one and the
// loader sees the other. Cancelling cannot be undone.
// Thread-safety: thread-safe.
class CancelToken {
 public:
  CancelToken();
  void cancel() const;
  bool cancelled() const;
  // Blocks until cancelled or `timeout` passes: true if cancelled. For a
  // step that waits on something else, so that it wakes at once.
  bool wait_for(std::chrono::milliseconds timeout) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// What the user asked to load. `path` "" or "synthetic:A,C[,L]" is the
// synthetic model. `options` gives the lanes to load and the largest batch to
// warm up for; the panel leaves it default and the window fills it. The
// loader checks `cancel` between its steps and, once it is set, returns
// kCancelled; the window gives each load a token of its own.
struct ModelRequest {
  std::string path;
  std::string device = "cpu";
  Options options;
  CancelToken cancel;
};

// Loads a model with its profile; runs off the GUI thread and may take seconds.
using ModelLoader = std::function<Expected<LoadedModel>(const ModelRequest&, const LoadProgress&)>;

// The models in a folder: every NAME.pt that has NAME.json beside it, sorted
// by name. Display: NAME; tooltip: the path and the sidecar's description.
// refresh() looks again (a model reset).
class ModelListModel : public QAbstractListModel {
 public:
  static constexpr int kPathRole = Qt::UserRole;
  static constexpr int kDescriptionRole = Qt::UserRole + 1;

  explicit ModelListModel(QString dir, QObject* parent = nullptr);

  void refresh();
  const QString& dir() const { return dir_; }
  QString path(int row) const;
  int row_of(const QString& path) const;  // -1 if absent

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  struct Entry {
    QString name;
    QString path;
    QString description;
  };
  std::vector<Entry> scan() const;

  QString dir_;
  std::vector<Entry> entries_;
};

class ModelPanel : public QGroupBox {
 public:
  ModelPanel(QString models_dir, std::vector<std::string> devices, QWidget* parent = nullptr);

  // The user asked to load; the window runs the loader off the GUI thread.
  void set_on_load(std::function<void(ModelRequest)> f) { on_load_ = std::move(f); }
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
  QPushButton* load_button() const { return load_; }
  QProgressBar* progress_bar() const { return bar_; }
  QString speedup_text() const;
  QString status_text() const;
  QString error_text() const { return error_; }
  QString blas_text() const;
  QString threads_text() const;

 private:
  void rebuild_choices();
  void select_path(const QString& path);
  void choice_changed();
  void open_file();
  void plot_profile(const LoadedModel& m);

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
  QString error_;
  std::vector<CostPoint> shown_;  // the profile on the plot, for the hover read-out
  std::function<void(ModelRequest)> on_load_;
};

}  // namespace batchscope

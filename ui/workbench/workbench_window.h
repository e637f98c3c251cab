// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The workbench window: live plots of what the batcher is doing, the knobs
// that retune it while traffic flows, the traffic that drives it, the model
// it serves, an HTTP listener, an inspector of recent batches, recorded
// runs, and a tuner that searches the options for the traffic.
//
//  - Centre: LivePlots (latency fan, queue depth, batch sizes and their
//    histogram, offered/completed/rejected per second), refreshed by one
//    ~30 Hz timer from an engine snapshot; span 10 s, 60 s or 5 min; pause.
//  - Left: BatchingPanel and TrafficPanel.
//  - Right, tabbed: ModelPanel, the HTTP server panel.
//  - Bottom, tabbed: BatchInspector, RunsPanel, TunerPanel (the options that
//    serve the traffic panel's pattern best within a p99 SLO, predicted,
//    confirmed live on an engine of its own while the window's traffic
//    pauses, and applied or exported from its table).
//  - File menu: open a model, load and save a configuration (Batchscope
//    JSON, or a Triton config.pbtxt to start from), export the
//    configuration for a production server, export the plots as PNG.
//
// The window owns the engine. Loading a model (and starting an engine over
// it, which loads and warms up the runners) happens on a thread of its own
// with progress in the model panel; the GUI thread only swaps the ready
// engine in. Closing or destroying the window cancels a load under way: it
// stops at its next step (a lane, a warm-up batch size, a profile run), so
// the destructor's join waits for one step, not for the whole load, and a
// cancelled load never leaves an engine running; a tuner run under way is
// cancelled and joined first, the same way. Settings (geometry, span,
// traffic, server, model, options) persist through QSettings.
// Thread-safety: GUI thread only; the engine is thread-safe.

#include <QMainWindow>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/inference_service.h"
#include "batching/engine.h"
#include "batching/monitor.h"
#include "http/http_server.h"
#include "model/kept_cost_refiner.h"
#include "ui/common/config_io.h"
#include "ui/workbench/model_panel.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QSpinBox;
class QTimer;

namespace batchscope {

class HistoryWriter;

struct Preset;
class BatchInspector;
class BatchingPanel;
class LivePlots;
class RunsPanel;
class TrafficPanel;
class TunerPanel;

struct WorkbenchConfig {
  ModelRequest model;                 // loaded through `loader` at start
  std::optional<LoadedModel> loaded;  // or one ready to serve: no loader call at start
  ModelLoader loader;                 // for the model panel and File > Open model
  ModelDescriber describer;           // makes a sidecar for a model opened without one
  Options options;                    // the starting options
  std::vector<std::string> devices = {"cpu"};
  QString models_dir = "models";
  std::string version;         // reported by the HTTP listener
  double traffic_rate = 1500;  // requests/s of the traffic started at launch
  // False: the first model's traffic starts at half what it can serve, as
  // far as its load measured (starting_rate), at most traffic_rate; a
  // rate the user set in an earlier session (saved) counts as given, and
  // --rate wins over it.
  bool traffic_rate_given = false;
  bool start_traffic = true;      // once the first model is ready
  int listen_port = -1;           // >= 0: start the HTTP listener at launch (0: any free port)
  ServiceAccess access;           // the listener's bearer token and read-only configuration
  size_t max_connections = 0;     // the listener's connection limit; 0: from the descriptor limit
  bool restore_settings = false;  // apply the saved view, traffic and server settings
  // Offered every model request first, with this window as the parent for
  // what it opens: nullopt leaves the request to `loader`; a Status says it
  // took the request (a generative model, opened in a generation window of
  // its own) and how that went. Null: every request goes to `loader`.
  std::function<std::optional<Status>(const ModelRequest&, QWidget* parent)> open_generative;
};

// The model and options this machine saved last (QSettings), over `cfg`'s
// where the command line did not give them.
void restore_saved_choices(WorkbenchConfig& cfg, bool model_given, bool options_given);

class WorkbenchWindow : public QMainWindow {
 public:
  explicit WorkbenchWindow(WorkbenchConfig config, QWidget* parent = nullptr);
  ~WorkbenchWindow() override;

  // The engine in force; null until the first model is ready.
  Engine* engine() const { return engine_.get(); }
  const LoadedModel& model() const { return model_; }
  bool loading() const { return load_thread_.joinable(); }
  // Loads a model off the GUI thread and swaps it in when ready; traffic and
  // the listener pause for the swap and resume on the new engine, which takes
  // the options in force then (max_batch_size clamped to the new model's).
  // While a load is under way another request is turned away: replacing it
  // would have to wait for the cancelled one's current step on the GUI
  // thread, or leave threads behind.
  void load_model(ModelRequest request);
  // Processes events until no load is under way; false on timeout or when
  // no model could be loaded.
  bool wait_loaded(int timeout_ms);

  Status start_traffic();
  void stop_traffic();
  bool traffic_running() const;
  void apply_now();  // the batching panel's values, now instead of after the debounce
  void refresh();    // one tick: pull a snapshot and repaint
  bool export_png(const QString& path);
  // Starts the HTTP listener on host:port (0 picks a free port).
  Expected<uint16_t> start_server(const std::string& host, uint16_t port);
  void stop_server();
  bool server_running() const { return server_ != nullptr; }
  // The counts of every listener this window has run, the one running included.
  HttpCounters http_counters() const;
  // Options from a Batchscope JSON file or a Triton config.pbtxt, applied.
  Status load_config(const QString& path);
  // A preset (File > Presets), its largest batch cut to the model's limit.
  Status load_preset(const Preset& preset);
  Status save_config(const QString& path) const;
  void save_settings() const;
  // Keeps the runs the Runs tab records in `writer` (each with the loaded
  // model's context), drawing a kept run's picture with `png_program`
  // (runs export); without a writer, shows `problem` there instead.
  void keep_runs_in(HistoryWriter* writer, const std::string& problem, const QString& png_program);

  BatchingPanel* batching() const { return batching_; }
  TrafficPanel* traffic() const { return traffic_; }
  ModelPanel* model_panel() const { return model_panel_; }
  LivePlots* plots() const { return plots_; }
  BatchInspector* inspector() const { return inspector_; }
  RunsPanel* runs() const { return runs_; }
  // Waits until every recorded run has refined the model's kept cost.
  void wait_for_kept_cost() { kept_refiner_.wait(); }
  TunerPanel* tuner() const { return tuner_; }
  QSlider* batch_slider() const;
  QString problem() const;
  int plotted_windows() const;
  QWidget* plot_widget() const;

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  struct Loaded;
  void make_menus();
  Status load_options(const QString& path, const QString& what, bool fit_model);
  QWidget* make_server_panel();  // workbench_server.cpp, with the listener
  void show_server_state();
  void restore_settings();
  // Starts an engine over loaded.model (any thread); the outcome goes in `loaded`.
  static void start_engine(Loaded& loaded, Options options);
  void swap_in(std::shared_ptr<Loaded> loaded);
  void update_titles();
  void finish_tick(const EngineStatus& status, bool labels);
  void publish_totals();
  Status apply(const Options& o);
  Status no_engine() const;  // why there is no engine to act on
  double span_s() const;
  ExportInput export_input() const;

  WorkbenchConfig config_;
  std::unique_ptr<Engine> engine_;
  LoadedModel model_;
  // Refines the model's kept cost with each run recorded here.
  KeptCostRefiner kept_refiner_;
  std::unique_ptr<EngineMonitor> monitor_;
  std::thread load_thread_;
  CancelToken load_cancel_;  // the load under way's (or the last one's)
  bool first_model_ = true;
  uint64_t ticks_ = 0;
  RecordBatch inspector_buffer_;  // drained since the inspector last took records

  LivePlots* plots_ = nullptr;
  BatchingPanel* batching_ = nullptr;
  TrafficPanel* traffic_ = nullptr;
  ModelPanel* model_panel_ = nullptr;
  BatchInspector* inspector_ = nullptr;
  RunsPanel* runs_ = nullptr;
  TunerPanel* tuner_ = nullptr;
  QTimer* tick_ = nullptr;
  QComboBox* span_ = nullptr;
  QCheckBox* pause_ = nullptr;
  QLabel* status_label_ = nullptr;

  QLineEdit* host_ = nullptr;
  QSpinBox* port_ = nullptr;
  QPushButton* server_button_ = nullptr;
  QLabel* server_label_ = nullptr;
  QCheckBox* record_clients_ = nullptr;  // the Server tab's Record switch
  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<HttpServer> server_;
  // Services of stopped listeners, kept until the engine they submitted to
  // stops: a request still queued or running there answers through its
  // service.
  std::vector<std::unique_ptr<InferenceService>> retired_services_;
  HttpCounters retired_http_;  // of the listeners stopped so far
  // The monitor's all-time totals for the listener's /metrics (I/O thread).
  std::mutex published_mu_;
  MetricsWindow published_totals_;
  uint16_t server_port_ = 0;
  QString server_warning_;  // shown under the listener's address when it is not loopback
};

}  // namespace batchscope

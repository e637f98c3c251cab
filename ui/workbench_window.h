#pragma once
// The workbench window: live plots of what the batcher is doing, the knobs
// that retune it while traffic flows, and the traffic that drives it.
//
//  - Plots (one QCustomPlot, four panels sharing the time axis): latency fan
//    p50/p90/p99/max with the p99 target; queue depth; batch sizes; completed
//    and rejected requests per second. One ~30 Hz timer pulls an engine
//    snapshot and repaints; nothing is pushed per request. Span 10 s, 60 s or
//    5 min; pause; PNG export.
//  - Batching panel: strategy, max_batch_size, max_wait (log slider), queue
//    capacity, timeout, lanes, p99 target. Changes are debounced (100 ms),
//    applied as one options value, and the panel shows the options in force
//    with their version; an invalid value is explained in place.
//  - Traffic panel: pattern, rate or concurrency, start/stop, live counts.
//  - Server panel: the HTTP listener on and off (host, port), a curl
//    example to copy, and its request counts.
//
// Thread-safety: GUI thread only. The traffic runs on a thread of its own;
// the engine is thread-safe.

#include <QMainWindow>
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "engine.h"
#include "http_server.h"
#include "inference_service.h"
#include "load_driver.h"
#include "model_metadata.h"
#include "monitor.h"

class QCustomPlot;
class QCPGraph;
class QCPAxisRect;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSlider;
class QSpinBox;
class QTimer;
class QCheckBox;
class QLineEdit;

namespace batchscope {

struct WorkbenchConfig {
  ModelMetadata model;
  std::string device = "cpu";
  std::string blas;            // shown in the status bar
  std::string version;         // reported by the HTTP listener
  double traffic_rate = 1500;  // requests/s of the traffic started at launch
  bool start_traffic = true;
};

class WorkbenchWindow : public QMainWindow {
 public:
  WorkbenchWindow(Engine& engine, WorkbenchConfig config, QWidget* parent = nullptr);
  ~WorkbenchWindow() override;

  void start_traffic();
  void stop_traffic();
  bool traffic_running() const { return traffic_.joinable(); }
  // Applies the panel's values now instead of after the debounce.
  void apply_now();
  // One refresh tick: pull a snapshot and repaint.
  void refresh();
  bool export_png(const QString& path);
  // Starts the HTTP listener on host:port (0 picks a free port); the error
  // says why it could not. Returns the bound port.
  Expected<uint16_t> start_server(const std::string& host, uint16_t port);
  void stop_server();
  bool server_running() const { return server_ != nullptr; }

  QSlider* batch_slider() const { return batch_slider_; }
  QSlider* wait_slider() const { return wait_slider_; }
  const LoadCounters& traffic_counters() const { return counters_; }
  QString problem() const;      // the panel's explanation of a refused value, if any
  int plotted_windows() const;  // points in the latency fan's p50 line
  QWidget* plot_widget() const;

 private:
  QWidget* make_batching_panel();
  QWidget* make_traffic_panel();
  QWidget* make_server_panel();
  void make_plot();
  void options_changed();
  void show_options(const EngineStatus& s);

  Engine& engine_;
  WorkbenchConfig config_;
  EngineMonitor monitor_;

  QCustomPlot* plot_ = nullptr;
  QCPAxisRect* lat_rect_ = nullptr;
  QCPGraph *p50_ = nullptr, *p90_ = nullptr, *p99_ = nullptr, *max_ = nullptr, *target_ = nullptr;
  QCPGraph *depth_mean_ = nullptr, *depth_max_ = nullptr;
  QCPGraph *batch_mean_ = nullptr, *batch_max_ = nullptr;
  QCPGraph *tput_ok_ = nullptr, *tput_rejected_ = nullptr;
  QTimer* tick_ = nullptr;
  QTimer* debounce_ = nullptr;
  QComboBox* span_ = nullptr;
  QCheckBox* pause_ = nullptr;

  QComboBox* strategy_ = nullptr;
  QSlider* batch_slider_ = nullptr;
  QSpinBox* batch_spin_ = nullptr;
  QSlider* wait_slider_ = nullptr;
  QDoubleSpinBox* wait_spin_ = nullptr;
  QSpinBox* capacity_ = nullptr;
  QSpinBox* timeout_ = nullptr;
  QSpinBox* lanes_ = nullptr;
  QDoubleSpinBox* target_p99_ = nullptr;
  QLabel* in_force_ = nullptr;
  QLabel* problem_ = nullptr;

  QComboBox* pattern_ = nullptr;
  QDoubleSpinBox* rate_ = nullptr;
  QSpinBox* concurrency_ = nullptr;
  QPushButton* start_stop_ = nullptr;
  QLabel* traffic_label_ = nullptr;

  QLineEdit* host_ = nullptr;
  QSpinBox* port_ = nullptr;
  QPushButton* server_button_ = nullptr;
  QLabel* server_label_ = nullptr;
  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<HttpServer> server_;
  uint16_t server_port_ = 0;

  std::thread traffic_;
  std::atomic<bool> traffic_stop_{false};
  LoadCounters counters_;
  std::chrono::steady_clock::time_point traffic_started_;
  bool syncing_ = false;  // setting widgets from the engine; not a user change
};

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/workbench_window.h"

#include <qcustomplot.h>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QShortcut>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include "tuning/adaptive_planner.h"
#include "ui/common/about_box.h"
#include "ui/common/app_resources.h"
#include "ui/common/config_io.h"
#include "ui/common/gui_thread.h"
#include "ui/runs/runs_panel.h"
#include "ui/tuner/tuner_panel.h"
#include "ui/workbench/batch_inspector.h"
#include "ui/workbench/batching_panel.h"
#include "ui/workbench/describe_dialog.h"
#include "ui/workbench/live_plots.h"
#include "ui/workbench/traffic_panel.h"

namespace batchscope {

namespace {

constexpr auto kWindow = std::chrono::milliseconds(100);  // one plotted point per window
constexpr size_t kHistory = 3000;                         // 5 minutes of windows

void append(RecordBatch& to, const RecordBatch& from) {
  to.requests.insert(to.requests.end(), from.requests.begin(), from.requests.end());
  to.batches.insert(to.batches.end(), from.batches.begin(), from.batches.end());
  to.dropped += from.dropped;
}

QDockWidget* dock(const QString& title, const QString& name, QWidget* content, QMainWindow* w) {
  auto* d = new QDockWidget(title, w);
  d->setObjectName(name);  // for saveState()
  d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  d->setWidget(content);
  return d;
}

}  // namespace

// A model loaded and an engine started over it, off the GUI thread.
struct WorkbenchWindow::Loaded {
  Expected<LoadedModel> model = invalid_argument("not loaded");
  std::unique_ptr<Engine> engine;
  Status status;
};

WorkbenchWindow::WorkbenchWindow(WorkbenchConfig config, QWidget* parent)
    : QMainWindow(parent),
      config_(std::move(config)),
      monitor_(std::make_unique<EngineMonitor>(kWindow, kHistory)) {
  plots_ = new LivePlots;
  setCentralWidget(plots_);

  auto* tools = addToolBar("View");
  tools->setObjectName("view-toolbar");
  tools->setMovable(false);
  tools->addWidget(new QLabel(" Show the last "));
  span_ = new QComboBox;
  span_->addItems({"10 s", "60 s", "5 min"});
  span_->setCurrentIndex(1);
  tools->addWidget(span_);
  pause_ = new QCheckBox("Pause (P)");
  tools->addWidget(pause_);
  new QShortcut(QKeySequence("P"), this, [this] { pause_->toggle(); });

  batching_ = new BatchingPanel([this](const Options& o) { return apply(o); });
  traffic_ = new TrafficPanel(
      TrafficHooks{.engine = [this] { return engine_.get(); },
                   .model = [this] { return model_.metadata; },
                   .listen = [this]() -> Expected<Url> {
                     auto port = server_running()
                                     ? Expected<uint16_t>(server_port_)
                                     : start_server(host_->text().toStdString(),
                                                    static_cast<uint16_t>(port_->value()));
                     if (!port) return port.error();
                     // A wildcard address is reached over loopback; any other as bound.
                     std::string host = host_->text().toStdString();
                     if (host == "0.0.0.0" || host == "::" || host.empty()) host = "127.0.0.1";
                     return Url{host, *port, "/infer", config_.access.token};
                   }},
      config_.traffic_rate);
  auto* left = new QWidget;
  auto* col = new QVBoxLayout(left);
  col->addWidget(batching_);
  col->addWidget(traffic_);
  col->addStretch();
  // Scrolls rather than forcing the window taller than a laptop screen.
  auto* left_scroll = new QScrollArea;
  left_scroll->setWidget(left);
  left_scroll->setWidgetResizable(true);
  left_scroll->setFrameShape(QFrame::NoFrame);
  left_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  left_scroll->setMinimumWidth(left->sizeHint().width() + 16);
  addDockWidget(Qt::LeftDockWidgetArea, dock("Batching and traffic", "left", left_scroll, this));

  model_panel_ = new ModelPanel(config_.models_dir, config_.devices);
  model_panel_->set_on_load([this](ModelRequest r) { load_model(std::move(r)); });
  model_panel_->set_describer(config_.describer);
  runs_ = new RunsPanel;
  runs_->set_config_provider([this] {
    RunConfig c;
    c.pattern = traffic_->pattern_text();
    c.target = traffic_->target_name();
    c.model = model_.metadata.name;
    if (engine_) c.options = engine_->status().options;
    return c;
  });
  // A recorded run is a live run of the model on this machine: its kept cost
  // learns from it, off this thread.
  runs_->set_on_recorded([this](std::shared_ptr<const RunData> run) {
    if (model_.cost_key) kept_refiner_.refine(*model_.cost_key, std::move(run));
  });
  // Scrolls rather than squeezing its wrapped notes over the t(b) plot when
  // they run long (a busy machine's unsettled sizes name the processes).
  auto* model_scroll = new QScrollArea;
  model_scroll->setWidget(model_panel_);
  model_scroll->setWidgetResizable(true);
  model_scroll->setFrameShape(QFrame::NoFrame);
  model_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* tabs = new QTabWidget;
  tabs->addTab(model_scroll, "Model");
  tabs->addTab(make_server_panel(), "Server");
  tabs->setMaximumWidth(430);
  addDockWidget(Qt::RightDockWidgetArea, dock("Model and server", "right", tabs, this));

  inspector_ = new BatchInspector;
  auto* bottom = new QTabWidget;
  bottom->addTab(inspector_, "Batch inspector");
  bottom->addTab(runs_, "Runs");
  tuner_ = new TunerPanel(TunerHooks{
      .traffic = [this] { return traffic_->spec(); },
      .options = [this] { return engine_ ? engine_->status().options : config_.options; },
      .apply =
          [this](Options o) {  // as a preset is: cut to the model's limit
            o.max_batch_size = std::min(o.max_batch_size, model_.metadata.max_batch_size);
            return apply(o);
          },
      .pause_traffic =
          [this] {
            const bool was = traffic_->running();
            traffic_->stop();
            return was;
          },
      // a refusal shows in the traffic panel
      .resume_traffic = [this] { (void)traffic_->start(); },
      .export_config = [this](const ExportInput& in) { export_config_dialog(this, in); }});
  bottom->addTab(tuner_, "Tuner");
  addDockWidget(Qt::BottomDockWidgetArea, dock("Batches and runs", "bottom", bottom, this));
  resizeDocks({findChild<QDockWidget*>("bottom")}, {330}, Qt::Vertical);
  connect(pause_, &QCheckBox::toggled, this, [this](bool on) {
    if (on) {  // what waited for a redraw goes in first, ahead of what arrives paused
      inspector_->add(inspector_buffer_);
      inspector_buffer_.clear();
    }
    inspector_->set_paused(on);
    plots_->invalidate();
  });

  status_label_ = new QLabel;
  statusBar()->addWidget(status_label_, 1);
  make_menus();

  tick_ = new QTimer(this);
  tick_->setInterval(33);
  connect(tick_, &QTimer::timeout, this, [this] { refresh(); });
  tick_->start();

  if (config_.restore_settings) restore_settings();
  if (config_.loaded) {
    auto ready = std::make_shared<Loaded>();
    ready->model = std::move(*config_.loaded);
    config_.loaded.reset();
    start_engine(*ready, config_.options);
    swap_in(ready);
  } else {
    load_model(config_.model);
  }
  update_titles();
}

WorkbenchWindow::~WorkbenchWindow() {
  tuner_->cancel_and_wait();  // its live runs use the model's factory
  load_cancel_.cancel();      // a load under way stops at its next step
  if (load_thread_.joinable()) load_thread_.join();
  // A load that finished before it saw the cancel has posted its swap_in:
  // dropped now, with the engine it holds, rather than when QObject goes.
  QCoreApplication::removePostedEvents(this, QEvent::MetaCall);
  traffic_->stop();
  stop_server();
  if (engine_) engine_->stop(StopMode::kDrain);
  retired_services_.clear();  // no request of theirs is left in the engine
}

void WorkbenchWindow::make_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open model…", QKeySequence::Open, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, "Open model", config_.models_dir,
                                     "Models (*.pt *.py);;TorchScript (*.pt);;Python (*.py)");
    if (path.isEmpty() || !ensure_sidecar(this, path, config_.describer)) return;
    ModelRequest r;
    r.path = path.toStdString();
    r.device = model_.device;
    load_model(r);
  });
  file->addAction("&Load config…", this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, "Load configuration", QString(),
        "Batchscope JSON or Triton config (*.json *.pbtxt);;All files (*)");
    if (path.isEmpty()) return;
    if (Status s = load_config(path); !s)
      QMessageBox::warning(this, "Load configuration", QString::fromStdString(s.message()));
  });
  QMenu* preset_menu = file->addMenu("&Presets");
  for (const Preset& p : presets()) {
    QAction* a = preset_menu->addAction(p.title, this, [this, p] {
      if (Status s = load_preset(p); !s)
        QMessageBox::warning(this, "Presets", QString::fromStdString(s.message()));
    });
    a->setToolTip(p.tip);
    a->setStatusTip(p.tip);
  }
  preset_menu->setToolTipsVisible(true);
  file->addAction("&Save config…", QKeySequence::Save, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, "Save configuration", "batchscope.json",
                                                      "JSON (*.json)");
    if (path.isEmpty()) return;
    if (Status s = save_config(path); !s)
      QMessageBox::warning(this, "Save configuration", QString::fromStdString(s.message()));
  });
  file->addAction("&Export config for a server…", this, [this] {
    if (!engine_) return;
    export_config_dialog(this, export_input());
  });
  file->addAction("Export plots as &PNG…", this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, "Export plots", "batchscope.png", "PNG (*.png)");
    if (!path.isEmpty()) export_png(path);
  });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, [this] { close(); });
  add_help_menu(this);
}

void WorkbenchWindow::load_model(ModelRequest request) {
  if (loading()) {  // the panel's Load is disabled meanwhile; File > Open is not
    statusBar()->showMessage("A model is still loading; open the next one when it is ready.",
                             10000);
    return;
  }
  if (auto taken =
          config_.open_generative ? config_.open_generative(request, this) : std::nullopt) {
    model_panel_->set_loading(false);
    if (!taken->ok()) model_panel_->show_error(QString::fromStdString(taken->message()));
    return;
  }
  if (!config_.loader) {
    model_panel_->set_loading(false);
    model_panel_->show_error("This window cannot load models.");
    return;
  }
  request.options = engine_ ? engine_->status().options : config_.options;
  // The Python model the window was started on keeps its --class, --python
  // and --model-option when it is loaded again.
  if (request.path == config_.model.path) request.python = config_.model.python;
  request.cancel = CancelToken();  // a fresh one: the last load's may be cancelled, for good
  load_cancel_ = request.cancel;
  model_panel_->set_loading(true);
  model_panel_->set_progress(0, QString("Loading %1…").arg(QString::fromStdString(request.path)));
  load_thread_ = std::thread([this, request, progress = model_panel_->progress_callback()] {
    auto result = std::make_shared<Loaded>();
    result->model = config_.loader(request, progress);
    if (result->model && !request.cancel.cancelled()) start_engine(*result, request.options);
    // Asked again after the start: an engine started for a window that has
    // closed meanwhile stops here, not when someone gets round to it.
    if (request.cancel.cancelled()) {
      result->engine.reset();  // stops it; no request has reached it
      if (result->model) {
        result->model = Error{ErrorCode::kCancelled, "loading " + request.path + " was cancelled"};
      }
    }
    // The destructor joins this thread before it drops what was posted here.
    QMetaObject::invokeMethod(
        this, [this, result] { swap_in(result); }, Qt::QueuedConnection);
  });
}

void WorkbenchWindow::start_engine(Loaded& loaded, Options options) {
  const ModelMetadata& meta = loaded.model->metadata;
  options.max_batch_size = std::min(options.max_batch_size, meta.max_batch_size);
  loaded.engine = std::make_unique<Engine>(loaded.model->factory, options);
  bind_model(*loaded.engine, meta, loaded.model->stage);
  // Adaptive plans on the model's kept cost where there is one, as every
  // prediction does; else on its own fit.
  if (loaded.model->kept) {
    loaded.engine->set_adaptive_planner(plan_on_cost(*loaded.model->kept));
  } else {
    loaded.engine->set_adaptive_planner(make_adaptive_plan);
  }
  loaded.status = loaded.engine->start();  // hands each lane its warmed-up runner
}

bool WorkbenchWindow::wait_loaded(int timeout_ms) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (loading()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    QApplication::processEvents(QEventLoop::AllEvents, 20);
  }
  return engine_ != nullptr;
}

void WorkbenchWindow::swap_in(std::shared_ptr<Loaded> loaded) {
  assert_gui_thread("WorkbenchWindow::swap_in");
  if (load_thread_.joinable()) load_thread_.join();
  model_panel_->set_loading(false);
  if (!loaded->model || !loaded->status) {
    const std::string why =
        !loaded->model ? loaded->model.error().message : loaded->status.message();
    model_panel_->show_error(QString::fromStdString(why));
    if (loaded->engine) loaded->engine->stop(StopMode::kFail);
    return;
  }
  const bool first = first_model_;
  const bool had_traffic = traffic_->running() || (first && config_.start_traffic);
  const bool had_server = server_running() || (first_model_ && config_.listen_port >= 0);
  const uint16_t port = server_running()           ? server_port_
                        : config_.listen_port >= 0 ? static_cast<uint16_t>(config_.listen_port)
                                                   : 0;
  if (engine_) {
    // Options applied while the model loaded (panel, config file, HTTP) carry over.
    Options now = engine_->status().options;
    now.max_batch_size = std::min(now.max_batch_size, loaded->model->metadata.max_batch_size);
    if (!(now == loaded->engine->status().options)) (void)loaded->engine->set_options(now);
  }
  if (runs_->recording()) runs_->stop_recording();
  traffic_->stop();
  stop_server();
  if (engine_) engine_->stop(StopMode::kDrain);
  retired_services_.clear();  // no request of theirs is left in the engine
  engine_ = std::move(loaded->engine);
  model_ = std::move(*loaded->model);
  monitor_ = std::make_unique<EngineMonitor>(kWindow, kHistory);
  plots_->clear();
  inspector_->clear();
  inspector_buffer_.clear();
  batching_->set_model_limit(model_.metadata.max_batch_size);
  batching_->set_preprocess(static_cast<bool>(model_.stage));
  batching_->show_status(engine_->status());
  model_panel_->show_model(model_);
  tuner_->set_model(model_);
  update_titles();
  first_model_ = false;
  if (had_server) {
    auto p = start_server(host_->text().toStdString(), port);
    if (!p) server_label_->setText(QString::fromStdString(p.error().message));
  }
  if (first && !config_.traffic_rate_given) {
    traffic_->set_rate(starting_rate(model_, engine_->status().options, config_.traffic_rate));
  }
  if (had_traffic) (void)traffic_->start();  // a refusal shows in the traffic panel
}

void WorkbenchWindow::update_titles() {
  const QString name =
      QString::fromStdString(model_.metadata.name.empty() ? "loading…" : model_.metadata.name);
  const QString device = QString::fromStdString(model_.device);
  setWindowTitle(QString("Batchscope — %1 on %2").arg(name, device));
  status_label_->setText(QString("Model %1 · device %2 · BLAS %3 · %4")
                             .arg(name, device,
                                  QString::fromStdString(model_.blas.empty() ? "n/a" : model_.blas),
                                  QString::fromStdString(model_.threads)));
}

Status WorkbenchWindow::no_engine() const {
  return invalid_argument(loading() ? "the model is still loading" : "no model is loaded");
}

Status WorkbenchWindow::apply(const Options& o) {
  if (!engine_) return no_engine();
  return engine_->set_options(o);
}

void WorkbenchWindow::apply_now() { batching_->apply_now(); }

Status WorkbenchWindow::start_traffic() { return traffic_->start(); }
void WorkbenchWindow::stop_traffic() { traffic_->stop(); }
bool WorkbenchWindow::traffic_running() const { return traffic_->running(); }

ExportInput WorkbenchWindow::export_input() const {
  ExportInput in;
  in.options = engine_->status().options;
  in.model = model_.metadata;
  in.device = model_.device;
  // Unreadable: the Python formats say so.
  (void)add_python_handler(in, model_.path, model_.lane_metadata);
  // What the options were tuned under: the traffic, and the last 10 s measured.
  const MetricsAggregator& agg = monitor_->aggregator();
  if (!agg.windows().empty()) {
    const TimePoint end = agg.windows().back().start + agg.window_length();
    const MetricsWindow w = agg.merged(end - std::chrono::seconds(10), end);
    const LatencySummary l = summarize(w.total_ns);
    if (l.count > 0) {
      in.tuning.measured = true;
      in.tuning.p50_ms = l.p50_us / 1000;
      in.tuning.p99_ms = l.p99_us / 1000;
      in.tuning.throughput_rps = w.throughput_per_s();
    }
  }
  if (traffic_->running())
    in.tuning.traffic = traffic_->pattern_text() + " -> " + traffic_->target_name();
  return in;
}

double WorkbenchWindow::span_s() const {
  return span_->currentIndex() == 0 ? 10 : span_->currentIndex() == 1 ? 60 : 300;
}

void WorkbenchWindow::refresh() {
  // Labels at about 5 Hz: the counts they show are not worth a relayout per tick.
  const bool labels = ticks_++ % 6 == 0;
  if (labels) {
    traffic_->refresh();
    if (tuner_->isVisible()) tuner_->refresh();
  }
  if (!engine_) return;
  // Status and the records drained; the windows are read in place, not copied.
  const MetricsSnapshot s = monitor_->poll(*engine_, 0);
  if (server_) publish_totals();
  const RecordBatch& drained = monitor_->last_records();
  plots_->add_batches(drained);
  runs_->add(drained);
  // The inspector takes its batches (and their requests, for the waits) in
  // one go when the plots redraw, while it can be seen; paused, it holds
  // what arrives itself.
  if (pause_->isChecked()) {
    inspector_->add(drained);
    return finish_tick(s.engine, labels);
  }
  const bool inspecting = inspector_->isVisible();
  if (inspecting) append(inspector_buffer_, drained);
  if (plots_->draw(monitor_->aggregator(), s.engine.options, span_s())) {
    if (inspecting) {
      inspector_->add(inspector_buffer_);
      inspector_->refresh();
      inspector_buffer_.clear();
    }
  }
  finish_tick(s.engine, labels);
}

void WorkbenchWindow::publish_totals() {
  std::lock_guard g(published_mu_);
  published_totals_ = monitor_->aggregator().totals();
}

void WorkbenchWindow::finish_tick(const EngineStatus& status, bool labels) {
  batching_->show_status(status);
  if (labels) show_server_state();
}

void WorkbenchWindow::closeEvent(QCloseEvent* e) {
  if (config_.restore_settings) save_settings();
  // The model on its way is not wanted any more; stopping it now, while the
  // application winds down, shortens the destructor's join.
  load_cancel_.cancel();
  tuner_->cancel();
  QMainWindow::closeEvent(e);
}

bool WorkbenchWindow::export_png(const QString& path) { return plots_->save_png(path); }
QSlider* WorkbenchWindow::batch_slider() const { return batching_->batch_slider(); }
QString WorkbenchWindow::problem() const { return batching_->problem(); }
int WorkbenchWindow::plotted_windows() const { return plots_->plotted_windows(); }
QWidget* WorkbenchWindow::plot_widget() const { return plots_->plot(); }

}  // namespace batchscope

#include "workbench_window.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QShortcut>
#include <QSlider>
#include <QSpinBox>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

namespace batchscope {

namespace {

constexpr auto kWindow = std::chrono::milliseconds(100);  // one plotted point per window
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The max_wait slider is logarithmic: position 0 is 0 ms, 1..1000 spans
// 0.01 ms to 1000 ms, so both sub-millisecond and second-long waits are easy
// to set.
double wait_ms_at(int pos) { return pos <= 0 ? 0.0 : 0.01 * std::pow(10.0, 5.0 * pos / 1000.0); }
int wait_pos_of(double ms) {
  return ms <= 0
             ? 0
             : std::clamp(static_cast<int>(std::lround(std::log10(ms / 0.01) * 200.0)), 1, 1000);
}

QString curl_example(const std::string& host, uint16_t port, const ModelMetadata& m) {
  QString zeros;
  const int64_t n = m.inputs.empty() ? 0 : std::min<int64_t>(m.inputs[0].item_numel(), 8);
  for (int64_t i = 0; i < n; ++i) zeros += i ? ",0" : "0";
  const QString more = m.inputs.empty() || m.inputs[0].item_numel() <= 8
                           ? QString()
                           : QString(" (with all %1 values)").arg(m.inputs[0].item_numel());
  return QString("curl -X POST -d '{\"data\": [%1]}' http://%2:%3/infer%4")
      .arg(zeros, QString::fromStdString(host))
      .arg(port)
      .arg(more);
}

QCPGraph* line(QCustomPlot* plot, QCPAxisRect* rect, const QString& name, QColor color,
               Qt::PenStyle style = Qt::SolidLine, double width = 1.6) {
  QCPGraph* g = plot->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  g->setName(name);
  g->setPen(QPen(color, width, style));
  g->setLineStyle(QCPGraph::lsStepLeft);
  return g;
}

}  // namespace

WorkbenchWindow::WorkbenchWindow(Engine& engine, WorkbenchConfig config, QWidget* parent)
    : QMainWindow(parent), engine_(engine), config_(std::move(config)), monitor_(kWindow, 3000) {
  setWindowTitle(
      QString("Batchscope — %1 on %2")
          .arg(QString::fromStdString(config_.model.name), QString::fromStdString(config_.device)));
  make_plot();
  setCentralWidget(plot_);

  auto* tools = addToolBar("View");
  tools->setMovable(false);
  tools->addWidget(new QLabel(" Show the last "));
  span_ = new QComboBox;
  span_->addItems({"10 s", "60 s", "5 min"});
  span_->setCurrentIndex(1);
  tools->addWidget(span_);
  pause_ = new QCheckBox("Pause (P)");
  tools->addWidget(pause_);
  auto* png = new QPushButton("Export PNG…");
  tools->addWidget(png);
  connect(png, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, "Export plot", "batchscope.png", "PNG (*.png)");
    if (!path.isEmpty()) export_png(path);
  });
  new QShortcut(QKeySequence("P"), this, [this] { pause_->toggle(); });

  auto* dock = new QDockWidget("Batching and traffic", this);
  dock->setFeatures(QDockWidget::NoDockWidgetFeatures);
  auto* side = new QWidget;
  auto* col = new QVBoxLayout(side);
  col->addWidget(make_batching_panel());
  col->addWidget(make_traffic_panel());
  col->addWidget(make_server_panel());
  col->addStretch();
  dock->setWidget(side);
  addDockWidget(Qt::LeftDockWidgetArea, dock);

  statusBar()->showMessage(
      QString("Model %1 · device %2 · BLAS %3")
          .arg(QString::fromStdString(config_.model.name), QString::fromStdString(config_.device),
               QString::fromStdString(config_.blas.empty() ? "n/a" : config_.blas)));

  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(100);
  connect(debounce_, &QTimer::timeout, this, [this] { apply_now(); });

  tick_ = new QTimer(this);
  tick_->setInterval(33);
  connect(tick_, &QTimer::timeout, this, [this] { refresh(); });
  tick_->start();

  show_options(engine_.status());
  if (config_.start_traffic) start_traffic();
}

WorkbenchWindow::~WorkbenchWindow() {
  stop_traffic();
  stop_server();
}

void WorkbenchWindow::make_plot() {
  plot_ = new QCustomPlot;
  plot_->setAutoAddPlottableToLegend(false);  // each panel has a legend of its own
  plot_->plotLayout()->clear();
  plot_->setMinimumSize(700, 500);
  auto add_rect = [&](const QString& ylabel, int row) {
    auto* r = new QCPAxisRect(plot_);
    plot_->plotLayout()->addElement(row, 0, r);
    r->axis(QCPAxis::atLeft)->setLabel(ylabel);
    r->axis(QCPAxis::atBottom)->setRange(-60, 0);
    r->setRangeZoom(Qt::Vertical);
    auto* legend = new QCPLegend;
    r->insetLayout()->addElement(legend, Qt::AlignTop | Qt::AlignLeft);
    legend->setLayer("legend");
    legend->setFont(QFont(font().family(), 8));
    legend->setRowSpacing(0);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    r->setProperty("legend", QVariant::fromValue(static_cast<void*>(legend)));
    return r;
  };
  lat_rect_ = add_rect("latency (ms)", 0);
  QCPAxisRect* depth = add_rect("queue depth", 1);
  QCPAxisRect* batch = add_rect("batch size", 2);
  QCPAxisRect* tput = add_rect("requests / s", 3);
  tput->axis(QCPAxis::atBottom)->setLabel("seconds ago");
  auto* group = new QCPMarginGroup(plot_);
  for (QCPAxisRect* r : {lat_rect_, depth, batch, tput})
    r->setMarginGroup(QCP::msLeft | QCP::msRight, group);

  max_ = line(plot_, lat_rect_, "max", QColor(120, 120, 120), Qt::DashLine, 1.0);
  p99_ = line(plot_, lat_rect_, "p99", QColor(110, 160, 220));
  p90_ = line(plot_, lat_rect_, "p90", QColor(40, 100, 190));
  p50_ = line(plot_, lat_rect_, "p50", QColor(10, 40, 120), Qt::SolidLine, 2.0);
  p99_->setBrush(QColor(110, 160, 220, 60));
  p99_->setChannelFillGraph(p90_);
  p90_->setBrush(QColor(40, 100, 190, 70));
  p90_->setChannelFillGraph(p50_);
  target_ = line(plot_, lat_rect_, "p99 target", QColor(200, 40, 40), Qt::DotLine, 1.4);
  depth_mean_ = line(plot_, depth, "mean", QColor(20, 130, 90), Qt::SolidLine, 1.8);
  depth_mean_->setBrush(QColor(20, 130, 90, 40));
  depth_max_ = line(plot_, depth, "max", QColor(120, 120, 120), Qt::DashLine, 1.0);
  batch_mean_ = line(plot_, batch, "mean", QColor(200, 100, 20), Qt::SolidLine, 1.8);
  batch_max_ = line(plot_, batch, "max", QColor(120, 120, 120), Qt::DashLine, 1.0);
  tput_ok_ = line(plot_, tput, "completed", QColor(30, 30, 30), Qt::SolidLine, 1.6);
  tput_rejected_ = line(plot_, tput, "rejected", QColor(210, 40, 40), Qt::SolidLine, 1.6);
  for (QCPAxisRect* r : {lat_rect_, depth, batch, tput}) {
    auto* legend = static_cast<QCPLegend*>(r->property("legend").value<void*>());
    for (QCPGraph* g : r->graphs()) legend->addItem(new QCPPlottableLegendItem(legend, g));
  }
  plot_->setInteractions(QCP::iRangeZoom);
  plot_->setMouseTracking(true);
  // Hover read-out: the exact values of every line in the panel under the
  // mouse, at the window nearest the pointer.
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    QCPAxisRect* rect = plot_->axisRectAt(e->pos());
    if (!rect) return QToolTip::hideText();
    const double t = rect->axis(QCPAxis::atBottom)->pixelToCoord(e->pos().x());
    QString text = QString("%1 s ago").arg(-t, 0, 'f', 1);
    for (QCPGraph* g : rect->graphs()) {
      if (!g->visible() || g->data()->isEmpty()) continue;
      auto it = g->data()->findBegin(t);
      if (it == g->data()->constEnd()) continue;
      if (!std::isnan(it->value))
        text += QString("\n%1: %2").arg(g->name()).arg(it->value, 0, 'g', 4);
    }
    QToolTip::showText(e->globalPosition().toPoint(), text, plot_);
  });
}

QWidget* WorkbenchWindow::make_batching_panel() {
  auto* box = new QGroupBox("Batching (applies live)");
  auto* form = new QFormLayout(box);
  strategy_ = new QComboBox;
  strategy_->addItems({"fifo", "adaptive"});
  form->addRow("Strategy", strategy_);

  batch_slider_ = new QSlider(Qt::Horizontal);
  batch_slider_->setRange(1, 1024);
  batch_spin_ = new QSpinBox;
  batch_spin_->setRange(1, 1024);
  auto* brow = new QHBoxLayout;
  brow->addWidget(batch_slider_);
  brow->addWidget(batch_spin_);
  form->addRow("Max batch size", brow);

  wait_slider_ = new QSlider(Qt::Horizontal);
  wait_slider_->setRange(0, 1000);
  wait_spin_ = new QDoubleSpinBox;
  wait_spin_->setRange(0, 1000);
  wait_spin_->setDecimals(2);
  wait_spin_->setSuffix(" ms");
  auto* wrow = new QHBoxLayout;
  wrow->addWidget(wait_slider_);
  wrow->addWidget(wait_spin_);
  form->addRow("Max wait", wrow);

  capacity_ = new QSpinBox;
  capacity_->setRange(1, 1 << 24);
  form->addRow("Queue capacity", capacity_);
  timeout_ = new QSpinBox;
  timeout_->setRange(1, 3'600'000);
  timeout_->setSuffix(" ms");
  form->addRow("Request timeout", timeout_);
  lanes_ = new QSpinBox;
  lanes_->setRange(1, 64);
  form->addRow("Lanes", lanes_);
  target_p99_ = new QDoubleSpinBox;
  target_p99_->setRange(0.01, 600000);
  target_p99_->setSuffix(" ms");
  form->addRow("p99 target", target_p99_);
  in_force_ = new QLabel;
  in_force_->setWordWrap(true);
  form->addRow(in_force_);
  problem_ = new QLabel;
  problem_->setStyleSheet("color: #b00020");
  problem_->setWordWrap(true);
  form->addRow(problem_);

  // Slider and spin box mirror each other; every change goes through the debounce.
  connect(batch_slider_, &QSlider::valueChanged, this, [this](int v) {
    if (batch_spin_->value() != v) batch_spin_->setValue(v);
    options_changed();
  });
  connect(batch_spin_, qOverload<int>(&QSpinBox::valueChanged), this, [this](int v) {
    if (batch_slider_->value() != v) batch_slider_->setValue(v);
  });
  connect(wait_slider_, &QSlider::valueChanged, this, [this](int pos) {
    if (wait_pos_of(wait_spin_->value()) != pos) wait_spin_->setValue(wait_ms_at(pos));
    options_changed();
  });
  connect(wait_spin_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this](double ms) {
    if (wait_pos_of(ms) != wait_slider_->value()) wait_slider_->setValue(wait_pos_of(ms));
    options_changed();
  });
  connect(strategy_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this] { options_changed(); });
  for (QSpinBox* s : {capacity_, timeout_, lanes_}) {
    connect(s, qOverload<int>(&QSpinBox::valueChanged), this, [this] { options_changed(); });
  }
  connect(target_p99_, qOverload<double>(&QDoubleSpinBox::valueChanged), this,
          [this] { options_changed(); });
  return box;
}

QWidget* WorkbenchWindow::make_traffic_panel() {
  auto* box = new QGroupBox("Traffic (in-process)");
  auto* form = new QFormLayout(box);
  pattern_ = new QComboBox;
  pattern_->addItems({"poisson", "constant", "burst", "closed"});
  form->addRow("Pattern", pattern_);
  rate_ = new QDoubleSpinBox;
  rate_->setRange(1, 1e6);
  rate_->setDecimals(0);
  rate_->setSuffix(" req/s");
  rate_->setValue(config_.traffic_rate);
  form->addRow("Rate", rate_);
  concurrency_ = new QSpinBox;
  concurrency_->setRange(1, 4096);
  concurrency_->setValue(16);
  form->addRow("Concurrency (closed)", concurrency_);
  start_stop_ = new QPushButton("Start (Space)");
  form->addRow(start_stop_);
  traffic_label_ = new QLabel;
  traffic_label_->setWordWrap(true);
  form->addRow(traffic_label_);
  connect(start_stop_, &QPushButton::clicked, this, [this] {
    if (traffic_running())
      stop_traffic();
    else
      start_traffic();
  });
  new QShortcut(QKeySequence(Qt::Key_Space), this, [this] { start_stop_->click(); });
  return box;
}

QWidget* WorkbenchWindow::make_server_panel() {
  auto* box = new QGroupBox("HTTP server");
  auto* form = new QFormLayout(box);
  host_ = new QLineEdit("127.0.0.1");
  form->addRow("Host", host_);
  port_ = new QSpinBox;
  port_->setRange(0, 65535);
  port_->setValue(8000);
  form->addRow("Port", port_);
  server_button_ = new QPushButton("Start listener");
  form->addRow(server_button_);
  server_label_ = new QLabel("Off.");
  server_label_->setWordWrap(true);
  server_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form->addRow(server_label_);
  connect(server_button_, &QPushButton::clicked, this, [this] {
    if (server_running()) {
      stop_server();
      return;
    }
    auto port = start_server(host_->text().toStdString(), static_cast<uint16_t>(port_->value()));
    if (!port) server_label_->setText(QString::fromStdString(port.error().message));
  });
  return box;
}

Expected<uint16_t> WorkbenchWindow::start_server(const std::string& host, uint16_t port) {
  if (server_) return server_port_;
  service_ = std::make_unique<InferenceService>(
      engine_, ServiceInfo{config_.model, config_.device, config_.version});
  server_ = std::make_unique<HttpServer>(
      [svc = service_.get()](HttpRequest&& req, Responder r) { svc->handle(std::move(req), r); });
  service_->set_server(server_.get());
  auto bound = server_->start(host, port);
  if (!bound) {
    server_.reset();
    service_.reset();
    return bound.error();
  }
  server_port_ = *bound;
  server_button_->setText("Stop listener");
  host_->setEnabled(false);
  port_->setEnabled(false);
  return server_port_;
}

void WorkbenchWindow::stop_server() {
  if (!server_) return;
  service_->shutting_down();
  server_->stop(2000);
  server_.reset();
  service_.reset();
  if (server_button_) {
    server_button_->setText("Start listener");
    host_->setEnabled(true);
    port_->setEnabled(true);
    server_label_->setText("Off.");
  }
}

void WorkbenchWindow::options_changed() {
  if (syncing_) return;
  in_force_->setText(in_force_->text().startsWith("Applying") ? in_force_->text()
                                                              : "Applying… " + in_force_->text());
  debounce_->start();
}

void WorkbenchWindow::apply_now() {
  debounce_->stop();
  Options o = engine_.status().options;
  o.strategy = strategy_->currentIndex() == 1 ? StrategyKind::kAdaptive : StrategyKind::kFifo;
  o.max_batch_size = static_cast<uint32_t>(batch_spin_->value());
  o.max_wait_us = std::llround(wait_spin_->value() * 1000.0);
  o.queue_capacity = static_cast<uint32_t>(capacity_->value());
  o.request_timeout_ms = timeout_->value();
  o.num_lanes = static_cast<uint32_t>(lanes_->value());
  o.target_p99_ms = target_p99_->value();
  if (o.max_batch_size > config_.model.max_batch_size) {
    problem_->setText(QString("Max batch size %1 is above the model's limit of %2.")
                          .arg(o.max_batch_size)
                          .arg(config_.model.max_batch_size));
    show_options(engine_.status());
    return;
  }
  const Status s = engine_.set_options(o);
  problem_->setText(s ? QString() : QString::fromStdString(s.message()));
  show_options(engine_.status());
}

void WorkbenchWindow::show_options(const EngineStatus& s) {
  const Options& o = s.options;
  syncing_ = true;
  strategy_->setCurrentIndex(o.strategy == StrategyKind::kAdaptive ? 1 : 0);
  batch_spin_->setValue(static_cast<int>(o.max_batch_size));
  batch_slider_->setValue(static_cast<int>(o.max_batch_size));
  wait_spin_->setValue(static_cast<double>(o.max_wait_us) / 1000.0);
  wait_slider_->setValue(wait_pos_of(wait_spin_->value()));
  capacity_->setValue(static_cast<int>(o.queue_capacity));
  timeout_->setValue(static_cast<int>(o.request_timeout_ms));
  lanes_->setValue(static_cast<int>(o.num_lanes));
  target_p99_->setValue(o.target_p99_ms);
  syncing_ = false;
  QString text = QString("In force: version %1 · %2 · batch ≤ %3 · wait ≤ %4 ms")
                     .arg(s.options_version)
                     .arg(strategy_name(o.strategy))
                     .arg(o.max_batch_size)
                     .arg(static_cast<double>(o.max_wait_us) / 1000.0, 0, 'f', 2);
  if (o.strategy == StrategyKind::kAdaptive) {
    text += QString(" (now applying batch %1, wait %2 ms)")
                .arg(s.limits.max_batch)
                .arg(to_ms(s.limits.max_wait), 0, 'f', 2);
  }
  in_force_->setText(text);
}

void WorkbenchWindow::start_traffic() {
  if (traffic_running()) return;
  ArrivalSpec spec;
  const QString p = pattern_->currentText();
  spec.pattern = parse_pattern(p.toStdString()).value_or(Pattern::kPoisson);
  spec.rate = rate_->value();
  spec.rate_low = spec.rate / 10;
  spec.on_s = 2;
  spec.off_s = 2;
  spec.concurrency = static_cast<uint32_t>(concurrency_->value());
  spec.duration_s = 1e6;
  spec.seed = 1;
  traffic_stop_ = false;
  counters_.sent = counters_.ok = counters_.rejected = counters_.failed = 0;
  traffic_started_ = std::chrono::steady_clock::now();
  const ModelMetadata meta = config_.model;
  traffic_ = std::thread([this, spec, meta] {
    std::vector<Tensors> pool;
    for (uint64_t i = 0; i < 64; ++i) pool.push_back(random_inputs(meta, i + 1));
    EngineTarget target(engine_, [&pool](uint64_t i) { return pool[i % pool.size()]; });
    SteadyClock clock;
    LoadOptions lo;
    lo.stop = &traffic_stop_;
    lo.keep_requests = false;
    lo.counters = &counters_;
    lo.drain_timeout = std::chrono::seconds(5);
    run_load(spec, target, RunConfig{}, clock, lo);
  });
  start_stop_->setText("Stop (Space)");
}

void WorkbenchWindow::stop_traffic() {
  if (!traffic_running()) return;
  traffic_stop_ = true;
  traffic_.join();
  if (start_stop_) start_stop_->setText("Start (Space)");
}

void WorkbenchWindow::refresh() {
  const MetricsSnapshot s = monitor_.poll(engine_);
  if (!s.windows.empty() && !pause_->isChecked()) {
    const double span = span_->currentIndex() == 0 ? 10 : span_->currentIndex() == 1 ? 60 : 300;
    const TimePoint newest = s.windows.back().start + s.window_length;
    QVector<double> x, p50, p90, p99, mx, tgt, dm, dx, bm, bx, ok, rej;
    const double per_s = 1.0 / std::chrono::duration<double>(s.window_length).count();
    for (const MetricsWindow& w : s.windows) {
      const double t = std::chrono::duration<double>(w.start - newest).count();
      if (t < -span - 1) continue;
      x << t;
      const bool has = w.total_ns.count() > 0;
      const LatencySummary l = summarize(w.total_ns);
      p50 << (has ? l.p50_us / 1000 : kNaN);
      p90 << (has ? l.p90_us / 1000 : kNaN);
      p99 << (has ? l.p99_us / 1000 : kNaN);
      mx << (has ? l.max_us / 1000 : kNaN);
      tgt << s.engine.options.target_p99_ms;
      dm << (w.depth_samples ? w.mean_queue_depth() : kNaN);
      dx << (w.depth_samples ? w.max_queue_depth : kNaN);
      bm << (w.batches ? w.mean_batch_size() : kNaN);
      bx << (w.batches ? static_cast<double>(w.batch_sizes.max()) : kNaN);
      ok << static_cast<double>(w.count(Outcome::kOk)) * per_s;
      rej << static_cast<double>(w.count(Outcome::kRejected)) * per_s;
    }
    p50_->setData(x, p50, true);
    p90_->setData(x, p90, true);
    p99_->setData(x, p99, true);
    max_->setData(x, mx, true);
    target_->setData(x, tgt, true);
    target_->setVisible(s.engine.options.strategy == StrategyKind::kAdaptive);
    depth_mean_->setData(x, dm, true);
    depth_max_->setData(x, dx, true);
    batch_mean_->setData(x, bm, true);
    batch_max_->setData(x, bx, true);
    tput_ok_->setData(x, ok, true);
    tput_rejected_->setData(x, rej, true);
    for (QCPAxisRect* r : plot_->axisRects()) {
      r->axis(QCPAxis::atBottom)->setRange(-span, 0);
      bool found = false;
      QCPRange y;
      for (QCPGraph* g : r->graphs()) {
        if (!g->visible()) continue;
        const QCPRange gr = g->getValueRange(found, QCP::sdBoth, QCPRange(-span, 0));
        if (found)
          y = y.size() == 0 && y.lower == 0
                  ? gr
                  : QCPRange(std::min(y.lower, gr.lower), std::max(y.upper, gr.upper));
      }
      r->axis(QCPAxis::atLeft)->setRange(0, std::max(1.0, y.upper * 1.15));
    }
    plot_->replot(QCustomPlot::rpQueuedReplot);
  }
  if (!debounce_->isActive()) show_options(s.engine);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - traffic_started_).count();
  if (server_) {
    server_label_->setText(
        QString("Listening on http://%1:%2 · %3 answered, %4 errors. Try:\n%5")
            .arg(host_->text())
            .arg(server_port_)
            .arg(server_->requests())
            .arg(server_->errors())
            .arg(curl_example(host_->text().toStdString(), server_port_, config_.model)));
  }
  traffic_label_->setText(QString("%1 · %2 s · sent %3 · ok %4 · rejected %5 · failed %6")
                              .arg(traffic_running() ? "running" : "stopped")
                              .arg(traffic_running() ? secs : 0.0, 0, 'f', 0)
                              .arg(counters_.sent.load())
                              .arg(counters_.ok.load())
                              .arg(counters_.rejected.load())
                              .arg(counters_.failed.load()));
}

bool WorkbenchWindow::export_png(const QString& path) { return plot_->savePng(path, 0, 0, 1.0); }

QString WorkbenchWindow::problem() const { return problem_->text(); }

int WorkbenchWindow::plotted_windows() const { return p50_->data()->size(); }

QWidget* WorkbenchWindow::plot_widget() const { return plot_; }

}  // namespace batchscope

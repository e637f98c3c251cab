// SPDX-License-Identifier: GPL-3.0-or-later
// The workbench window's Server tab: the HTTP listener over the window's
// engine, started and stopped from the tab (or by traffic aimed at it), its
// address, counts and a curl line to try it with.

#include <QCheckBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

#include "ui/runs/runs_panel.h"
#include "ui/workbench/traffic_panel.h"
#include "ui/workbench/workbench_window.h"

namespace batchscope {
namespace {

QString curl_example(const std::string& host, uint16_t port, const ModelMetadata& m, bool token) {
  QString zeros;
  // A variable input: one of length 8 (ones: a mask or token ids of 1 fit).
  const int64_t all = m.inputs.empty() ? 0
                      : m.inputs[0].variable()
                          ? Tensor(DType::kFloat32, m.inputs[0].sample_item_shape(8)).numel()
                          : m.inputs[0].item_numel();
  const int64_t n = std::min<int64_t>(all, 8);
  const char* value = !m.inputs.empty() && m.inputs[0].variable() ? "1" : "0";
  for (int64_t i = 0; i < n; ++i) zeros += QString(i ? "," : "") + value;
  const QString more = all <= 8 ? QString() : QString(" (with all %1 values)").arg(all);
  // The token itself stays off the screen: the example reads it from where
  // serve and bench read it.
  const QString auth = token ? "-H \"Authorization: Bearer $BATCHSCOPE_TOKEN\" " : "";
  return QString("curl %1-X POST -d '{\"data\": [%2]}' http://%3:%4/infer%5")
      .arg(auth, zeros, QString::fromStdString(host))
      .arg(port)
      .arg(more);
}

}  // namespace

QWidget* WorkbenchWindow::make_server_panel() {
  auto* box = new QWidget;
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
  // Keeps what the engine answers while it is on as a run of kind serve in
  // the Runs tab and the history: the clients' requests, and the built-in
  // traffic's too unless it is paused.
  record_clients_ = new QCheckBox("Record as a serve run");
  record_clients_->setToolTip(
      "Keeps every request the engine answers from now on (sizes and timings, never a body) "
      "as a run of kind serve, in the Runs tab and the run history. Pause the built-in "
      "traffic to keep only the clients'.");
  form->addRow(record_clients_);
  connect(record_clients_, &QCheckBox::toggled, this, [this](bool on) {
    if (on && !runs_->recording()) {
      runs_->start_recording("served clients", QStringLiteral("serve"));
    } else if (on) {
      record_clients_->setChecked(false);  // the Runs tab records already
      server_label_->setText("The Runs tab is recording already; stop it there first.");
    } else if (runs_->recording()) {
      runs_->stop_recording();
    }
  });
  return box;
}

Expected<uint16_t> WorkbenchWindow::start_server(const std::string& host, uint16_t port) {
  if (server_) return server_port_;
  if (!engine_) return no_engine().error();
  service_ = std::make_unique<InferenceService>(
      *engine_,
      ServiceInfo{.model = model_.metadata, .device = model_.device, .version = config_.version});
  service_->set_access(config_.access);
  HttpServerOptions listener;
  listener.max_connections = config_.max_connections;
  server_ = std::make_unique<HttpServer>(
      [svc = service_.get()](HttpRequest&& req, Responder r) { svc->handle(std::move(req), r); },
      listener);
  service_->set_server(server_.get());
  // The window drains the engine's records; /metrics reads its totals.
  publish_totals();
  service_->set_metrics_source([this] {
    std::lock_guard g(published_mu_);
    return published_totals_;
  });
  auto bound = server_->start(host, port);
  if (!bound) {
    server_.reset();
    service_.reset();
    return bound.error();
  }
  server_port_ = *bound;
  server_warning_ = is_loopback_host(host)
                        ? QString()
                        : "\n\n" + QString::fromStdString(exposure_warning(host, config_.access));
  server_button_->setText("Stop listener");
  host_->setEnabled(false);
  port_->setEnabled(false);
  return server_port_;
}

void WorkbenchWindow::stop_server() {
  if (!server_) return;
  if (traffic_->running() && traffic_->target() == TrafficPanel::kSelfHttp) traffic_->stop();
  service_->shutting_down();
  server_->stop(2000);
  const HttpCounters c = server_->counters();
  retired_http_ += c;
  server_.reset();
  // Requests it admitted may still be queued or running (the drain above is
  // bounded), and their completions use the service: it lives until the
  // engine stops.
  retired_services_.push_back(std::move(service_));
  server_button_->setText("Start listener");
  host_->setEnabled(true);
  port_->setEnabled(true);
  server_label_->setText("Off.");
}

HttpCounters WorkbenchWindow::http_counters() const {
  HttpCounters all = retired_http_;
  if (server_) all += server_->counters();
  return all;
}

void WorkbenchWindow::show_server_state() {
  if (!server_) return;
  const std::string host = host_->text().toStdString();
  QString text =
      QString("Listening on http://%1:%2 · %3 answered, %4 errors. Try:\n%5")
          .arg(host_->text())
          .arg(server_port_)
          .arg(server_->requests())
          .arg(server_->errors())
          .arg(curl_example(host, server_port_, model_.metadata, !config_.access.token.empty()));
  server_label_->setText(text + server_warning_);
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_listener.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace batchscope {

namespace {

constexpr int kDrainMs = 2000;  // what a stopped listener has read is answered within this

}  // namespace

GenListener::GenListener(GenEngine& engine, GenListenerConfig config, QWidget* parent)
    : QGroupBox("HTTP listener", parent), engine_(engine), config_(std::move(config)) {
  host_ = new QLineEdit(QString::fromStdString(config_.host));
  host_->setToolTip(
      "127.0.0.1: this machine only; 0.0.0.0: every interface, which other machines can reach");
  port_field_ = new QSpinBox;
  port_field_->setRange(0, 65535);
  port_field_->setValue(config_.listen_port >= 0 ? config_.listen_port : 8000);
  port_field_->setToolTip("0 picks a free port");
  button_ = new QPushButton("Start listener");
  label_ = new QLabel("Off.");
  label_->setWordWrap(true);
  label_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel("host"));
  row->addWidget(host_, 1);
  row->addWidget(new QLabel("port"));
  row->addWidget(port_field_);
  row->addWidget(button_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(row);
  layout->addWidget(label_);
  connect(button_, &QPushButton::clicked, this, [this] { toggle(); });

  if (config_.listen_port >= 0) {
    auto bound = start(config_.host, static_cast<uint16_t>(config_.listen_port));
    if (!bound) label_->setText(QString::fromStdString(bound.error().message));
  }
}

GenListener::~GenListener() { stop(); }

void GenListener::toggle() {
  if (running()) return stop();
  auto bound = start(host_->text().toStdString(), static_cast<uint16_t>(port_field_->value()));
  if (!bound) label_->setText(QString::fromStdString(bound.error().message));
}

Expected<uint16_t> GenListener::start(const std::string& host, uint16_t port) {
  if (server_) return port_;
  service_ = std::make_unique<GenerationService>(
      engine_, GenServiceInfo{engine_.info(), config_.device, config_.version});
  service_->set_access(config_.access);
  // The view drains the engine's records; /metrics reads the totals it folds.
  service_->set_metrics_source([published = published_] {
    std::lock_guard g(published->mu);
    return published->totals;
  });
  HttpServerOptions listener;
  listener.max_connections = config_.max_connections;
  server_ = std::make_unique<HttpServer>(
      [svc = service_.get()](HttpRequest&& req, Responder r) { svc->handle(std::move(req), r); },
      listener);
  service_->set_server(server_.get());
  auto bound = server_->start(host, port);
  if (!bound) {
    server_.reset();
    service_.reset();
    return bound.error();
  }
  port_ = *bound;
  host_bound_ = host;
  warning_ = is_loopback_host(host)
                 ? QString()
                 : "\n\n" + QString::fromStdString(exposure_warning(host, config_.access));
  host_->setText(QString::fromStdString(host));
  port_field_->setValue(port_);
  host_->setEnabled(false);
  port_field_->setEnabled(false);
  button_->setText("Stop listener");
  refresh();
  return port_;
}

void GenListener::stop() {
  if (!server_) return;
  service_->shutting_down();
  server_->stop(kDrainMs);
  server_.reset();
  // What it admitted may still be queued or running (the drain is bounded),
  // and answers through the service: it stays until the engine stops.
  retired_.push_back(std::move(service_));
  host_->setEnabled(true);
  port_field_->setEnabled(true);
  button_->setText("Start listener");
  label_->setText("Off.");
}

std::vector<std::unique_ptr<GenerationService>> GenListener::take_services() {
  stop();
  std::vector<std::unique_ptr<GenerationService>> all;
  all.swap(retired_);
  return all;
}

void GenListener::publish(const GenWindow& totals) {
  std::lock_guard g(published_->mu);
  published_->totals = totals;
}

QString GenListener::routes() const {
  const QString model = QString::fromStdString(engine_.info().name);
  QString text =
      QString(
          "POST /v1/chat/completions · POST /v1/completions (\"stream\": true for events)\n"
          "POST /v2/models/%1/generate[_stream]\n"
          "GET /metrics · %2 /v1/config")
          .arg(model, config_.access.remote_config ? "GET|PUT" : "GET");
  if (!config_.access.token.empty())
    text += "\nEvery route but /health needs 'Authorization: Bearer' with the token.";
  return text;
}

void GenListener::refresh() {
  if (!server_) return;
  const QString text = QString("Listening on http://%1:%2 · %3 answered, %4 errors\n%5%6")
                           .arg(QString::fromStdString(host_bound_))
                           .arg(port_)
                           .arg(server_->requests())
                           .arg(server_->errors())
                           .arg(routes(), warning_);
  if (text != label_->text()) label_->setText(text);
}

QString GenListener::text() const { return label_->text(); }

}  // namespace batchscope

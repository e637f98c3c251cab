// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/traffic_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QShortcut>
#include <QSpinBox>
#include <optional>

#include "api/http_target.h"
#include "traffic/varied_inputs.h"

namespace batchscope {

namespace {

QDoubleSpinBox* number(double lo, double hi, double value, const QString& suffix, int decimals) {
  auto* s = new QDoubleSpinBox;
  s->setRange(lo, hi);
  s->setDecimals(decimals);
  s->setValue(value);
  s->setSuffix(suffix);
  return s;
}

}  // namespace

TrafficPanel::TrafficPanel(TrafficHooks hooks, double rate, QWidget* parent)
    : QGroupBox("Traffic", parent), hooks_(std::move(hooks)) {
  auto* form = new QFormLayout(this);
  pattern_ = new QComboBox;
  pattern_->addItems({"poisson", "constant", "burst", "sine", "closed"});
  form->addRow("Pattern", pattern_);
  rate_ = number(1, 1e6, rate, " req/s", 0);
  rate_->setObjectName("rate");
  form->addRow("Rate (peak)", rate_);
  connect(rate_, &QDoubleSpinBox::valueChanged, this, [this] {
    if (!setting_rate_) rate_edited_ = true;
  });
  low_ = number(0, 1e6, rate / 10, " req/s", 0);
  form->addRow("Low rate", low_);
  on_s_ = number(0.01, 3600, 2, " s", 2);
  off_s_ = number(0, 3600, 2, " s", 2);
  form->addRow("Burst on", on_s_);
  form->addRow("Burst off", off_s_);
  period_ = number(0.1, 86400, 20, " s", 1);
  form->addRow("Sine period", period_);
  concurrency_ = new QSpinBox;
  concurrency_->setRange(1, 4096);
  concurrency_->setValue(16);
  form->addRow("In flight (closed)", concurrency_);
  lengths_ = new QLineEdit;
  lengths_->setPlaceholderText("the model's default");
  lengths_->setToolTip(
      "For a model whose inputs vary in length: the lengths requests are drawn from, "
      "fixed:N, uniform:LO,HI or lognormal:MEDIAN,SIGMA[,MAX] (as bench --seq-len)");
  form->addRow("Lengths", lengths_);
  target_ = new QComboBox;
  target_->addItems({"in-process engine", "this server over HTTP", "a URL"});
  form->addRow("Target", target_);
  url_ = new QLineEdit("http://127.0.0.1:8000/infer");
  url_->setToolTip("A URL ending in /infer or /v2/models/NAME/infer");
  form->addRow("URL", url_);
  // Not saved with the window's settings, and shown as dots.
  token_ = new QLineEdit;
  token_->setEchoMode(QLineEdit::Password);
  token_->setPlaceholderText("none");
  token_->setToolTip("Sent to the URL as 'Authorization: Bearer TOKEN' (batchscope serve --token)");
  form->addRow("Token", token_);
  connections_ = new QSpinBox;
  connections_->setRange(1, 1024);
  connections_->setValue(32);
  form->addRow("Connections", connections_);
  start_stop_ = new QPushButton("Start (Space)");
  form->addRow(start_stop_);
  label_ = new QLabel;
  label_->setWordWrap(true);
  form->addRow(label_);
  error_ = new QLabel;
  error_->setStyleSheet("color: #b00020");
  error_->setWordWrap(true);
  form->addRow(error_);

  connect(pattern_, &QComboBox::currentTextChanged, this, [this] { update_fields(); });
  connect(target_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this] { update_fields(); });
  connect(start_stop_, &QPushButton::clicked, this, [this] {
    if (running())
      stop();
    else
      (void)start();  // a refusal shows in the panel
  });
  new QShortcut(
      QKeySequence(Qt::Key_Space), this, [this] { start_stop_->click(); }, Qt::WindowShortcut);
  update_fields();
}

TrafficPanel::~TrafficPanel() { stop(); }

void TrafficPanel::update_fields() {
  // While traffic runs the fields show what it runs with: they take effect
  // only at a start, and the window asks target() which traffic it has.
  const bool idle = !running();
  const QString p = pattern_->currentText();
  pattern_->setEnabled(idle);
  rate_->setEnabled(idle && p != "closed");
  low_->setEnabled(idle && (p == "burst" || p == "sine"));
  on_s_->setEnabled(idle && p == "burst");
  off_s_->setEnabled(idle && p == "burst");
  period_->setEnabled(idle && p == "sine");
  concurrency_->setEnabled(idle && p == "closed");
  lengths_->setEnabled(idle);
  target_->setEnabled(idle);
  url_->setEnabled(idle && target_->currentIndex() == kUrl);
  token_->setEnabled(idle && target_->currentIndex() == kUrl);
  connections_->setEnabled(idle && target_->currentIndex() != kInProcess);
}

ArrivalSpec TrafficPanel::spec() const {
  ArrivalSpec s;
  s.pattern = parse_pattern(pattern_->currentText().toStdString()).value_or(Pattern::kPoisson);
  s.rate = rate_->value();
  s.rate_low = low_->value();
  s.on_s = on_s_->value();
  s.off_s = off_s_->value();
  s.period_s = period_->value();
  s.rate_min = std::min(low_->value(), rate_->value());
  s.rate_max = rate_->value();
  s.concurrency = static_cast<uint32_t>(concurrency_->value());
  s.duration_s = 1e6;  // until stopped
  s.seed = 1;
  return s;
}

std::string TrafficPanel::pattern_text() const { return spec().describe(); }

std::string TrafficPanel::target_name() const {
  switch (target_->currentIndex()) {
    case kInProcess: return "inproc";
    case kSelfHttp: return "self-http";
    default: return url_->text().toStdString();
  }
}

Status TrafficPanel::start() {
  if (running()) return {};
  error_->clear();
  Status s = start_thread();
  if (!s) error_->setText(QString::fromStdString(s.message()));
  update_fields();
  return s;
}

Status TrafficPanel::start_thread() {
  const ArrivalSpec s = spec();
  if (Status v = s.validate(); !v) return v;
  const ModelMetadata meta = hooks_.model();
  // The payloads, for any target, are made to fit the model's inputs.
  if (meta.inputs.empty()) return invalid_argument("no model is loaded yet");
  std::optional<LengthDist> lengths;
  if (const std::string text = lengths_->text().trimmed().toStdString(); !text.empty()) {
    if (!has_variable_inputs(meta)) {
      return invalid_argument("Lengths \"" + text + "\": model '" + meta.name +
                              "' has no input that varies in length; clear the field");
    }
    auto d = LengthDist::parse(text, "Lengths \"" + text + "\"");
    if (!d) return d.error();
    lengths = *d;
  }
  Engine* engine = hooks_.engine();
  std::optional<Url> url;
  if (target_->currentIndex() == kInProcess) {
    if (!engine) return invalid_argument("the model is still loading");
  } else if (target_->currentIndex() == kSelfHttp) {
    auto self = hooks_.listen();
    if (!self) return self.error();
    url = *self;
  } else {
    auto u = parse_url(url_->text().toStdString());
    if (!u) return invalid_argument("URL: " + u.error().message);
    url = *u;
    url->bearer_token = token_->text().toStdString();
  }
  std::unique_ptr<HttpTarget> http;
  if (url) {
    http = std::make_unique<HttpTarget>(*url, meta, connections_->value(), s.seed,
                                        std::vector<std::string>{}, lengths);
    if (Status st = http->start(); !st) return st;
  }
  stop_ = false;
  counters_.sent = counters_.ok = counters_.rejected = counters_.failed = 0;
  started_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this, s, meta, engine, http = std::move(http), lengths] {
    SteadyClock clock;
    LoadOptions lo;
    lo.stop = &stop_;
    lo.keep_requests = false;
    lo.counters = &counters_;
    lo.drain_timeout = std::chrono::seconds(5);
    if (http) {
      run_load(s, *http, RunConfig{}, clock, lo);
      http->stop();
      return;
    }
    std::vector<Tensors> pool;
    if (has_variable_inputs(meta)) {
      pool = varied_inputs(meta, lengths.value_or(default_lengths(meta)), s.seed, kVariedPool);
    } else {
      for (uint64_t i = 0; i < 64; ++i) pool.push_back(random_inputs(meta, i + 1));
    }
    EngineTarget target(*engine, [&pool](uint64_t i) { return pool[i % pool.size()]; });
    run_load(s, target, RunConfig{}, clock, lo);
  });
  start_stop_->setText("Stop (Space)");
  return {};
}

void TrafficPanel::stop() {
  if (!running()) return;
  stop_ = true;
  thread_.join();
  start_stop_->setText("Start (Space)");
  update_fields();
}

void TrafficPanel::refresh() {
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  label_->setText(QString("%1 · %2 s · sent %3 · ok %4 · rejected %5 · failed %6")
                      .arg(running() ? "running" : "stopped")
                      .arg(running() ? secs : 0.0, 0, 'f', 0)
                      .arg(counters_.sent.load())
                      .arg(counters_.ok.load())
                      .arg(counters_.rejected.load())
                      .arg(counters_.failed.load()));
}

void TrafficPanel::set_target(Target t, const QString& url) {
  target_->setCurrentIndex(t);
  if (!url.isEmpty()) url_->setText(url);
}
void TrafficPanel::set_token(const QString& token) { token_->setText(token); }
void TrafficPanel::set_pattern(const QString& name) {
  const int i = pattern_->findText(name);
  if (i >= 0) pattern_->setCurrentIndex(i);
}
void TrafficPanel::set_rate(double per_s) {
  setting_rate_ = true;
  rate_->setValue(per_s);
  if (low_->value() > rate_->value()) low_->setValue(rate_->value() / 10);
  setting_rate_ = false;
}
QString TrafficPanel::error() const { return error_->text(); }
QString TrafficPanel::pattern() const { return pattern_->currentText(); }
double TrafficPanel::rate() const { return rate_->value(); }
int TrafficPanel::target() const { return target_->currentIndex(); }
QString TrafficPanel::url() const { return url_->text(); }
int TrafficPanel::concurrency() const { return concurrency_->value(); }
void TrafficPanel::set_concurrency(int n) { concurrency_->setValue(n); }
QString TrafficPanel::lengths() const { return lengths_->text(); }
void TrafficPanel::set_lengths(const QString& text) { lengths_->setText(text); }

}  // namespace batchscope

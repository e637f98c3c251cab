// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/batching_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSlider>
#include <QSpinBox>
#include <QTimer>
#include <cmath>

namespace batchscope {

double wait_ms_at(int pos) { return pos <= 0 ? 0.0 : 0.01 * std::pow(10.0, 5.0 * pos / 1000.0); }

int wait_pos_of(double ms) {
  return ms <= 0
             ? 0
             : std::clamp(static_cast<int>(std::lround(std::log10(ms / 0.01) * 200.0)), 1, 1000);
}

namespace {
// Marked: edited, and not yet confirmed by the engine.
const char* kPendingStyle = "background: #fff1b8;";
}  // namespace

BatchingPanel::BatchingPanel(Apply apply, QWidget* parent)
    : QGroupBox("Batching (applies live)", parent), apply_(std::move(apply)) {
  auto* form = new QFormLayout(this);
  strategy_ = new QComboBox;
  strategy_->addItems({"fifo", "adaptive"});
  strategy_->setToolTip(
      "fifo: cut when full or when the oldest has waited max wait.\n"
      "adaptive: picks batch size and wait to keep p99 under the target.");
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
  wait_slider_->setToolTip("Logarithmic: 0, then 0.01 ms to 1000 ms");
  wait_spin_ = new QDoubleSpinBox;
  wait_spin_->setRange(0, 10'000);  // the engine takes up to 10 s; the slider stops at 1 s
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
  preprocess_ = new QSpinBox;
  preprocess_->setRange(0, 64);
  set_preprocess(false);
  form->addRow("Preprocess workers", preprocess_);
  target_p99_ = new QDoubleSpinBox;
  target_p99_->setRange(0.01, 600000);
  target_p99_->setSuffix(" ms");
  form->addRow("p99 target", target_p99_);
  padding_ = new QComboBox;
  padding_->addItems({"longest", "buckets", "sorted"});
  padding_->setToolTip(
      "For a model whose inputs vary in length; each batch is padded to its longest.\n"
      "longest: first come first batched.\n"
      "buckets: a batch holds one length bucket; each bucket fills and waits on its own.\n"
      "sorted: the oldest request and the queued ones nearest its length.");
  form->addRow("Padding", padding_);
  buckets_ = new QLineEdit;
  buckets_->setToolTip(
      "The buckets' largest lengths, rising, at most 8 (Enter applies);\n"
      "a longer request has a bucket beyond the last");
  form->addRow("Length buckets", buckets_);
  in_force_label_ = new QLabel;
  in_force_label_->setWordWrap(true);
  form->addRow(in_force_label_);
  problem_ = new QLabel;
  problem_->setStyleSheet("color: #b00020");
  problem_->setWordWrap(true);
  form->addRow(problem_);

  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(100);
  connect(debounce_, &QTimer::timeout, this, [this] { apply_now(); });

  // Slider and spin box mirror each other; every change goes through the debounce.
  connect(batch_slider_, &QSlider::valueChanged, this, [this](int v) {
    if (batch_spin_->value() != v) batch_spin_->setValue(v);
    changed("max_batch_size");
  });
  connect(batch_spin_, qOverload<int>(&QSpinBox::valueChanged), this, [this](int v) {
    if (batch_slider_->value() != v) batch_slider_->setValue(v);
  });
  connect(wait_slider_, &QSlider::valueChanged, this, [this](int pos) {
    if (wait_pos_of(wait_spin_->value()) != pos) wait_spin_->setValue(wait_ms_at(pos));
    changed("max_wait");
  });
  connect(wait_spin_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this](double ms) {
    if (wait_pos_of(ms) != wait_slider_->value()) wait_slider_->setValue(wait_pos_of(ms));
    changed("max_wait");
  });
  connect(strategy_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this] { changed("strategy"); });
  connect(capacity_, qOverload<int>(&QSpinBox::valueChanged), this,
          [this] { changed("queue_capacity"); });
  connect(timeout_, qOverload<int>(&QSpinBox::valueChanged), this,
          [this] { changed("request_timeout"); });
  connect(lanes_, qOverload<int>(&QSpinBox::valueChanged), this, [this] { changed("lanes"); });
  connect(preprocess_, qOverload<int>(&QSpinBox::valueChanged), this,
          [this] { changed("preprocess_workers"); });
  connect(target_p99_, qOverload<double>(&QDoubleSpinBox::valueChanged), this,
          [this] { changed("target_p99"); });
  connect(padding_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this] { changed("padding"); });
  connect(buckets_, &QLineEdit::editingFinished, this, [this] {
    Options shown = in_force_;
    if (parse_length_buckets(buckets_->text().toStdString(), shown).ok() &&
        shown.length_buckets == in_force_.length_buckets) {
      return;  // unchanged (focus left without an edit)
    }
    changed("length_buckets");
  });
}

void BatchingPanel::set_model_limit(uint32_t max_batch) { model_limit_ = max_batch; }

void BatchingPanel::set_preprocess(bool has) {
  preprocess_->setEnabled(has);
  preprocess_->setToolTip(
      has ? "Processes that run the model's preprocess on each request as it arrives,\n"
            "before the batcher; 0: each lane prepares its batch itself"
          : "The model has no preprocess");
}

QWidget* BatchingPanel::control(const std::string& field) const {
  if (field == "strategy") return strategy_;
  if (field == "max_batch_size") return batch_spin_;
  if (field == "max_wait") return wait_spin_;
  if (field == "queue_capacity") return capacity_;
  if (field == "request_timeout") return timeout_;
  if (field == "lanes") return lanes_;
  if (field == "preprocess_workers") return preprocess_;
  if (field == "padding") return padding_;
  if (field == "length_buckets") return buckets_;
  return target_p99_;
}

void BatchingPanel::mark(const std::string& field, bool on) {
  QWidget* w = control(field);
  w->setStyleSheet(on ? kPendingStyle : "");
  w->setToolTip(on ? "Changed; waiting for the engine to confirm it" : QString());
}

void BatchingPanel::changed(const std::string& field) {
  if (syncing_) return;
  pending_.insert(field);
  mark(field, true);
  debounce_->start();
}

Options BatchingPanel::edited(const Options& base) const {
  Options o = base;
  o.strategy = strategy_->currentIndex() == 1 ? StrategyKind::kAdaptive : StrategyKind::kFifo;
  o.max_batch_size = static_cast<uint32_t>(batch_spin_->value());
  o.max_wait_us = std::llround(wait_spin_->value() * 1000.0);
  o.queue_capacity = static_cast<uint32_t>(capacity_->value());
  o.request_timeout_ms = timeout_->value();
  o.num_lanes = static_cast<uint32_t>(lanes_->value());
  o.preprocess_workers = static_cast<uint32_t>(preprocess_->value());
  o.target_p99_ms = target_p99_->value();
  o.padding = static_cast<Padding>(std::max(0, padding_->currentIndex()));
  Options buckets = o;  // unreadable text leaves them as they were
  if (parse_length_buckets(buckets_->text().toStdString(), buckets).ok())
    o.length_buckets = buckets.length_buckets;
  return o;
}

void BatchingPanel::apply_now() {
  debounce_->stop();
  // Only the edited fields: a control that cannot show the value in force
  // exactly (out of its range, finer than its decimals) must not change it.
  const Options mine = edited(in_force_);
  Options o = in_force_;
  if (pending_.count("strategy")) o.strategy = mine.strategy;
  if (pending_.count("max_batch_size")) o.max_batch_size = mine.max_batch_size;
  if (pending_.count("max_wait")) o.max_wait_us = mine.max_wait_us;
  if (pending_.count("queue_capacity")) o.queue_capacity = mine.queue_capacity;
  if (pending_.count("request_timeout")) o.request_timeout_ms = mine.request_timeout_ms;
  if (pending_.count("lanes")) o.num_lanes = mine.num_lanes;
  if (pending_.count("preprocess_workers")) o.preprocess_workers = mine.preprocess_workers;
  if (pending_.count("target_p99")) o.target_p99_ms = mine.target_p99_ms;
  if (pending_.count("padding")) o.padding = mine.padding;
  // Buckets that do not read are refused with the text as typed.
  Status s = pending_.count("length_buckets")
                 ? parse_length_buckets(buckets_->text().toStdString(), o)
                 : Status::Ok();
  if (s && o.max_batch_size > model_limit_) {
    s = invalid_argument(QString("Max batch size %1 is above the model's limit of %2.")
                             .arg(o.max_batch_size)
                             .arg(model_limit_)
                             .toStdString());
  }
  if (s) s = apply_(o);
  problem_->setText(s ? QString() : QString::fromStdString(s.message()));
  if (!s) {  // back to what is in force
    for (const std::string& f : pending_) mark(f, false);
    pending_.clear();
    set_controls(in_force_);
  }
  settle_ = s.ok();
  shown_.reset();
}

void BatchingPanel::set_controls(const Options& o) {
  syncing_ = true;
  auto keep = [&](const char* f) { return pending_.count(f) != 0; };
  if (!keep("strategy")) strategy_->setCurrentIndex(o.strategy == StrategyKind::kAdaptive ? 1 : 0);
  if (!keep("max_batch_size")) {
    batch_spin_->setValue(static_cast<int>(o.max_batch_size));
    batch_slider_->setValue(static_cast<int>(o.max_batch_size));
  }
  if (!keep("max_wait")) {
    wait_spin_->setValue(static_cast<double>(o.max_wait_us) / 1000.0);
    wait_slider_->setValue(wait_pos_of(wait_spin_->value()));
  }
  if (!keep("queue_capacity")) capacity_->setValue(static_cast<int>(o.queue_capacity));
  if (!keep("request_timeout")) timeout_->setValue(static_cast<int>(o.request_timeout_ms));
  if (!keep("lanes")) lanes_->setValue(static_cast<int>(o.num_lanes));
  if (!keep("preprocess_workers")) preprocess_->setValue(static_cast<int>(o.preprocess_workers));
  if (!keep("target_p99")) target_p99_->setValue(o.target_p99_ms);
  if (!keep("padding")) padding_->setCurrentIndex(static_cast<int>(o.padding));
  if (!keep("length_buckets")) buckets_->setText(QString::fromStdString(length_buckets_text(o)));
  syncing_ = false;
}

void BatchingPanel::show_status(const EngineStatus& s) {
  const Options& o = s.options;
  in_force_ = o;
  if (!debounce_->isActive()) {
    // An edit is confirmed once the engine reports its value in force.
    const Options mine = edited(o);
    const std::pair<const char*, bool> same[] = {
        {"strategy", mine.strategy == o.strategy},
        {"max_batch_size", mine.max_batch_size == o.max_batch_size},
        {"max_wait", mine.max_wait_us == o.max_wait_us},
        {"queue_capacity", mine.queue_capacity == o.queue_capacity},
        {"request_timeout", mine.request_timeout_ms == o.request_timeout_ms},
        {"lanes", mine.num_lanes == o.num_lanes},
        {"preprocess_workers", mine.preprocess_workers == o.preprocess_workers},
        {"target_p99", mine.target_p99_ms == o.target_p99_ms},
        {"padding", mine.padding == o.padding},
        {"length_buckets", mine.length_buckets == o.length_buckets}};
    for (const auto& [field, confirmed] : same) {
      // The first status after an apply shows it or a later change (another
      // client, a new engine): either way the edit is settled.
      if ((confirmed || settle_) && pending_.erase(field)) mark(field, false);
    }
    settle_ = false;
    if (!shown_ || !(*shown_ == o) || !pending_.empty()) set_controls(o);  // not every tick
    shown_ = o;
  }
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
  if (o.padding != Padding::kLongest) {
    text += QString(" · padding %1").arg(padding_name(o.padding));
    if (o.padding == Padding::kBuckets)
      text += QString(" (%1)").arg(QString::fromStdString(length_buckets_text(o)));
  }
  if (!pending_.empty()) text += " · applying…";
  in_force_label_->setText(text);
}

QString BatchingPanel::problem() const { return problem_->text(); }

QString BatchingPanel::in_force_text() const { return in_force_label_->text(); }

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/model_panel.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QTimer>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "ui/common/gui_thread.h"
#include "ui/workbench/describe_dialog.h"

namespace batchscope {

namespace {

const QColor kTimeColor(30, 90, 180);
const QColor kFitColor(120, 150, 200);
const QColor kSpeedupColor(210, 110, 20);

bool is_synthetic(const QString& path) {
  return path.isEmpty() || path == "synthetic" || path.startsWith("synthetic:");
}

// "synthetic:500,20" -> "Synthetic 500+20·b µs", short enough for a narrow box.
QString synthetic_label(const QString& path) {
  const QStringList v = path.section(':', 1).split(',', Qt::SkipEmptyParts);
  if (v.size() < 2) return "Synthetic";
  QString cost = v[0] + "+" + v[1] + "·b";
  if (v.size() > 2 && v[2].toDouble() > 0) cost += "+" + v[2] + "·ln(b+1)";
  return "Synthetic " + cost + " µs";
}

// Microseconds with as many decimals as they deserve.
QString us_text(double us) {
  const double a = std::abs(us);
  return QString::number(us, 'f', a >= 100 ? 0 : a >= 10 ? 1 : 2);
}

QString times_text(double x) { return QString::number(x, 'f', x >= 100 ? 0 : 1) + "×"; }

// Per-item speedup at point i over a batch of one.
double speedup_at(const std::vector<CostPoint>& p, size_t i) {
  if (p.empty() || p[i].median_us <= 0) return 0;
  return p[0].median_us / p[0].batch / (p[i].median_us / p[i].batch);
}

QLabel* wrapped_label() {
  auto* l = new QLabel;
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return l;
}

}  // namespace

ModelPanel::ModelPanel(QString models_dir, std::vector<std::string> devices, QWidget* parent)
    : QGroupBox("Model", parent) {
  list_ = new ModelListModel(std::move(models_dir), this);
  auto* col = new QVBoxLayout(this);

  model_ = new QComboBox;
  model_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  model_->setMinimumContentsLength(10);
  rescan_ = new QToolButton;
  rescan_->setText("↻");
  rescan_->setToolTip("Look again for models in " + list_->dir());
  open_ = new QPushButton("Open…");
  auto* row = new QHBoxLayout;
  row->addWidget(model_, 1);
  row->addWidget(rescan_);
  row->addWidget(open_);
  col->addLayout(row);

  device_ = new QComboBox;
  if (devices.empty()) devices.push_back("cpu");
  for (const std::string& d : devices) device_->addItem(QString::fromStdString(d));
  load_ = new QPushButton("Load");
  auto* row2 = new QHBoxLayout;
  row2->addWidget(new QLabel("Device"));
  row2->addWidget(device_, 1);
  row2->addWidget(load_);
  col->addLayout(row2);

  bar_ = new QProgressBar;
  bar_->setRange(0, 100);
  bar_->setVisible(false);
  col->addWidget(bar_);
  status_ = wrapped_label();
  col->addWidget(status_);
  about_ = wrapped_label();
  col->addWidget(about_);

  curve_ = new QComboBox;
  curve_->setToolTip(
      "Which t(b) the plot shows: the profile (each size measured alone) or the model's kept "
      "cost on this machine, as each calibrated lane count runs it under load (what every "
      "prediction uses)");
  curve_note_ = wrapped_label();
  auto* curve_row = new QHBoxLayout;
  curve_row->addWidget(new QLabel("t(b)"));
  curve_row->addWidget(curve_, 1);
  col->addLayout(curve_row);
  col->addWidget(curve_note_);
  connect(curve_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this] { curve_changed(); });

  plot_ = new QCustomPlot;
  plot_->setMinimumSize(260, 160);
  plot_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
  col->addWidget(plot_, 1);
  speedup_ = wrapped_label();
  col->addWidget(speedup_);
  fit_ = wrapped_label();
  fit_->setStyleSheet("color: #555");
  col->addWidget(fit_);
  auto* form = new QFormLayout;
  form->setContentsMargins(0, 0, 0, 0);
  blas_ = wrapped_label();
  threads_ = wrapped_label();
  runtime_ = wrapped_label();
  form->addRow("Runs in", runtime_);
  form->addRow("BLAS", blas_);
  form->addRow("Threads", threads_);
  workers_timer_ = new QTimer(this);
  workers_timer_->setInterval(1000);
  connect(workers_timer_, &QTimer::timeout, this, [this] { show_runtime(); });
  col->addLayout(form);

  QFont small = font();
  small.setPointSizeF(std::max(7.0, small.pointSizeF() - 1));
  for (QLabel* l : {about_, fit_, blas_, threads_, runtime_, curve_note_}) l->setFont(small);

  rebuild_choices();
  plot_profile(LoadedModel{});
  plot_->setMouseTracking(true);
  // Hover read-out: the measured point nearest the pointer.
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    if (shown_.empty()) return QToolTip::hideText();
    size_t best = 0;
    double best_px = 1e9;
    for (size_t i = 0; i < shown_.size(); ++i) {
      const double px = std::abs(plot_->xAxis->coordToPixel(shown_[i].batch) - e->pos().x());
      if (px < best_px) best_px = px, best = i;
    }
    const CostPoint& p = shown_[best];
    QToolTip::showText(e->globalPosition().toPoint(),
                       QString("b = %1: t(b) = %2 µs, %3 µs per item, speedup %4")
                           .arg(p.batch)
                           .arg(us_text(p.median_us), us_text(p.median_us / p.batch),
                                times_text(speedup_at(shown_, best))),
                       plot_);
  });

  connect(list_, &QAbstractItemModel::modelReset, this, [this] { rebuild_choices(); });
  connect(rescan_, &QToolButton::clicked, this, [this] { list_->refresh(); });
  connect(open_, &QPushButton::clicked, this, [this] { open_file(); });
  connect(model_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this] { choice_changed(); });
  connect(load_, &QPushButton::clicked, this, [this] {
    if (!on_load_) return;
    ModelRequest r;
    r.path = model_->currentData().toString().toStdString();
    r.device = is_synthetic(model_->currentData().toString())
                   ? "cpu"
                   : device_->currentText().toStdString();
    error_.clear();
    set_loading(true);
    on_load_(std::move(r));
  });
}

void ModelPanel::rebuild_choices() {
  const QString current = model_->currentData().toString();
  {
    const QSignalBlocker block(model_);
    model_->clear();
    for (int i = 0; i < list_->rowCount(); ++i) {
      const QModelIndex ix = list_->index(i);
      model_->addItem(ix.data().toString(), ix.data(ModelListModel::kPathRole));
      model_->setItemData(i, ix.data(Qt::ToolTipRole), Qt::ToolTipRole);
    }
    for (const QString& f : opened_) {
      if (list_->row_of(f) >= 0) continue;
      model_->addItem(QFileInfo(f).completeBaseName() + " (opened)", f);
      model_->setItemData(model_->count() - 1, f, Qt::ToolTipRole);
    }
    if (model_->count() > 0) model_->insertSeparator(model_->count());
    model_->addItem(synthetic_label(synthetic_path_), synthetic_path_);
    model_->setItemData(model_->count() - 1,
                        "A stand-in costing A + C·b µs per batch of b, with 128 FP32 inputs",
                        Qt::ToolTipRole);
  }
  // Keep the choice where it is still offered; a model gone from the folder
  // falls back to the first.
  const int i = current.isEmpty() ? -1 : model_->findData(current);
  model_->setCurrentIndex(std::max(i, 0));
  choice_changed();
}

void ModelPanel::select_path(const QString& path) {
  int i = -1;
  if (is_synthetic(path)) {
    i = model_->findData(synthetic_path_);
    if (!path.isEmpty() && path != synthetic_path_) {
      synthetic_path_ = path;
      model_->setItemText(i, synthetic_label(path));
      model_->setItemData(i, path);
    }
  } else {
    const QString abs = QFileInfo(path).absoluteFilePath();
    i = model_->findData(abs);
    if (i < 0) {
      opened_.push_back(abs);
      rebuild_choices();
      i = model_->findData(abs);
    }
  }
  model_->setCurrentIndex(i);
  choice_changed();
}

void ModelPanel::choice_changed() {
  const bool synthetic = is_synthetic(model_->currentData().toString());
  device_->setEnabled(!synthetic && load_->isEnabled());
  device_->setToolTip(synthetic ? "The synthetic model runs on the CPU" : QString());
}

void ModelPanel::open_file() {
  const QString path = QFileDialog::getOpenFileName(
      this, "Open a model", list_->dir(),
      "Models (*.pt *.py);;TorchScript models (*.pt);;Python models (*.py)");
  if (!path.isEmpty() && ensure_sidecar(this, path, describer_)) select_path(path);
}

void ModelPanel::set_loading(bool on) {
  load_->setEnabled(!on);
  model_->setEnabled(!on);
  rescan_->setEnabled(!on);
  open_->setEnabled(!on);
  choice_changed();
  if (on) bar_->setValue(0);
  bar_->setVisible(on);
}

void ModelPanel::set_progress(int percent, const QString& what) {
  assert_gui_thread("ModelPanel::set_progress");
  bar_->setValue(std::clamp(percent, 0, 100));
  status_->setStyleSheet(QString());
  status_->setText(what);
}

LoadProgress ModelPanel::progress_callback() {
  QPointer<ModelPanel> self(this);
  return [self](int percent, const std::string& what) {
    QMetaObject::invokeMethod(
        qApp,
        [self, percent, text = QString::fromStdString(what)] {
          if (self) self->set_progress(percent, text);
        },
        Qt::QueuedConnection);
  };
}

void ModelPanel::show_model(const LoadedModel& m) {
  error_.clear();
  const QString path = QString::fromStdString(m.path);
  select_path(path);
  const int d = device_->findText(QString::fromStdString(m.device));
  if (d >= 0 && !is_synthetic(path)) device_->setCurrentIndex(d);

  const ModelMetadata& meta = m.metadata;
  status_->setStyleSheet(QString());
  status_->setText(QString("%1 loaded on %2.")
                       .arg(QString::fromStdString(meta.name), QString::fromStdString(m.device)));
  QStringList ins, outs;
  for (const TensorSpec& s : meta.inputs) ins << QString::fromStdString(s.describe());
  for (const TensorSpec& s : meta.outputs) outs << QString::fromStdString(s.describe());
  about_->setText(QString("%1 → %2; batches up to %3")
                      .arg(ins.join(", "), outs.join(", "))
                      .arg(meta.max_batch_size));
  about_->setToolTip(QString::fromStdString(meta.description));

  shown_model_ = m;
  {
    const QSignalBlocker block(curve_);
    curve_->clear();
    curve_->addItem("Profile (alone)", 0);
    if (m.kept) {
      if (calibrated_for(*m.kept, 1)) curve_->addItem("1 lane under load (kept)", 1);
      for (const LaneCostPoints& l : m.kept->lanes()) {
        if (calibrated_for(*m.kept, l.lanes)) {
          curve_->addItem(QString("%1 lanes under load (kept)").arg(l.lanes), l.lanes);
        }
      }
    }
    // A kept curve first, where there is one: it is what predictions use.
    curve_->setCurrentIndex(curve_->count() > 1 ? 1 : 0);
  }
  curve_changed();
  speedup_->setStyleSheet(QString());
  if (m.profile.empty()) {
    speedup_->setText("No cost profile was measured.");
  } else {
    // Quote b = 32 where it was measured, a common serving cap; else the largest.
    size_t at = m.profile.size() - 1;
    for (size_t i = 0; i < m.profile.size(); ++i)
      if (m.profile[i].batch == 32) at = i;
    const QString here = QString("at b = %1 it is %2")
                             .arg(m.profile[at].batch)
                             .arg(times_text(speedup_at(m.profile, at)));
    // The straight-line fit's asymptote understates a convex t(b); "up to"
    // is never less than a speedup that was measured.
    double up_to = m.asymptotic_speedup;
    for (size_t i = 0; i < m.profile.size(); ++i) up_to = std::max(up_to, speedup_at(m.profile, i));
    if (!m.unsettled.empty()) {
      speedup_->setStyleSheet("color: #b00020");
      speedup_->setText(
          QString("t(b) did not settle at %1. Those sizes' times are not the model's, so "
                  "no speedup is claimed from them; reload the model when the machine is quiet.")
              .arg(QString::fromStdString(m.unsettled)));
    } else {
      speedup_->setText(m.asymptotic_speedup > 0
                            ? QString("Batching can make each item up to %1 cheaper; %2.")
                                  .arg(times_text(up_to), here)
                            : QString("Batching buys little here: a batch has no fixed cost to "
                                      "share (%1).")
                                  .arg(here));
    }
  }
  const bool no_fit = !m.unsettled.empty() && m.a_us == 0 && m.c_us == 0;
  fit_->setText(m.profile.empty() ? QString()
                : no_fit          ? QString("No fit: fewer than two sizes settled.")
                                  : QString("Fit%3: t(b) ≈ %1 + %2·b µs")
                               .arg(us_text(m.a_us), us_text(m.c_us),
                                    m.unsettled.empty() ? "" : " (settled sizes)"));
  blas_->setText(QString::fromStdString(m.blas.empty() ? "n/a" : m.blas));
  threads_->setText(QString::fromStdString(m.threads.empty() ? "n/a" : m.threads));
  show_runtime();
}

void ModelPanel::show_runtime() {
  const LoadedModel& m = shown_model_;
  if (m.path.empty()) {
    runtime_->setText("n/a");
  } else if (m.synthetic) {
    runtime_->setText("a synthetic stand-in, in this process");
  } else if (!m.workers) {
    runtime_->setText("TorchScript (LibTorch), in this process");
  } else {
    const WorkerHealth h = m.workers->health();
    QString t =
        QString("Python, %1 worker process%2 ready").arg(h.ready).arg(h.ready == 1 ? "" : "es");
    if (h.restarts > 0)
      t += QString(" · %1 restart%2").arg(h.restarts).arg(h.restarts == 1 ? "" : "s");
    if (h.timeouts > 0) t += QString(" · %1 killed past the timeout").arg(h.timeouts);
    if (m.preprocess) {
      const WorkerHealth p = m.preprocess->health();
      t += QString(" · preprocess pool: %1 ready").arg(p.ready);
      if (p.restarts > 0) t += QString(", %1 restarted").arg(p.restarts);
      if (m.preprocess_us > 0)
        t += QString(" · preprocess %1 ms a request in one process")
                 .arg(m.preprocess_us / 1000, 0, 'f', m.preprocess_us < 10'000 ? 2 : 1);
    }
    runtime_->setText(t);
  }
  if (m.workers) {
    workers_timer_->start();
  } else {
    workers_timer_->stop();
  }
}

QString ModelPanel::runtime_text() const { return runtime_->text(); }

void ModelPanel::show_error(const QString& message) {
  error_ = message;
  status_->setStyleSheet("color: #b00020");
  status_->setText(message);
}

QString ModelPanel::curve_note() const { return curve_note_->text(); }

void ModelPanel::curve_changed() {
  const LoadedModel& m = shown_model_;
  const int lanes = curve_->currentData().toInt();
  if (lanes <= 0 || !m.kept) {
    curve_note_->setText(
        m.metadata.name.empty() ? QString()
        : m.kept                ? QString("The profile: each size run alone, before any load.")
        : !m.kept_note.empty()
            ? QString("The kept cost was refused (%1); the first prediction makes a new one.")
                  .arg(QString::fromStdString(m.kept_note))
            : QString("No kept cost on this machine yet: the first prediction (the Tuner, or "
                      "bench --target predict) makes one from this profile and a few seconds "
                      "of live traffic per lane count."));
    plot_profile(m);
    return;
  }
  LoadedModel kept = m;
  kept.profile = m.kept->points();
  for (const LaneCostPoints& l : m.kept->lanes()) {
    if (static_cast<int>(l.lanes) == lanes) kept.profile = l.points;
  }
  kept.a_us = kept.c_us = 0;  // the line is the profile's
  uint64_t batches = 0;
  std::string last;
  for (const CostPoint& p : kept.profile) {
    batches += p.batches;
    if (p.measured_at > last) last = p.measured_at;
  }
  curve_note_->setText(
      QString("As %1 lane(s) ran it under load: %2 live batches, last measured %3. Every "
              "prediction on this model uses it; live runs refine it.")
          .arg(lanes)
          .arg(batches)
          .arg(QString::fromStdString(last.empty() ? "never" : last.substr(0, 19) + " UTC")));
  plot_profile(kept);
}

void ModelPanel::plot_profile(const LoadedModel& m) {
  plot_->clearGraphs();
  plot_->clearItems();
  shown_ = m.profile;
  const QFont small(font().family(), 8);
  QCPAxis* x = plot_->xAxis;
  QCPAxis* y = plot_->yAxis;
  QCPAxis* y2 = plot_->yAxis2;
  y2->setVisible(true);
  for (QCPAxis* a : {x, y, y2}) {
    a->setLabelFont(small);
    a->setTickLabelFont(small);
    a->setPadding(2);
    a->setLabelPadding(2);
  }
  x->setLabel("batch size b");
  x->setScaleType(QCPAxis::stLogarithmic);
  y->setLabelColor(kTimeColor);
  y->setTickLabelColor(kTimeColor);
  y2->setLabel("speedup per item");
  y->setTickLabels(!shown_.empty());
  y2->setTickLabels(!shown_.empty());
  y2->setLabelColor(kSpeedupColor);
  y2->setTickLabelColor(kSpeedupColor);

  // Ticks at the measured sizes (powers of two), every other one when many;
  // a curve measured at every size gets powers of two.
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  if (shown_.size() > 12) {
    for (uint32_t b = 1; b <= shown_.back().batch; b *= 4) ticker->addTick(b, QString::number(b));
  } else {
    const size_t step = shown_.size() > 6 ? 2 : 1;
    for (size_t i = 0; i < shown_.size(); i += step)
      ticker->addTick(shown_[i].batch, QString::number(shown_[i].batch));
  }
  if (shown_.empty()) ticker->addTicks({1, 8, 64}, {"1", "8", "64"});
  x->setTicker(ticker);

  double top_us = 0, top_speedup = 1;
  for (size_t i = 0; i < shown_.size(); ++i) {
    top_us = std::max(top_us, shown_[i].median_us);
    top_speedup = std::max(top_speedup, speedup_at(shown_, i));
  }
  const bool ms = top_us >= 2000;
  const double unit = ms ? 1000.0 : 1.0;
  y->setLabel(ms ? "t(b) ms" : "t(b) µs");
  const double max_b = shown_.empty() ? 64 : shown_.back().batch;
  x->setRange(0.75, max_b * 1.35);
  y->setRange(0, top_us > 0 ? top_us / unit * 1.12 : 1);
  y2->setRange(0, top_speedup * 1.15);

  if (shown_.empty()) {
    auto* note = new QCPItemText(plot_);
    note->position->setType(QCPItemPosition::ptAxisRectRatio);
    note->position->setCoords(0.5, 0.5);
    note->setFont(small);
    note->setColor(QColor(110, 110, 110));
    note->setText("Load a model to see its cost t(b)");
    plot_->replot();
    return;
  }
  if (m.c_us != 0 || m.a_us != 0) {
    QCPGraph* fit = plot_->addGraph(x, y);
    fit->setPen(QPen(kFitColor, 1.2, Qt::DashLine));
    for (int i = 0; i <= 60; ++i) {
      const double b = std::pow(max_b, i / 60.0);
      fit->addData(b, (m.a_us + m.c_us * b) / unit);
    }
  }
  QCPGraph* times = plot_->addGraph(x, y);
  times->setLineStyle(QCPGraph::lsNone);
  times->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kTimeColor, 5));
  QCPGraph* speedup = plot_->addGraph(x, y2);
  speedup->setPen(QPen(kSpeedupColor, 1.4));
  speedup->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, kSpeedupColor, 4));
  for (size_t i = 0; i < shown_.size(); ++i) {
    times->addData(shown_[i].batch, shown_[i].median_us / unit);
    speedup->addData(shown_[i].batch, speedup_at(shown_, i));
  }
  plot_->replot();
}

QString ModelPanel::speedup_text() const { return speedup_->text(); }
QString ModelPanel::status_text() const { return status_->text(); }
QString ModelPanel::blas_text() const { return blas_->text(); }
QString ModelPanel::threads_text() const { return threads_->text(); }

}  // namespace batchscope

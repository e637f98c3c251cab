// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_controls.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include <QTimer>
#include <cmath>

namespace batchscope {

GenControls::GenControls(Apply apply, QWidget* parent)
    : QGroupBox("Scheduling", parent), apply_(std::move(apply)) {
  scheduling_ = new QComboBox;
  scheduling_->addItem("continuous", static_cast<int>(Scheduling::kContinuous));
  scheduling_->addItem("static", static_cast<int>(Scheduling::kStatic));
  scheduling_->setToolTip(
      "continuous: the batch is re-formed every step (finished sequences leave, waiting ones "
      "join)\nstatic: a batch is admitted, prefilled together and runs until all of it finishes");
  seqs_ = new QSpinBox;
  seqs_->setRange(1, 4096);
  seqs_->setToolTip("max_num_seqs: sequences running at once");
  tokens_ = new QSpinBox;
  tokens_->setRange(1, 1 << 20);
  tokens_->setToolTip(
      "max_num_batched_tokens: tokens one step processes (a decode counts one, a prefill chunk "
      "its length); at least max_num_seqs");
  lanes_ = new QSpinBox;
  lanes_->setRange(1, 64);
  lanes_->setToolTip(
      "lanes: copies of the model, each with its own cache and step thread; a request goes "
      "to the lane with the fewest outstanding. A new lane loads and warms its model first");
  wait_ms_ = new QDoubleSpinBox;
  wait_ms_->setRange(0, 10'000);
  wait_ms_->setDecimals(1);
  wait_ms_->setSuffix(" ms");
  wait_ms_->setToolTip("static only: how long a batch waits to fill before it starts");
  // A line for each part, not wrapped: a wrapped label here was given one
  // line's height for two, clipping the text's top and its underscores.
  in_force_label_ = new QLabel;
  in_force_label_->setWordWrap(false);
  in_force_label_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  problem_ = new QLabel;
  problem_->setWordWrap(true);
  problem_->setStyleSheet("color: #b00000;");
  problem_->hide();
  auto* form = new QFormLayout(this);
  form->addRow("scheduling", scheduling_);
  form->addRow("max_num_seqs", seqs_);
  form->addRow("max_num_batched_tokens", tokens_);
  form->addRow("static max wait", wait_ms_);
  form->addRow("lanes", lanes_);
  form->addRow(problem_);
  form->addRow(in_force_label_);

  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(150);
  connect(debounce_, &QTimer::timeout, this, [this] { apply_now(); });
  connect(scheduling_, &QComboBox::currentIndexChanged, this, [this] {
    wait_ms_->setEnabled(scheduling_->currentIndex() == 1);
    if (!syncing_) apply_now();
  });
  for (QSpinBox* s : {seqs_, tokens_, lanes_})
    connect(s, &QSpinBox::valueChanged, this, [this] { changed(); });
  connect(wait_ms_, &QDoubleSpinBox::valueChanged, this, [this] { changed(); });
  set_controls(in_force_);
}

void GenControls::changed() {
  if (!syncing_) debounce_->start();
}

Options GenControls::edited(const Options& base) const {
  Options o = base;
  o.scheduling = static_cast<Scheduling>(scheduling_->currentData().toInt());
  o.max_num_seqs = static_cast<uint32_t>(seqs_->value());
  o.max_num_batched_tokens = static_cast<uint32_t>(tokens_->value());
  o.max_wait_us = std::llround(wait_ms_->value() * 1000.0);
  o.num_lanes = static_cast<uint32_t>(lanes_->value());
  return o;
}

Status GenControls::apply_now() {
  debounce_->stop();
  const Options want = edited(in_force_);
  Status s = want == in_force_ ? Status::Ok() : apply_(want);
  refused_ = !s.ok();
  if (refused_) {
    problem_->setText("Not applied: " + QString::fromStdString(s.message()));
    problem_->show();
  } else {
    in_force_ = want;  // the status confirms it with its version next tick
    problem_->clear();
    problem_->hide();
  }
  return s;
}

void GenControls::set_controls(const Options& o) {
  syncing_ = true;
  scheduling_->setCurrentIndex(o.scheduling == Scheduling::kStatic ? 1 : 0);
  seqs_->setValue(static_cast<int>(o.max_num_seqs));
  tokens_->setValue(static_cast<int>(o.max_num_batched_tokens));
  wait_ms_->setValue(static_cast<double>(o.max_wait_us) / 1000.0);
  lanes_->setValue(static_cast<int>(o.num_lanes));
  wait_ms_->setEnabled(o.scheduling == Scheduling::kStatic);
  syncing_ = false;
}

void GenControls::show_status(const GenStatus& s) {
  if (s.version == version_) return;
  version_ = s.version;
  in_force_ = s.options;
  // Follow the engine unless the user is mid-edit or fixing a refused value.
  if (!debounce_->isActive() && !refused_) set_controls(in_force_);
  QString text =
      QString("In force (v%1): %2 scheduling\nmax_num_seqs %3, max_num_batched_tokens %4")
          .arg(s.version)
          .arg(scheduling_name(s.options.scheduling))
          .arg(s.options.max_num_seqs)
          .arg(s.options.max_num_batched_tokens);
  QStringList more;
  if (s.options.scheduling == Scheduling::kStatic)
    more << QString("max wait %1 ms").arg(static_cast<double>(s.options.max_wait_us) / 1000.0);
  if (s.options.num_lanes > 1) more << QString("%1 lanes").arg(s.options.num_lanes);
  if (!more.isEmpty()) text += "\n" + more.join(", ");
  in_force_label_->setText(text);
  // The text is drawn clipped to its lines' height, and an underscore sits
  // below the font's descent: a little more room under the last line.
  in_force_label_->setMinimumHeight(in_force_label_->sizeHint().height() +
                                    in_force_label_->fontMetrics().descent());
}

QString GenControls::problem() const { return problem_->text(); }

QString GenControls::in_force_text() const { return in_force_label_->text(); }

}  // namespace batchscope

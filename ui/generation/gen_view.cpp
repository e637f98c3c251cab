// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_view.h"

#include <QCheckBox>
#include <QGroupBox>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/generation/gen_controls.h"
#include "ui/generation/gen_plots.h"
#include "ui/generation/gen_prompt.h"
#include "ui/generation/gen_record.h"
#include "ui/generation/gen_step_inspector.h"
#include "ui/generation/gen_traffic.h"
#include "ui/generation/gen_tuner.h"

namespace batchscope {

GenView::GenView(GenEngine& engine, GenViewConfig config, QWidget* parent)
    : QWidget(parent),
      engine_(engine),
      config_(std::move(config)),
      metrics_(std::chrono::milliseconds(500), 600) {
  const LmInfo& info = engine_.info();
  model_ = new QLabel(
      QString("<b>%1</b> &mdash; generative, %2 tokens of context, cache %3 "
              "blocks of %4 tokens")
          .arg(QString::fromStdString(config_.model_text.empty() ? info.name : config_.model_text)
                   .toHtmlEscaped())
          .arg(info.context_length)
          .arg(info.num_blocks)
          .arg(info.block_size));
  model_->setWordWrap(true);
  controls_ = new GenControls([this](const Options& o) { return engine_.set_options(o); });
  traffic_ = new GenTraffic(engine_, config_.traffic_rate);
  listener_ = new GenListener(engine_, config_.listener);
  figures_ = new QLabel;
  figures_->setWordWrap(true);
  figures_->setTextFormat(Qt::RichText);
  auto* now = new QGroupBox("Now");
  auto* now_layout = new QVBoxLayout(now);
  now_layout->addWidget(figures_);
  prompt_ = new GenPromptBox(engine_);
  auto* prompt_group = new QGroupBox("Prompt");
  auto* prompt_layout = new QVBoxLayout(prompt_group);
  prompt_layout->addWidget(prompt_);
  // The prompt takes the room the panels above leave, down to a usable
  // minimum: its text boxes' preferred heights alone would scroll the column.
  prompt_group->setMinimumHeight(std::max(prompt_group->minimumSizeHint().height(), 240));
  prompt_group->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Ignored);

  auto* left = new QWidget;
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  left_layout->addWidget(model_);
  left_layout->addWidget(controls_);
  left_layout->addWidget(traffic_);
  left_layout->addWidget(listener_);
  left_layout->addWidget(now);
  recorder_ = new GenRecordBox;
  recorder_->set_clock([this] { return engine_.clock().now(); });
  left_layout->addWidget(recorder_);
  // The listener's Record switch: what the engine finishes while it is on
  // (the clients', and the built-in traffic's unless it is stopped) as a run
  // of kind serve, through the Record box.
  record_clients_ = new QCheckBox("Record as a serve run");
  record_clients_->setToolTip(
      "Keeps every request the engine finishes from now on (token timings, never a body) as a "
      "run of kind serve in the run history. Stop the built-in traffic to keep only the "
      "clients'.");
  listener_->layout()->addWidget(record_clients_);
  connect(record_clients_, &QCheckBox::toggled, this, [this](bool on) {
    if (!on) {
      if (recorder_->recording()) recorder_->stop();
      return;
    }
    // Off again, without stopping anything, where the Record box records
    // already or there is no history to record into.
    if (!recorder_->recording()) recorder_->start("served clients", "serve");
    if (recorder_->recording() && recorder_->recording_kind() == "serve") return;
    const QSignalBlocker quiet(record_clients_);
    record_clients_->setChecked(false);
  });
  left_layout->addWidget(prompt_group, 1);
  left->setMinimumWidth(380);
  // Scrolls rather than forcing the window taller than a laptop screen.
  auto* left_scroll = new QScrollArea;
  left_scroll->setWidget(left);
  left_scroll->setWidgetResizable(true);
  left_scroll->setFrameShape(QFrame::NoFrame);
  left_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  left_scroll->setMinimumWidth(left->minimumWidth() +
                               left_scroll->verticalScrollBar()->sizeHint().width());

  plots_ = new GenPlots;
  inspector_ = new GenStepInspector(5000);
  auto* inspector_group = new QGroupBox("Steps");
  auto* inspector_layout = new QVBoxLayout(inspector_group);
  inspector_layout->setContentsMargins(4, 4, 4, 4);
  inspector_layout->addWidget(inspector_);
  auto* right = new QSplitter(Qt::Vertical);
  right->addWidget(plots_);
  right->addWidget(inspector_group);
  right->setStretchFactor(0, 3);
  right->setStretchFactor(1, 2);
  right->setChildrenCollapsible(false);

  GenTunerSetup tuning;
  tuning.info = engine_.info();
  tuning.exact = config_.exact_cost;
  tuning.kept = config_.kept_cost;
  tuning.kept_source = config_.kept_cost_source;
  tuning.device = config_.device;
  tuning.traffic = [this] { return traffic_->spec(); };
  tuning.apply = [this](const Options& o) { return engine_.set_options(o); };
  tuning.in_force = [this] { return engine_.status().options; };
  tuning.now = [this] { return engine_.clock().now(); };
  tuner_ = new GenTunerPanel(std::move(tuning));
  tabs_ = new QTabWidget;
  tabs_->addTab(right, "Live");
  tabs_->addTab(tuner_, "Tuner");

  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(left_scroll);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(split);

  timer_ = new QTimer(this);
  timer_->setInterval(33);
  connect(timer_, &QTimer::timeout, this, [this] { refresh(); });
  timer_->start();
  refresh();
  if (config_.start_traffic) traffic_->start();
  if (!config_.prompt.empty()) {
    prompt_->set_prompt(QString::fromStdString(config_.prompt));
    prompt_->generate();
  }
}

GenView::~GenView() {
  // A run being recorded is kept, finished, as far as it went.
  recorder_->stop();
  // Before the children go: HTTP clients and the traffic thread submit to the engine.
  listener_->stop();
  traffic_->stop();
  if (config_.keep_steps) {
    const std::vector<StepRecord> ran(tuner_->window_steps().begin(), tuner_->window_steps().end());
    if (!ran.empty()) config_.keep_steps(ran, engine_.status().options.num_lanes);
  }
}

void GenView::refresh() {
  requests_.clear();
  steps_.clear();
  engine_.drain(requests_, steps_);
  metrics_.fold(requests_, steps_);
  recorder_->add(requests_, steps_);
  if (!requests_.empty() || !steps_.empty()) listener_->publish(metrics_.totals());
  listener_->refresh();
  inspector_->add(steps_, engine_.clock().now());
  tuner_->add_steps(steps_);
  tuner_->add_requests(requests_);
  plots_->draw(metrics_, config_.span_s);
  const GenStatus s = engine_.status();
  controls_->show_status(s);
  traffic_->refresh();
  show_figures(s);
}

void GenView::show_figures(const GenStatus& s) {
  double tps = 0;
  const auto& w = metrics_.windows();
  if (w.size() >= 2) {  // the newest complete window
    const GenWindow& last = w[w.size() - 2];
    if (last.seconds() > 0) tps = static_cast<double>(last.output_tokens) / last.seconds();
  }
  const double cache = s.blocks_total ? 100.0 * s.blocks_used / s.blocks_total : 0;
  QString text =
      QString(
          "<b>%1</b> output tokens/s &nbsp; <b>%2</b> running &nbsp; <b>%3</b> waiting<br>"
          "cache <b>%4</b> / %5 blocks (%6%)<br>"
          "%7 steps, %8 finished, %9 output tokens, %10 preemptions, %11 refused")
          .arg(tps, 0, 'f', 0)
          .arg(s.running)
          .arg(s.waiting)
          .arg(s.blocks_used)
          .arg(s.blocks_total)
          .arg(cache, 0, 'f', 0)
          .arg(s.steps)
          .arg(s.completed)
          .arg(s.output_tokens)
          .arg(s.preemptions)
          .arg(s.rejected);
  if (!s.error.empty())
    text += "<br><span style='color:#b00000'>last failed step: " +
            QString::fromStdString(s.error).toHtmlEscaped() + "</span>";
  if (text != figures_->text()) figures_->setText(text);
}

QString GenView::figures_text() const { return figures_->text(); }

}  // namespace batchscope

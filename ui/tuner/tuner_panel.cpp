// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/tuner/tuner_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "traffic/varied_inputs.h"
#include "ui/common/qt_text.h"
#include "ui/tuner/tune_plot.h"

namespace batchscope {

namespace {

QLabel* wrapped_label(bool small = false) {
  auto* l = new QLabel;
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  if (small) {
    QFont f = l->font();
    f.setPointSizeF(std::max(7.0, f.pointSizeF() - 1));
    l->setFont(f);
    l->setStyleSheet("color: #555");
  }
  return l;
}

const char* const kSpaceSyntax =
    "option=values, separated by commas: a range LO..HI (powers of two for sizes, a 1-2-5 "
    "series for waits), LO..HI:STEP, a list a|b|c, or one value";

}  // namespace

Expected<CostModel> tuning_cost(const LoadedModel& m, uint32_t max_batch) {
  if (m.synthetic) return CostModel::from_synthetic(*m.synthetic, max_batch);
  if (m.profile.empty()) {
    return invalid_argument(
        "no cost profile t(b) was measured for " +
        (m.metadata.name.empty() ? std::string("this model") : m.metadata.name) +
        ", and the tuner predicts from it: load the model again to measure one");
  }
  auto cost = CostModel::from_points(m.profile);
  if (!cost) return invalid_argument("the model's cost profile: " + cost.error().message);
  return cost;
}

TunerPanel::TunerPanel(TunerHooks hooks, QWidget* parent)
    : QWidget(parent), hooks_(std::move(hooks)) {
  // Inputs, in a column that scrolls rather than squeezing the plot.
  auto* inputs = new QWidget;
  auto* in_col = new QVBoxLayout(inputs);
  in_col->setContentsMargins(4, 4, 4, 4);
  // Two pairs of inputs a row: the panel sits in a dock a few hundred pixels tall.
  auto* grid = new QGridLayout;
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setHorizontalSpacing(6);
  slo_ = new QDoubleSpinBox;
  slo_->setRange(0.01, 600000);  // target_p99_ms's range, as adaptive steers to it
  slo_->setDecimals(2);
  slo_->setValue(10);
  slo_->setSuffix(" ms");
  slo_->setToolTip("The p99 latency a configuration must stay within (with at most 0.1% lost)");
  objective_ = new QComboBox;
  objective_->addItems({"throughput", "latency"});
  objective_->setToolTip(
      "throughput: the highest within the SLO (within 1% counts as equal), then the lowest p99;\n"
      "latency: the lowest p99 within the SLO");
  seconds_ = new QDoubleSpinBox;
  seconds_->setRange(0.2, 120);
  seconds_->setDecimals(1);
  seconds_->setValue(3);
  seconds_->setSuffix(" s");
  seconds_->setToolTip("How much of the traffic each prediction and each live run replays");
  confirm_ = new QSpinBox;
  confirm_->setRange(0, 5);
  confirm_->setValue(1);
  confirm_->setToolTip(
      "How many of the best predictions to run live, each until three runs agree within ±10%");
  budget_ = new QDoubleSpinBox;
  budget_->setRange(1, 86400);
  budget_->setDecimals(0);
  budget_->setValue(600);
  budget_->setSuffix(" s");
  budget_->setToolTip(
      "Time for the whole run, as tune's --budget-s: the search gets half of it when it\n"
      "confirms live (all of it otherwise), and no live run starts after it");
  grid->addWidget(new QLabel("SLO p99"), 0, 0);
  grid->addWidget(slo_, 0, 1);
  grid->addWidget(new QLabel("Objective"), 0, 2);
  grid->addWidget(objective_, 0, 3);
  grid->addWidget(new QLabel("Each run"), 1, 0);
  grid->addWidget(seconds_, 1, 1);
  grid->addWidget(new QLabel("Confirm"), 1, 2);
  grid->addWidget(confirm_, 1, 3);
  calibrate_ = new QCheckBox("Calibrate first");
  calibrate_->setChecked(true);
  calibrate_->setToolTip(
      "Before the search, run the traffic live once per lane count the space searches\n"
      "(fifo, the largest batch, 2 ms wait) and predict with t(b) as those runs saw it,\n"
      "as tune's --calibrate does; the window's traffic pauses meanwhile");
  grid->addWidget(new QLabel("Budget"), 2, 0);
  grid->addWidget(budget_, 2, 1);
  grid->addWidget(calibrate_, 2, 2, 1, 2);
  grid->setColumnStretch(1, 1);
  grid->setColumnStretch(3, 1);
  in_col->addLayout(grid);
  auto* space_row = new QHBoxLayout;
  space_ = new QLineEdit;
  auto* reset = new QToolButton;
  reset->setText("Default");
  reset->setToolTip("The default space for this model");
  space_row->addWidget(new QLabel("Space"));
  space_row->addWidget(space_, 1);
  space_row->addWidget(reset);
  in_col->addLayout(space_row);
  space_error_ = wrapped_label();
  space_error_->setStyleSheet("color: #b00020");
  space_error_->setVisible(false);
  in_col->addWidget(space_error_);
  traffic_ = wrapped_label(true);
  in_col->addWidget(traffic_);
  auto* cost_row = new QHBoxLayout;
  cost_ = wrapped_label(true);
  cost_file_button_ = new QToolButton;
  cost_file_button_->setText("File…");
  cost_file_button_->setToolTip(
      "Tune against t(b) from a file: what `batchscope profile --json` or\n"
      "`batchscope bench --cost-out` wrote (the latter the closest to live)");
  cost_clear_button_ = new QToolButton;
  cost_clear_button_->setText("Model's");
  cost_clear_button_->setToolTip("Back to the loaded model's own cost");
  cost_row->addWidget(cost_, 1);
  cost_row->addWidget(cost_file_button_, 0, Qt::AlignTop);
  cost_row->addWidget(cost_clear_button_, 0, Qt::AlignTop);
  in_col->addLayout(cost_row);
  auto* buttons = new QHBoxLayout;
  run_ = new QPushButton("Run");
  cancel_ = new QPushButton("Cancel");
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  in_col->addLayout(buttons);
  bar_ = new QProgressBar;
  bar_->setRange(0, 1);
  bar_->setValue(0);
  bar_->setTextVisible(false);
  bar_->setMaximumHeight(10);
  in_col->addWidget(bar_);
  status_ = wrapped_label();
  in_col->addWidget(status_);
  in_col->addStretch();
  auto* in_scroll = new QScrollArea;
  in_scroll->setWidget(inputs);
  in_scroll->setWidgetResizable(true);
  in_scroll->setFrameShape(QFrame::NoFrame);
  in_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  in_scroll->setMinimumWidth(360);

  plot_ = new TunePlot;

  auto* right = new QWidget;
  auto* right_col = new QVBoxLayout(right);
  right_col->setContentsMargins(0, 0, 0, 0);
  table_model_ = new TuneTableModel(this);
  table_ = new QTableView;
  table_->setModel(table_model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->setAlternatingRowColors(true);
  // Errors above the table, where there is width for the closest configuration.
  error_ = wrapped_label();
  error_->setStyleSheet("color: #b00020");
  error_->setVisible(false);
  right_col->addWidget(error_);
  right_col->addWidget(table_, 1);
  auto* actions = new QHBoxLayout;
  apply_ = new QPushButton("Apply");
  apply_->setToolTip("Put the selected configuration in force now, while traffic flows");
  export_ = new QPushButton("Export…");
  export_->setToolTip("Export the selected configuration for a production server");
  save_json_ = new QPushButton("Save JSON…");
  save_json_->setToolTip("Write the last run as `batchscope tune --json` does");
  actions->addWidget(apply_);
  actions->addWidget(export_);
  actions->addWidget(save_json_);
  applied_ = wrapped_label(true);
  actions->addWidget(applied_, 1);
  right_col->addLayout(actions);

  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(in_scroll);
  split->addWidget(plot_);
  split->addWidget(right);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 3);
  split->setSizes({360, 480, 660});  // the table's twelve columns want the most
  split->setChildrenCollapsible(false);
  auto* outer = new QHBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(split);

  connect(run_, &QPushButton::clicked, this, [this] { (void)run(); });
  connect(cancel_, &QPushButton::clicked, this, [this] { cancel(); });
  connect(apply_, &QPushButton::clicked, this, [this] { (void)apply_selected(); });
  connect(export_, &QPushButton::clicked, this, [this] {
    auto in = export_input();
    if (!in) {
      applied_->setText(text_of(in.error().message));
      return;
    }
    if (hooks_.export_config) hooks_.export_config(*in);
  });
  connect(save_json_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, "Save the tune as JSON", "tune.json",
                                                      "JSON (*.json);;All files (*)");
    if (path.isEmpty()) return;
    Status s = save_json(path);
    applied_->setText(s ? "Wrote " + path + "." : "Not written: " + text_of(s.message()));
  });
  connect(cost_file_button_, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Cost t(b) from a file", QString(),
                                                      "JSON (*.json);;All files (*)");
    if (!path.isEmpty()) (void)set_cost_file(path);
  });
  connect(cost_clear_button_, &QToolButton::clicked, this, [this] { clear_cost_file(); });
  connect(seconds_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] { refresh(); });
  connect(space_, &QLineEdit::textEdited, this, [this] {
    default_space_ = false;
    space_edited();
  });
  connect(reset, &QToolButton::clicked, this, [this] {
    set_space_text(text_of(default_space_text()));
    default_space_ = true;
    space_edited();
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& now) {
            plot_->set_selected(now.isValid() ? std::optional<size_t>(now.row()) : std::nullopt);
            update_controls();
          });
  plot_->set_on_pick([this](int row) { select_row(row); });

  set_space_text(text_of(TuneSpace::default_text(0)));
  refresh();
  set_model(LoadedModel{});
}

TunerPanel::~TunerPanel() { cancel_and_wait(); }

void TunerPanel::set_model(const LoadedModel& model) {
  const bool had = model_.has_value() && !model_->metadata.name.empty();
  model_ = model;
  if (default_space_ || !had) {
    set_space_text(text_of(default_space_text()));
    default_space_ = true;
  }
  update_cost_note();
  space_edited();
}

ArrivalSpec TunerPanel::traffic() const {
  ArrivalSpec t;
  if (hooks_.traffic) {
    t = hooks_.traffic();
  } else {
    t.pattern = Pattern::kPoisson;
    t.rate = 1000;
  }
  t.duration_s = seconds_->value();
  return t;
}

void TunerPanel::refresh() {
  const QString note = QString(
                           "Traffic: %1 each run, from the Traffic panel. Live runs pause "
                           "the window's traffic and resume it after.")
                           .arg(text_of(traffic().describe()));
  if (traffic_->text() != note) traffic_->setText(note);
}

std::string TunerPanel::default_space_text() const {
  if (!model_ || model_->metadata.name.empty()) return TuneSpace::default_text(0);
  // The lengths of the requests a run sends (the traffic's seed does not
  // move the bucket sets much: a sample of 1,024), drawn without making the
  // inputs: this runs on the GUI thread at every model change and save.
  const ModelMetadata& m = model_->metadata;
  if (!has_variable_inputs(m)) return model_space_text(m, {});
  return model_space_text(m, varied_lengths(m, default_lengths(m), 1, kVariedPool));
}

void TunerPanel::set_space_text(const QString& text) {
  space_->setText(text);
  space_->setCursorPosition(0);  // the start says what is searched; the rest scrolls
}

Expected<TuneSpace> TunerPanel::check_space() {
  const std::string text = space_->text().trimmed().toStdString();
  const uint32_t model_max = model_ ? model_->metadata.max_batch_size : 0;
  auto space = text.empty() ? Expected<TuneSpace>(TuneSpace::default_space(model_max))
                            : TuneSpace::parse(text);
  if (!space) return space.error();  // "space entry 'colour=red': ..."
  const Options base = hooks_.options ? hooks_.options() : Options{};
  const uint32_t most = largest_batch(*space, base);
  if (model_max > 0 && most > model_max) {
    return invalid_argument("space: max_batch_size goes up to " + std::to_string(most) +
                            ", above the model's maximum " + std::to_string(model_max));
  }
  return space;
}

void TunerPanel::space_edited() {
  auto space = check_space();
  space_error_->setText(space ? QString() : text_of(space.error().message));
  space_error_->setVisible(!space);
  space_->setToolTip(
      QString(kSpaceSyntax) + "\n\n" +
      (space ? QString("%1 configurations: %2").arg(space->size()).arg(text_of(space->text()))
             : text_of(space.error().message)));
  update_controls();
}

void TunerPanel::update_controls() {
  const bool idle = phase_ == Phase::kIdle;
  const bool tunable =
      model_ && !model_->metadata.name.empty() && run_cost(1).ok() && model_->factory != nullptr;
  run_->setEnabled(idle && tunable);
  run_->setToolTip(tunable ? QString() : cost_->text());
  cancel_->setEnabled(!idle);
  for (QWidget* w : std::initializer_list<QWidget*>{slo_, objective_, seconds_, confirm_, budget_,
                                                    calibrate_, space_, cost_file_button_})
    w->setEnabled(idle);
  cost_clear_button_->setEnabled(idle);
  cost_clear_button_->setVisible(!cost_path_.isEmpty());
  save_json_->setEnabled(idle && result_.has_value());
  const bool row = selected_row().has_value();
  apply_->setEnabled(row);
  export_->setEnabled(row);
}

void TunerPanel::show_error(const QString& message) {
  error_->setText(message);
  error_->setVisible(!message.isEmpty());
}

void TunerPanel::show_rows() {
  if (!result_) return;
  std::optional<size_t> best;
  const std::span<const Evaluated> checked =
      headroom_ ? std::span<const Evaluated>(headroom_->checked) : std::span<const Evaluated>();
  std::vector<TuneRow> rows = tune_rows(*result_, confirmed_, winner_, &best, checked);
  plot_->show_result(result_->evaluated, rows, best, result_->slo_p99_ms);
  table_model_->set_rows(std::move(rows), best, result_->slo_p99_ms,
                         headroom_ ? headroom_->needed : 0.0);
  table_->resizeColumnsToContents();
  if (best) select_row(static_cast<int>(*best));
  update_controls();
}

void TunerPanel::select_row(int row) {
  if (row < 0 || row >= table_model_->rowCount()) return;
  table_->selectionModel()->setCurrentIndex(
      table_model_->index(row, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(table_model_->index(row, 0));
}

std::optional<int> TunerPanel::selected_row() const {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return std::nullopt;
  return rows.front().row();
}

Status TunerPanel::apply_selected() {
  const auto row = selected_row();
  if (!row) return invalid_argument("select a configuration in the table first");
  Options o = table_model_->at(*row).predicted.options;
  if (model_ && model_->metadata.max_batch_size > 0)
    o.max_batch_size = std::min(o.max_batch_size, model_->metadata.max_batch_size);
  Status s = hooks_.apply ? hooks_.apply(o) : invalid_argument("there is no engine to apply to");
  applied_->setText(s ? "Applied: " + options_brief(o) + "."
                      : "Not applied: " + text_of(s.message()));
  return s;
}

Expected<ExportInput> TunerPanel::export_input() const {
  const auto row = selected_row();
  if (!row) return invalid_argument("select a configuration in the table first");
  const TuneRow& r = table_model_->at(*row);
  ExportInput in;
  in.options = r.predicted.options;
  if (model_) {
    in.options.max_batch_size =
        std::min(in.options.max_batch_size, std::max(1u, model_->metadata.max_batch_size));
    in.model = model_->metadata;
    in.device = model_->device;
    // Unreadable: the Python formats say so.
    (void)add_python_handler(in, model_->path, model_->lane_metadata);
  }
  const Evaluated& figures = r.live ? r.live->measured : r.predicted;
  in.tuning.traffic = traffic_text_;
  in.tuning.measured = r.live.has_value();
  in.tuning.p50_ms = figures.p50_ms;
  in.tuning.p99_ms = figures.p99_ms;
  in.tuning.throughput_rps = figures.throughput_rps;
  return in;
}

QString TunerPanel::status_text() const { return status_->text(); }
QString TunerPanel::error_text() const { return error_->text(); }
QString TunerPanel::space_error() const { return space_error_->text(); }
QString TunerPanel::traffic_note() const { return traffic_->text(); }

}  // namespace batchscope

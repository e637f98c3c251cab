#include "tuner_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
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

#include "tune_plot.h"

namespace batchscope {

namespace {

// The stability rule of `batchscope tune`: perf_analyzer's.
const StabilityRule kRule{0.10, 3, 6};

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

QString text_of(const std::string& s) { return QString::fromStdString(s); }

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
  grid->addWidget(new QLabel("SLO p99"), 0, 0);
  grid->addWidget(slo_, 0, 1);
  grid->addWidget(new QLabel("Objective"), 0, 2);
  grid->addWidget(objective_, 0, 3);
  grid->addWidget(new QLabel("Each run"), 1, 0);
  grid->addWidget(seconds_, 1, 1);
  grid->addWidget(new QLabel("Confirm"), 1, 2);
  grid->addWidget(confirm_, 1, 3);
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
  cost_ = wrapped_label(true);
  in_col->addWidget(cost_);
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
  actions->addWidget(apply_);
  actions->addWidget(export_);
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
  connect(seconds_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] { refresh(); });
  connect(space_, &QLineEdit::textEdited, this, [this] {
    default_space_ = false;
    space_edited();
  });
  connect(reset, &QToolButton::clicked, this, [this] {
    set_space_text(text_of(TuneSpace::default_text(model_ ? model_->metadata.max_batch_size : 0)));
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

void TunerPanel::cancel() {
  if (!running()) return;
  stop_ = true;
  status_->setText(phase_ == Phase::kConfirming ? "Cancelling: stopping the live run…"
                                                : "Cancelling…");
}

void TunerPanel::cancel_and_wait() {
  // The thread checks the flag before each prediction and each send; what it
  // posts after this is dropped with this object's pending events, or by
  // run_id_ if the panel lives on. The traffic a confirmation paused stays
  // off: this is for a window that is going away.
  stop_ = true;
  join_worker();
  ++run_id_;
  paused_traffic_ = false;
  if (running()) finish("Cancelled.");
}

void TunerPanel::join_worker() {
  if (worker_.joinable()) worker_.join();
}

void TunerPanel::start_worker(std::function<void()> work) {
  join_worker();  // the last phase posted its result as its last act
  worker_ = std::thread(std::move(work));
}

void TunerPanel::set_model(const LoadedModel& model) {
  const bool had = model_.has_value() && !model_->metadata.name.empty();
  model_ = model;
  if (default_space_ || !had) {
    set_space_text(text_of(TuneSpace::default_text(model_->metadata.max_batch_size)));
    default_space_ = true;
  }
  if (model.metadata.name.empty()) {
    cost_->setText("No model is loaded yet.");
  } else {
    auto cost = tuning_cost(model, std::min<uint32_t>(model.metadata.max_batch_size, 4096));
    cost_->setText(cost ? QString("Cost of %1: %2%3.")
                              .arg(text_of(model.metadata.name), text_of(cost->describe()),
                                   model.synthetic ? " (the synthetic formula, exact)"
                                                   : " (measured when it loaded)")
                        : QString("Cannot tune %1: %2.")
                              .arg(text_of(model.metadata.name), text_of(cost.error().message)));
  }
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
  const bool tunable = model_ && !model_->metadata.name.empty() && tuning_cost(*model_, 1).ok() &&
                       model_->factory != nullptr;
  run_->setEnabled(idle && tunable);
  run_->setToolTip(tunable ? QString() : cost_->text());
  cancel_->setEnabled(!idle);
  for (QWidget* w : std::initializer_list<QWidget*>{slo_, objective_, seconds_, confirm_, space_})
    w->setEnabled(idle);
  const bool row = selected_row().has_value();
  apply_->setEnabled(row);
  export_->setEnabled(row);
}

void TunerPanel::show_error(const QString& message) {
  error_->setText(message);
  error_->setVisible(!message.isEmpty());
}

Status TunerPanel::run() {
  if (running()) return invalid_argument("a search is already running");
  show_error({});
  applied_->clear();
  auto refuse = [this](const std::string& message) -> Status {
    show_error(text_of(message));
    return invalid_argument(message);
  };
  if (!model_ || model_->metadata.name.empty()) return refuse("No model is loaded yet.");
  auto space = check_space();
  if (!space) {
    space_edited();
    return refuse(space.error().message);
  }
  const Options base = hooks_.options ? hooks_.options() : Options{};
  const uint32_t max_batch =
      std::min(largest_batch(*space, base), std::max(1u, model_->metadata.max_batch_size));
  auto cost = tuning_cost(*model_, max_batch);
  if (!cost) return refuse("Cannot tune: " + cost.error().message);
  if (!model_->factory) return refuse("Cannot tune: the model has no runner to confirm with");

  const ArrivalSpec traffic = this->traffic();
  if (Status s = traffic.validate(); !s) return refuse("Traffic: " + s.message());
  traffic_spec_ = traffic;
  traffic_text_ = traffic.describe();
  run_factory_ = model_->factory;  // a model loaded meanwhile is tuned next time
  run_metadata_ = model_->metadata;

  TuneSettings settings;
  settings.slo_p99_ms = slo_->value();
  settings.objective =
      objective_->currentIndex() == 1 ? TuneObjective::kLatency : TuneObjective::kThroughput;
  candidates_ = confirm_->value();
  result_.reset();
  confirmed_.clear();
  winner_.reset();
  table_model_->clear();
  plot_->clear("Searching…");
  stop_ = false;
  phase_ = Phase::kSearching;
  const uint64_t id = ++run_id_;
  bar_->setRange(0, static_cast<int>(std::min<uint64_t>(space->size(), 1u << 30)));
  bar_->setValue(0);
  status_->setText(QString("Predicting %1 configurations against %2…")
                       .arg(space->size())
                       .arg(text_of(traffic_text_)));
  update_controls();

  start_worker([this, id, space = *space, base, settings, traffic, cost = *cost]() mutable {
    uint64_t posted = 0;
    settings.cancel = [this] { return stop_.load(); };
    settings.progress = [this, id, &posted](uint64_t done, uint64_t total) {
      // A queued call per percent at most: a search evaluates thousands.
      if (done != total && done - posted < std::max<uint64_t>(1, total / 100)) return;
      posted = done;
      const int scale = total > (1u << 30) ? static_cast<int>(total >> 30) + 1 : 1;
      post_progress(id, static_cast<int>(done / static_cast<uint64_t>(scale)),
                    static_cast<int>(total / static_cast<uint64_t>(scale)),
                    QString("Predicted %1 of %2 configurations…").arg(done).arg(total));
    };
    TuneResult result = search(space, base, settings, prediction_evaluator(traffic, cost));
    QMetaObject::invokeMethod(
        this, [this, id, r = std::move(result)]() mutable { search_done(id, std::move(r)); },
        Qt::QueuedConnection);
  });
  return Status::Ok();
}

void TunerPanel::post_progress(uint64_t id, int value, int maximum, const QString& what) {
  QMetaObject::invokeMethod(
      this,
      [this, id, value, maximum, what] {
        if (id != run_id_) return;
        bar_->setRange(0, std::max(1, maximum));
        bar_->setValue(value);
        status_->setText(what);
      },
      Qt::QueuedConnection);
}

void TunerPanel::search_done(uint64_t id, TuneResult result) {
  if (id != run_id_) return;
  join_worker();
  result_ = std::move(result);
  const TuneResult& r = *result_;
  if (r.best) winner_ = r.best->options;
  show_rows();
  const QString searched = QString("Predicted %1 of %2 configurations%3.")
                               .arg(r.evaluated.size())
                               .arg(r.space_size)
                               .arg(r.method == TuneResult::Method::kExhaustive
                                        ? ""
                                        : " (a coarse grid, then refined around the best)");
  if (r.cancelled) return finish("Cancelled. " + searched);
  if (!r.best) {
    show_error(text_of(r.best.error().message));
    return finish(searched + " None meets the SLO; the front shows what comes closest.");
  }
  std::vector<Evaluated> picks = tune_candidates(r, candidates_);
  if (picks.empty()) {
    bar_->setValue(bar_->maximum());
    return finish(searched + " Best predicted: " + options_brief(r.best->options) + ".");
  }
  start_confirming(std::move(picks));
}

void TunerPanel::start_confirming(std::vector<Evaluated> picks) {
  phase_ = Phase::kConfirming;
  paused_traffic_ = hooks_.pause_traffic && hooks_.pause_traffic();
  const int n = static_cast<int>(picks.size());
  const QString paused = paused_traffic_ ? " The window's traffic is paused until it ends." : "";
  bar_->setRange(0, n * kRule.max_trials);
  bar_->setValue(0);
  status_->setText(QString("Confirming 1 of %1 live…%2").arg(n).arg(paused));
  update_controls();
  const uint64_t id = run_id_;
  ConfirmSpec spec;
  spec.factory = run_factory_;
  spec.metadata = run_metadata_;
  spec.traffic = traffic_spec_;
  spec.stop = &stop_;
  spec.rule = kRule;
  start_worker([this, id, spec, picks = std::move(picks), n, paused]() mutable {
    for (int i = 0; i < n; ++i) {
      spec.on_run = [this, id, i, n, paused](int runs) {
        post_progress(id, i * kRule.max_trials + runs, n * kRule.max_trials,
                      QString("Confirming %1 of %2 live: run %3 done…%4")
                          .arg(i + 1)
                          .arg(n)
                          .arg(runs)
                          .arg(paused));
      };
      auto c = confirm_live(spec, picks[static_cast<size_t>(i)]);
      Status s = c ? Status::Ok() : Status(c.error());
      if (c && *c) {
        QMetaObject::invokeMethod(
            this, [this, id, one = **c] { confirmed_one(id, one); }, Qt::QueuedConnection);
      } else if (c) {
        s = invalid_argument("no time was left to confirm");  // no deadline is set here
      }
      if (!s || i + 1 == n) {
        QMetaObject::invokeMethod(
            this, [this, id, s] { confirm_done(id, s); }, Qt::QueuedConnection);
        return;
      }
    }
  });
}

void TunerPanel::confirmed_one(uint64_t id, Confirmed c) {
  if (id != run_id_) return;
  confirmed_.push_back(std::move(c));
  bar_->setValue(static_cast<int>(confirmed_.size()) * kRule.max_trials);
  show_rows();
}

void TunerPanel::confirm_done(uint64_t id, Status s) {
  if (id != run_id_) return;
  join_worker();
  const QString note = paused_traffic_ ? " The window's traffic is back on." : "";
  if (paused_traffic_ && hooks_.resume_traffic) hooks_.resume_traffic();
  paused_traffic_ = false;
  if (!s && s.error().code == ErrorCode::kCancelled) {
    return finish(QString("Cancelled during live confirmation; %1 confirmed.%2")
                      .arg(confirmed_.size())
                      .arg(note));
  }
  if (!s) show_error("Confirming live failed: " + text_of(s.message()));
  bool measured_best = false;
  if (!confirmed_.empty()) {
    auto best = best_measured(confirmed_, result_->slo_p99_ms, result_->objective);
    if (best) {
      winner_ = confirmed_[*best].predicted.options;
      measured_best = true;
    } else {
      show_error(text_of(best.error().message));
    }
  }
  show_rows();
  bar_->setValue(bar_->maximum());
  QString text = QString("Confirmed %1 live.").arg(confirmed_.size());
  if (winner_) {
    text +=
        measured_best ? " Best as measured: " : " None meets the SLO as measured; best predicted: ";
    text += options_brief(*winner_) + ".";
  }
  finish(text + note);
}

void TunerPanel::finish(const QString& status) {
  phase_ = Phase::kIdle;
  status_->setText(status);
  update_controls();
}

void TunerPanel::show_rows() {
  if (!result_) return;
  std::optional<size_t> best;
  std::vector<TuneRow> rows = tune_rows(*result_, confirmed_, winner_, &best);
  plot_->show_result(result_->evaluated, rows, best, result_->slo_p99_ms);
  table_model_->set_rows(std::move(rows), best, result_->slo_p99_ms);
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

// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_tuner.h"

#include <qcustomplot.h>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMetaObject>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <exception>
#include <vector>

#include "api/options_json.h"
#include "runs/machine_facts.h"
#include "traffic/gen_workload.h"
#include "tuning/tune_run.h"
#include "ui/common/config_io.h"
#include "ui/common/gui_thread.h"
#include "ui/common/plot_panels.h"
#include "ui/common/qt_text.h"
#include "ui/generation/gen_tuner_plan.h"

namespace batchscope {

namespace {

constexpr size_t kKeptSteps = 20'000;
constexpr int kGenHeadroomColumn = 12;  // then "meets"

bool same_generation(const Options& a, const Options& b) {
  return a.scheduling == b.scheduling && a.max_num_seqs == b.max_num_seqs &&
         a.max_num_batched_tokens == b.max_num_batched_tokens && a.max_wait_us == b.max_wait_us &&
         a.num_lanes == b.num_lanes;
}
constexpr uint64_t kDecodeStepsForACost = 200;

// A slot that says what went wrong in `label`: no exception leaves it into
// Qt's event loop.
template <class F>
auto guarded(QLabel* label, const char* what, F f) {
  return [label, what, f = std::move(f)] {
    try {
      f();
    } catch (const std::exception& e) {
      label->setText(QString(what) + e.what());
    }
  };
}

QString number(double v, int decimals) { return QString::number(v, 'f', decimals); }
QString range_text(const FigureRange& f, int decimals) {
  return number(f.low, decimals) + "–" + number(f.high, decimals);
}

}  // namespace

GenTunerPanel::GenTunerPanel(GenTunerSetup setup, QWidget* parent)
    : QWidget(parent), setup_(std::move(setup)) {
  mode_ = new QComboBox;
  mode_->addItems({"This model", "Plan for a GPU"});
  mode_->setItemData(0, text_of("The window's model, " + setup_.info.name + ", on this machine"),
                     Qt::ToolTipRole);
  mode_->setItemData(1,
                     "A language model that is not here, from its config.json, planned for a GPU "
                     "that is not here (tune --model-config --gpu)",
                     Qt::ToolTipRole);
  plan_ = new GenTunerPlanInputs(this);
  plan_->set_on_change([this] { replan(); });
  ttft_ = new QDoubleSpinBox;
  ttft_->setRange(0, 600'000);
  ttft_->setDecimals(1);
  ttft_->setValue(200);
  ttft_->setToolTip("Time to first token at the quantile, ms; 0: no bound");
  itl_ = new QDoubleSpinBox;
  itl_->setRange(0, 60'000);
  itl_->setDecimals(1);
  itl_->setValue(30);
  itl_->setToolTip("Inter-token latency at the quantile, ms; 0: no bound");
  quantile_ = new QComboBox;
  quantile_->addItems({"p50", "p90", "p95", "p99"});
  quantile_->setCurrentIndex(3);
  objective_ = new QComboBox;
  for (GenObjective o : {GenObjective::kGoodput, GenObjective::kThroughput, GenObjective::kLatency})
    objective_->addItem(gen_objective_name(o));
  seconds_ = new QDoubleSpinBox;
  seconds_->setRange(1, 600);
  seconds_->setValue(10);
  seconds_->setSuffix(" s");
  seconds_->setToolTip("Seconds of the traffic each prediction replays");
  space_ = new QLineEdit(text_of(default_gen_space_text()));
  space_error_ = new QLabel;
  space_error_->setStyleSheet("color:#b00000");
  space_error_->setWordWrap(true);
  space_error_->hide();
  connect(space_, &QLineEdit::textChanged, this, [this](const QString& t) {
    auto s = parse_gen_space(t.toStdString());
    space_error_->setText(s ? QString() : text_of(s.error().message));
    space_error_->setVisible(!s);
    if (planning()) replan();  // the cache leaves room for the space's largest step
  });
  capacity_box_ =
      new QCheckBox("Find the largest rate some configuration serves within the objective");
  auto* form = new QFormLayout;
  form->addRow("Tune", mode_);
  plan_->add_rows(form, 1);
  form->addRow("TTFT bound (ms)", ttft_);
  form->addRow("ITL bound (ms)", itl_);
  form->addRow("Quantile", quantile_);
  form->addRow("Objective", objective_);
  form->addRow("Traffic replayed", seconds_);
  form->addRow("Space", space_);
  form->addRow("", space_error_);
  form->addRow("", capacity_box_);

  run_ = new QPushButton("Run");
  cancel_button_ = new QPushButton("Cancel");
  cancel_button_->setEnabled(false);
  progress_ = new QProgressBar;
  progress_->setTextVisible(true);
  connect(cancel_button_, &QPushButton::clicked, this, [this] { cancel(); });
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_button_);
  buttons->addWidget(progress_, 1);

  status_ = new QLabel("Tunes the traffic panel's traffic on the step predictor.");
  status_->setWordWrap(true);
  error_ = new QLabel;
  error_->setWordWrap(true);
  error_->setStyleSheet("color:#b00000");
  connect(run_, &QPushButton::clicked, this, guarded(error_, "Not run: ", [this] { (void)run(); }));
  connect(mode_, &QComboBox::currentIndexChanged, this,
          guarded(error_, "Mode not changed: ", [this] { mode_changed(); }));
  capacity_ = new QLabel;
  capacity_->setWordWrap(true);

  plot_ = new QCustomPlot;
  plot_->setMinimumHeight(180);
  front_ = plot_->addGraph();
  front_->setLineStyle(QCPGraph::lsNone);
  front_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(0x1f, 0x77, 0xb4), 7));
  front_->setName("Pareto front (goodput, TTFT, ITL)");
  best_ = plot_->addGraph();
  best_->setLineStyle(QCPGraph::lsNone);
  best_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssStar, QColor(0xd6, 0x27, 0x28), 14));
  best_->setName("best");
  plot_->yAxis->setLabel("goodput (req/s)");
  plot_->xAxis->setLabel("TTFT at the quantile (ms)");
  plot_->legend->setVisible(true);

  bound_ = new QCPItemStraightLine(plot_);
  bound_->setPen(QPen(QColor(0xd6, 0x27, 0x28), 1, Qt::DashLine));
  bound_->setVisible(false);

  table_ = new QTableWidget(0, kGenHeadroomColumn + 2);
  table_->setHorizontalHeaderLabels({"", "scheduling", "max_num_seqs", "tokens/step", "max_wait ms",
                                     "lanes", "tokens/s", "goodput req/s", "TTFT ms", "ITL ms",
                                     "TTFT band", "ITL band", "headroom\nstep cost, rate",
                                     "meets"});
  table_->horizontalHeaderItem(kGenHeadroomColumn - 2)
      ->setToolTip(
          "TTFT predicted again with the step cost at the band's ends: the kept step cost's "
          "drift (p10..p90 of its runs), or +-15% until it is known");
  table_->horizontalHeaderItem(kGenHeadroomColumn)
      ->setToolTip(
          "How much slower the step cost, and how much higher the rate, may get before the "
          "configuration misses the objective (bisection on the predictor)");
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  apply_ = new QPushButton("Apply");
  apply_->setToolTip("Put the selected configuration in force now");
  confirm_button_ = new QPushButton("Confirm live");
  confirm_button_->setToolTip(
      "Apply the selected configuration and measure this window's traffic for the seconds "
      "above; the measured figures show beside the predicted ones");
  confirmed_ = new QLabel;
  confirmed_->setWordWrap(true);
  export_ = new QPushButton("Export…");
  export_->setToolTip("Export the selected configuration for vLLM, TGI or TensorRT-LLM");
  applied_ = new QLabel;
  applied_->setWordWrap(true);
  connect(apply_, &QPushButton::clicked, this,
          guarded(applied_, "Not applied: ", [this] { (void)apply_selected(); }));
  connect(confirm_button_, &QPushButton::clicked, this,
          guarded(confirmed_, "Not confirmed: ", [this] { (void)confirm_selected(); }));
  connect(export_, &QPushButton::clicked, this, guarded(applied_, "Not exported: ", [this] {
            auto in = export_input();
            if (!in) {
              applied_->setText("Not exported: " + text_of(in.error().message));
              return;
            }
            export_config_dialog(this, *in);
          }));
  auto* actions = new QHBoxLayout;
  actions->addWidget(apply_);
  actions->addWidget(confirm_button_);
  actions->addWidget(export_);
  actions->addWidget(applied_, 1);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(status_);
  layout->addWidget(error_);
  layout->addWidget(capacity_);
  layout->addWidget(plot_, 2);
  layout->addWidget(table_, 2);
  layout->addLayout(actions);
  layout->addWidget(confirmed_);
  plan_->set_visible(false);  // until "Plan for a GPU"
}

GenTunerPanel::~GenTunerPanel() {
  cancel_ = true;
  if (worker_.joinable()) worker_.join();
}

void GenTunerPanel::add_steps(std::span<const StepRecord> steps) {
  auto decode_only = [](const StepRecord& s) { return s.prefill_tokens == 0 && s.decodes > 0; };
  for (const StepRecord& s : steps) {
    steps_.push_back(s);
    steps_.back().seqs.clear();  // not needed for a cost
    decode_steps_ += decode_only(s);
    if (steps_.size() > kKeptSteps) {
      decode_steps_ -= decode_only(steps_.front());
      steps_.pop_front();
    }
  }
}

Expected<std::pair<GenStepCost, std::string>> GenTunerPanel::step_cost() const {
  if (setup_.exact) return std::pair{*setup_.exact, std::string("the synthetic model's own cost")};
  if (decode_steps_ >= kDecodeStepsForACost) {
    const std::vector<StepRecord> seen_steps(steps_.begin(), steps_.end());
    const uint32_t lanes = setup_.in_force ? setup_.in_force().num_lanes : 1;
    auto learned = learn_step_cost(setup_.kept, seen_steps, lanes);
    if (learned) {
      const std::string n = std::to_string(seen_steps.size());
      if (setup_.kept) {
        return std::pair{GenStepCost::of(*learned),
                         setup_.kept_source + ", refined by this window's " + n + " steps"};
      }
      return std::pair{GenStepCost::of(*learned), "this window's " + n + " steps"};
    }
  }
  if (setup_.kept) return std::pair{GenStepCost::of(*setup_.kept), setup_.kept_source};
  return invalid_argument(
      "no step cost for this model yet: run the traffic for a few seconds, and "
      "the tuner measures this window's steps (" +
      std::to_string(kDecodeStepsForACost) + " that only decoded are needed, " +
      std::to_string(decode_steps_) + " so far)");
}

Status GenTunerPanel::run() {
  if (running()) return Status::Ok();
  error_->clear();
  auto fail = [this](const std::string& m) {
    error_->setText(text_of(m));
    return invalid_argument(m);
  };
  auto space = parse_gen_space(space_->text().toStdString());
  if (!space) return fail("space: " + space.error().message);
  auto traffic = setup_.traffic ? setup_.traffic() : invalid_argument("no traffic panel");
  if (!traffic) return fail("traffic: " + traffic.error().message);
  GenTunerOutcome out;
  GenTuneSettings settings;
  LmInfo info = setup_.info;
  Options base = setup_.in_force ? setup_.in_force() : Options{};
  BandFactors band;
  Expected<std::pair<GenStepCost, std::string>> cost =
      invalid_argument("no step cost");  // set below
  if (planning()) {
    // The model planned for the GPU: the roofline's step cost, the cache its
    // memory leaves, the band +-15% (tune --model-config's).
    base = Options{};
    out.plan_reserve = plan_reserve();
    auto planned = plan_->plan(out.plan_reserve);
    if (!planned) return fail(planned.error().message);
    info = planned->info;
    cost = std::pair{planned->cost, planned->roofline.constants().fitted_on};
    band = band_factors(CostDrift{}, kDefaultBand);
    band.source = "the default +-15%: a GPU that is not here keeps no drift";
    settings.context = static_cast<uint32_t>(std::max(0, info.context_length));
    out.plan_choice = plan_->choice();
    out.planned = std::move(*planned);
  } else {
    cost = step_cost();
    if (!cost) return fail(cost.error().message);
    // The band: the kept step cost's drift where it is known (the synthetic
    // model's own cost has none), else +-15%.
    band = band_factors(!setup_.exact && setup_.kept ? drift_of_levels(setup_.kept->evidence)
                                                     : CostDrift{});
    if (setup_.exact)
      band.source = "the default +-15%: the synthetic model's own cost keeps no drift";
  }
  if (!planning()) {
    for (uint32_t n : lane_counts(*space, setup_.in_force ? setup_.in_force() : Options{})) {
      if (cost->first.has_lanes(n)) continue;
      return fail("no step cost at " + std::to_string(n) + " lanes yet (" + cost->second +
                  "): run the traffic at " + std::to_string(n) +
                  " lanes for a few seconds, or bench --lanes " + std::to_string(n) + " once");
    }
  }
  if (cost->first.of_step(1, 0) <= Duration(0)) {
    return fail("a step that costs nothing cannot be predicted (" + cost->second + ")");
  }

  settings.slo.ttft_ms = ttft_->value();
  settings.slo.itl_ms = itl_->value();
  settings.slo.quantile = quantile_->currentText().mid(1).toInt();
  settings.objective = *parse_gen_objective(objective_->currentText().toStdString());
  cancel_ = false;
  settings.cancel = [this] { return cancel_.load(); };
  settings.progress = [this](uint64_t done, uint64_t total) {
    if (done % 8 != 0 && done != total) return;
    QMetaObject::invokeMethod(
        this,
        [this, done, total] {
          assert_gui_thread("GenTunerPanel progress");
          progress_->setMaximum(static_cast<int>(std::min<uint64_t>(total, INT32_MAX)));
          progress_->setValue(static_cast<int>(std::min<uint64_t>(done, INT32_MAX)));
        },
        Qt::QueuedConnection);
  };
  ArrivalSpec spec;
  spec.pattern = Pattern::kPoisson;
  spec.rate = traffic->rate;
  spec.duration_s = seconds_->value();
  spec.seed = 1;
  out.traffic =
      QString("poisson rate=%1/s, prompt %2, max_tokens %3")
          .arg(traffic->rate)
          .arg(text_of(traffic->prompt.describe()), text_of(traffic->max_tokens.describe()))
          .toStdString();
  out.cost = cost->first.text() + " (" + cost->second + ")";
  status_->setText(text_of("Searching " + std::to_string(space->size()) + " combinations of " +
                           out.traffic + "; step cost " + out.cost + "."));
  set_busy(true);
  worker_ =
      std::thread([this, space = *space, settings, spec, base, t = *traffic, cost = cost->first,
                   info, find = capacity_box_->isChecked(), band, out = std::move(out)]() mutable {
        try {
          auto evaluator_at = [&](const ArrivalSpec& traffic) {
            return predicted_evaluator(
                traffic, [&t](uint64_t seed) { return GenWorkload(t.prompt, t.max_tokens, seed); },
                info, cost, settings.slo);
          };
          if (find) {
            GenTuneSettings quick = settings;
            quick.first_meeting = true;
            quick.progress = nullptr;
            const MaxRate m = max_rate([&](double factor) -> std::optional<GenEvaluated> {
              auto scaled = scaled_traffic(spec, factor);
              if (!scaled || cancel_) return std::nullopt;
              const GenTuneResult r = gen_search(space, base, quick, evaluator_at(*scaled));
              if (!r.best) return std::nullopt;
              return *r.best;
            });
            out.capacity = m;
            if (m.factor > 0) out.capacity_rps = mean_rate(*scaled_traffic(spec, m.factor));
          }
          out.result = gen_search(space, base, settings, evaluator_at(spec));
          if (out.result.best && !cancel_) {
            // Bands and headroom, as tune gives them.
            HeadroomSettings hs;
            hs.band = band;
            hs.needed = band.high;
            hs.source = band.source;
            hs.cancel = settings.cancel;
            const GenScaledEvaluator scaled = scaled_predicted_evaluator(
                spec, [t](uint64_t seed) { return GenWorkload(t.prompt, t.max_tokens, seed); },
                info, cost, settings.slo);
            out.headroom = gen_rank_by_headroom(out.result, scaled, hs);
            if (const GenEvaluated* c = out.headroom.chosen()) out.result.best = *c;
            band_gen_front(out.result.pareto, out.headroom, scaled, 64, settings.cancel);
          }
          QMetaObject::invokeMethod(
              this, [this, out = std::move(out)]() mutable { finished(std::move(out)); },
              Qt::QueuedConnection);
        } catch (const std::exception& e) {  // said in the status, never past the thread
          QMetaObject::invokeMethod(
              this,
              [this, what = std::string(e.what())] {
                if (worker_.joinable()) worker_.join();
                set_busy(false);
                error_->setText(text_of("The search stopped: " + what));
              },
              Qt::QueuedConnection);
        }
      });
  return Status::Ok();
}

void GenTunerPanel::cancel() { cancel_ = true; }

void GenTunerPanel::set_busy(bool busy) {
  run_->setEnabled(!busy && !(planning() && plan_->refused()));
  mode_->setEnabled(!busy);
  cancel_button_->setEnabled(busy);
  if (busy) {
    progress_->setValue(0);
  } else {
    progress_->setValue(progress_->maximum());
  }
}

void GenTunerPanel::finished(GenTunerOutcome out) {
  assert_gui_thread("GenTunerPanel::finished");
  if (worker_.joinable()) worker_.join();
  set_busy(false);
  const GenTuneResult& r = out.result;
  QString status =
      QString("Evaluated %1 configurations (%2 invalid, %3 alike) of %4; step cost %5.")
          .arg(r.evaluated.size())
          .arg(r.invalid)
          .arg(r.alike)
          .arg(text_of(out.traffic), text_of(out.cost));
  if (r.best && !out.headroom.checked.empty()) {
    const GenHeadroomResult& h = out.headroom;
    status += QString(" Band: the step cost x%1..x%2 (%3). ")
                  .arg(h.band.low, 0, 'f', 2)
                  .arg(h.band.high, 0, 'f', 2)
                  .arg(text_of(h.source));
    status += h.fragile() ? QString(
                                "None of the best %1 meets the objective with the step cost x%2 as "
                                "slow: the best shown has the most headroom, and is fragile.")
                                .arg(h.checked.size())
                                .arg(h.needed, 0, 'f', 2)
                          : QString("The best meets the objective with the step cost x%1 as slow.")
                                .arg(h.needed, 0, 'f', 2);
  }
  if (r.cancelled) status += " Cancelled: what was evaluated is shown.";
  status_->setText(status);
  error_->setText(r.best ? QString() : text_of(r.best.error().message));
  capacity_->clear();
  if (out.capacity) {
    capacity_->setText(
        out.capacity->factor > 0
            ? QString("Capacity: %1 req/s (%2 times the traffic's rate) is the most some "
                      "configuration serves within %3.")
                  .arg(number(out.capacity_rps, 2))
                  .arg(out.capacity->factor, 0, 'g', 4)
                  .arg(text_of(r.slo.describe()))
            : QString("Capacity: no configuration meets %1 even at 1/1024 of the rate.")
                  .arg(text_of(r.slo.describe())));
  }
  outcome_ = std::move(out);
  show_rows();
}

void GenTunerPanel::show_rows() {
  rows_.clear();
  if (!outcome_) return;
  const GenTuneResult& r = outcome_->result;
  if (r.best) rows_.push_back(*r.best);
  for (const GenEvaluated& e : r.pareto) {
    if (!r.best || !same_generation(e.options, r.best->options)) rows_.push_back(e);
  }
  const QString q = QString("p%1").arg(r.slo.quantile);
  table_->setHorizontalHeaderItem(8, new QTableWidgetItem("TTFT " + q + " ms"));
  table_->setHorizontalHeaderItem(9, new QTableWidgetItem("ITL " + q + " ms"));
  table_->setRowCount(static_cast<int>(rows_.size()));
  for (QCPItemLine* l : bands_) plot_->removeItem(l);
  bands_.clear();
  const GenHeadroomResult& h = outcome_->headroom;
  QVector<double> fx, fy, bx, by;
  for (size_t i = 0; i < rows_.size(); ++i) {
    const GenEvaluated& e = rows_[i];
    const bool best = i == 0 && r.best;
    QString room;
    if (e.headroom) {
      const Headroom& x = *e.headroom;
      room = x.slowdown <= 0
                 ? QStringLiteral("misses")
                 : QString("%1%2×").arg(x.slowdown_beyond ? "≥" : "").arg(x.slowdown, 0, 'f', 2);
      if (x.slowdown > 0 && x.rate_applies) {
        room +=
            QString(" · %1+%2%").arg(x.rate_beyond ? "≥" : "").arg(std::lround(100 * (x.rate - 1)));
      }
    }
    const bool fragile = e.headroom && e.headroom->slowdown < h.needed;
    const QStringList cells = {
        best ? (h.fragile() && !h.checked.empty() ? "best, fragile" : "best") : "",
        e.options.scheduling == Scheduling::kStatic ? "static" : "continuous",
        QString::number(e.options.max_num_seqs),
        QString::number(e.options.max_num_batched_tokens),
        e.options.scheduling == Scheduling::kStatic ? number(e.options.max_wait_us / 1000.0, 1)
                                                    : "",
        QString::number(e.options.num_lanes),
        number(e.tokens_per_s, 0),
        number(e.goodput_rps, 2),
        number(e.ttft_ms, 1),
        number(e.itl_ms, 2),
        e.band ? range_text(e.band->ttft_ms, 1) : QString(),
        e.band ? range_text(e.band->itl_ms, 2) : QString(),
        room,
        meets_gen_slo(e, r.slo) ? "yes" : "no"};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c == kGenHeadroomColumn && fragile) {
        item->setForeground(QColor(0xc0, 0x60, 0x00));
        item->setToolTip(
            QString("Short of the x%1 the band asks: fragile").arg(h.needed, 0, 'f', 2));
      } else if ((c == kGenHeadroomColumn - 2 || c == kGenHeadroomColumn - 1) && e.band) {
        item->setToolTip(QString("Predicted again with the step cost x%1 and x%2 (%3)")
                             .arg(e.band->fast, 0, 'f', 2)
                             .arg(e.band->slow, 0, 'f', 2)
                             .arg(text_of(h.source)));
      }
      table_->setItem(static_cast<int>(i), c, item);
    }
    (best ? bx : fx).push_back(e.ttft_ms);
    (best ? by : fy).push_back(e.goodput_rps);
    if (e.band) {  // the TTFT band, across the point
      auto* bar = new QCPItemLine(plot_);
      bar->setPen(QPen(QColor(0x1f, 0x77, 0xb4, 110), 3, Qt::SolidLine, Qt::FlatCap));
      bar->start->setCoords(e.band->ttft_ms.low, e.goodput_rps);
      bar->end->setCoords(e.band->ttft_ms.high, e.goodput_rps);
      bar->setSelectable(false);
      bands_.push_back(bar);
    }
  }
  front_->setData(fx, fy);
  best_->setData(bx, by);
  plot_->rescaleAxes();
  if (!bands_.empty()) {  // the bars, in view
    QCPRange x = plot_->xAxis->range();
    for (const QCPItemLine* l : bands_) {
      x.lower = std::min(x.lower, l->start->coords().x());
      x.upper = std::max(x.upper, l->end->coords().x());
    }
    plot_->xAxis->setRange(x);
  }
  if (r.slo.ttft_ms > 0) {  // the bound, in view
    const QCPRange x = plot_->xAxis->range();
    plot_->xAxis->setRange(std::min(x.lower, r.slo.ttft_ms), std::max(x.upper, r.slo.ttft_ms));
  }
  plot_->xAxis->scaleRange(1.15, plot_->xAxis->range().center());
  plot_->yAxis->scaleRange(1.15, plot_->yAxis->range().center());
  bound_->setVisible(r.slo.ttft_ms > 0);
  bound_->point1->setCoords(r.slo.ttft_ms, 0);
  bound_->point2->setCoords(r.slo.ttft_ms, 1);
  plot_->replot();  // laid out, then the legend goes where it hides no point
  place_legend_clear(plot_->axisRect(), plot_->legend);
  plot_->replot();
  if (!rows_.empty()) select_row(0);
}

void GenTunerPanel::clear_outcome() {
  outcome_.reset();
  rows_.clear();
  table_->setRowCount(0);
  for (QCPItemLine* l : bands_) plot_->removeItem(l);
  bands_.clear();
  front_->data()->clear();
  best_->data()->clear();
  bound_->setVisible(false);
  plot_->replot();
  error_->clear();
  capacity_->clear();
  applied_->clear();
}

int GenTunerPanel::plotted_points() const { return front_->dataCount() + best_->dataCount(); }

void GenTunerPanel::select_row(int row) { table_->selectRow(row); }

std::optional<int> GenTunerPanel::selected_row() const {
  const auto rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return std::nullopt;
  const int row = rows.front().row();
  if (row < 0 || static_cast<size_t>(row) >= rows_.size()) return std::nullopt;
  return row;
}

Status GenTunerPanel::apply_selected() {
  const auto row = selected_row();
  if (outcome_ && outcome_->planned) {
    const Status s = invalid_argument(
        "the model is planned for a GPU that is not here; Export… it for its server");
    applied_->setText("Not applied: " + text_of(s.message()));
    return s;
  }
  Status s = !row           ? invalid_argument("select a configuration in the table first")
             : setup_.apply ? setup_.apply(rows_[static_cast<size_t>(*row)].options)
                            : invalid_argument("there is no engine to apply to");
  applied_->setText(
      s ? "Applied: " + text_of(describe_generation(rows_[static_cast<size_t>(*row)].options)) + "."
        : "Not applied: " + text_of(s.message()));
  return s;
}

QString GenTunerPanel::status_text() const { return status_->text(); }
QString GenTunerPanel::error_text() const { return error_->text(); }
QString GenTunerPanel::capacity_text() const { return capacity_->text(); }

}  // namespace batchscope

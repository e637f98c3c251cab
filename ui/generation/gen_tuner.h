// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation view's Tuner tab: which scheduling, max_num_seqs, token
// budget per step and static wait serve the traffic panel's traffic best
// under a TTFT and ITL objective, found as `batchscope tune` finds them for
// a generative model (core/tuning/gen_tune.h, docs/generation.md), on the
// step predictor.
//
//  - Inputs: the TTFT and ITL bounds (ms; 0 is none), their quantile, the
//    objective (goodput, throughput or latency), how many seconds of the
//    traffic each prediction replays, the search space (checked as it is
//    typed), and whether to find the largest rate some configuration still
//    serves within the objective (the capacity answer). The traffic is the
//    traffic panel's: its rate and length distributions, Poisson.
//  - The step cost: the model's own for the synthetic model; otherwise the
//    steps this window has run (the last 20,000 the view drained), measured
//    as `bench --cost-out` measures them, refining the model's cost kept on
//    this machine where the window was given one; the kept cost alone while
//    the window has run too few steps (200 that only decoded). With none of
//    these, Run says to run the traffic first. The status names the cost.
//  - Run searches on a worker thread with a progress bar; Cancel stops it
//    before its next configuration. The capacity probes come first.
//  - The results: the Pareto front (goodput, TTFT and ITL at the quantile)
//    as a scatter of goodput against TTFT with the best and the TTFT bound
//    marked, and as a table with the best first, saying which meet the SLO;
//    when nothing meets the objective, the error names the closest
//    configuration and the front still shows.
//  - Bands and headroom, as `tune` gives them (tuning/gen_headroom.h): each
//    row's TTFT and ITL predicted again with the step cost at the band's
//    ends (the kept step cost's drift, or +-15% until it is known), drawn
//    as a bar across its point; the best few their headroom in the step
//    cost and the rate. The best is the first in the objective's order that
//    still meets it at the band's slow end, else the one with the most
//    headroom, marked fragile. A confirmation says whether it measured
//    inside the band.
//  - Apply puts the selected row's options in force live (the engine's
//    set_options; the controls follow). Export… opens the export dialog
//    (vLLM, TGI, TensorRT-LLM, JSON) with them and the figures they were
//    predicted to give.
//  - Plan for a GPU (the mode at the top; gen_tuner_plan.h): a language
//    model that is not here, from its config.json, planned for a GPU from
//    the table at a tensor parallelism, as `tune --model-config --gpu`
//    plans it (core/model/planned_tune.h): the roofline's step cost and the
//    cache the GPU's memory leaves (one for the space: the activations'
//    reserve of its largest max_num_seqs and max_num_batched_tokens), the
//    band +-15%, the same traffic, search, front, table and capacity; its
//    default space the planned tune's. Apply and Confirm live are off (the
//    model is not here); Export… carries the serving plan (the model, the
//    GPU, TP, one replica, the capacity, what it assumes), so KServe is
//    offered beside vLLM, TGI and TensorRT-LLM.
// The search is not confirmed live here: `batchscope tune` does that.
// Thread-safety: GUI thread only. The worker reads only copies (the cost,
// the model's description, the traffic, the space) and the atomic cancel
// flag; its progress and result come back as queued calls. The destructor
// cancels a run under way and joins its thread, which takes at most one
// prediction.

#include <QWidget>
#include <atomic>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "export/export_config.h"
#include "generation/lm_runner.h"
#include "model/planned_lm.h"
#include "tuning/gen_headroom.h"
#include "tuning/gen_predictor.h"
#include "tuning/gen_tune.h"
#include "tuning/step_cost.h"
#include "ui/generation/gen_traffic.h"

class QCheckBox;
class QComboBox;
class QCPGraph;
class QCPItemLine;
class QCPItemStraightLine;
class QCustomPlot;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace batchscope {

class GenTunerPlanInputs;

struct GenTunerSetup {
  LmInfo info;
  std::optional<GenStepCost> exact;  // the synthetic model's own cost
  std::optional<StepCost> kept;      // the model's cost kept on this machine
  std::string kept_source;           // where it was kept
  std::string device = "cpu";
  std::function<Expected<GenTrafficSpec>()> traffic;
  std::function<Status(const Options&)> apply;
  std::function<Options()> in_force;
  std::function<TimePoint()> now;  // the engine's clock, for a live confirmation
};

// A live confirmation of one configuration: applied, then the window's own
// traffic measured over `seconds`, the requests that arrived in that time.
struct GenConfirmation {
  GenEvaluated predicted;
  std::optional<GenEvaluated> measured;  // once it is done
  size_t requests = 0;
};

// What a finished run found.
struct GenTunerOutcome {
  GenTuneResult result;
  std::optional<MaxRate> capacity;
  double capacity_rps = 0;
  std::string traffic;  // "poisson rate=25/s, prompt ..., max_tokens ..."
  std::string cost;     // the step cost's text and source
  // The best few by headroom; the choice (result.best) is its chosen one.
  GenHeadroomResult headroom;
  // Plan for a GPU: the model planned there, what was chosen, and the
  // options whose activations its cache leaves room for.
  std::optional<PlannedLm> planned;
  PlanChoice plan_choice;
  Options plan_reserve;
};

class GenTunerPanel : public QWidget {
 public:
  explicit GenTunerPanel(GenTunerSetup setup, QWidget* parent = nullptr);
  ~GenTunerPanel() override;

  // The window's steps, as the view drains them.
  void add_steps(std::span<const StepRecord> steps);
  // The window's ended requests, as the view drains them: a confirmation's.
  void add_requests(std::span<const GenRecord> requests);
  const std::deque<StepRecord>& window_steps() const { return steps_; }
  // The step cost a run would use now, and where it comes from.
  Expected<std::pair<GenStepCost, std::string>> step_cost() const;

  Status run();
  void cancel();
  bool running() const { return worker_.joinable(); }
  Status apply_selected();
  // Applies the selected configuration and measures the window's traffic
  // for seconds(): the requests that arrive then, once they have ended (or
  // two seconds past the last one's arrival), are summarized as a tune's
  // confirmation is, beside the prediction. Refused while one runs.
  Status confirm_selected();
  bool confirming() const { return confirm_.has_value() && !confirm_->measured; }
  const std::optional<GenConfirmation>& confirmation() const { return confirm_; }
  QString confirmation_text() const;
  Expected<ExportInput> export_input() const;

  // "This model" (0) or "Plan for a GPU" (1), and the plan's inputs.
  QComboBox* mode() const { return mode_; }
  bool planning() const;
  GenTunerPlanInputs* plan() const { return plan_; }
  QPushButton* run_button() const { return run_; }
  QPushButton* apply_button() const { return apply_; }
  QPushButton* export_button() const { return export_; }
  // The front's points on the plot (the best among them).
  int plotted_points() const;

  QDoubleSpinBox* ttft_ms() const { return ttft_; }
  QDoubleSpinBox* itl_ms() const { return itl_; }
  QComboBox* quantile() const { return quantile_; }
  QComboBox* objective() const { return objective_; }
  QDoubleSpinBox* seconds() const { return seconds_; }
  QLineEdit* space() const { return space_; }
  QCheckBox* find_capacity() const { return capacity_box_; }
  QTableWidget* table() const { return table_; }
  QString status_text() const;
  QString error_text() const;
  QString capacity_text() const;
  const std::optional<GenTunerOutcome>& outcome() const { return outcome_; }

 private:
  void finished(GenTunerOutcome outcome);
  void show_rows();
  void select_row(int row);
  std::optional<int> selected_row() const;
  void set_busy(bool busy);
  void finish_confirmation();
  // The plan-mode parts (gen_tuner_plan.cpp).
  void mode_changed();
  void replan();
  Options plan_reserve() const;
  void clear_outcome();

  GenTunerSetup setup_;
  std::deque<StepRecord> steps_;
  uint64_t decode_steps_ = 0;  // of steps_, those that only decoded
  std::optional<GenTunerOutcome> outcome_;
  std::vector<GenEvaluated> rows_;  // the table's, best first
  std::thread worker_;
  std::atomic<bool> cancel_{false};
  // The confirmation: its window [since, until) on the engine's clock, the
  // requests that arrived in it, and when it gives up on the late ones.
  std::optional<GenConfirmation> confirm_;
  TimePoint confirm_since_{}, confirm_until_{}, confirm_by_{};
  std::vector<GenRecord> confirm_records_;

  QComboBox* mode_ = nullptr;
  GenTunerPlanInputs* plan_ = nullptr;
  QDoubleSpinBox* ttft_ = nullptr;
  QDoubleSpinBox* itl_ = nullptr;
  QComboBox* quantile_ = nullptr;
  QComboBox* objective_ = nullptr;
  QDoubleSpinBox* seconds_ = nullptr;
  QLineEdit* space_ = nullptr;
  QLabel* space_error_ = nullptr;
  QCheckBox* capacity_box_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* error_ = nullptr;
  QLabel* capacity_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QCPGraph* front_ = nullptr;
  QCPGraph* best_ = nullptr;
  QCPItemStraightLine* bound_ = nullptr;  // the TTFT bound
  std::vector<QCPItemLine*> bands_;       // each row's TTFT band
  QTableWidget* table_ = nullptr;
  QPushButton* apply_ = nullptr;
  QPushButton* confirm_button_ = nullptr;
  QPushButton* export_ = nullptr;
  QLabel* confirmed_ = nullptr;
  QLabel* applied_ = nullptr;
};

}  // namespace batchscope

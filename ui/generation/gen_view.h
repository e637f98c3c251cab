// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation view: everything the workbench shows for a generative
// model, over a GenEngine owned elsewhere. On the left (scrolling on a short
// screen) the scheduling controls (applied live), the built-in traffic, an
// HTTP listener whose clients' requests join the same engine
// (gen_listener.h), a line of live figures (output tokens/s, running and
// waiting sequences, cache blocks in use) and the prompt box whose
// completion streams in; on the right, in a Live tab, the live plots (TTFT
// and ITL fans, tokens/s, sequences, cache) above the step inspector, and in
// a Tuner tab the tuner over the traffic panel's traffic (gen_tuner.h).
//
// A ~30 Hz timer drains the engine's request and step records (nothing is
// pushed per event), folds them into GenMetrics (0.5 s windows, five minutes
// kept), appends the steps to the inspector and redraws the plots when a
// window has completed; the listener's /metrics reports the same totals.
// The engine must outlive the view; destroying the view stops its listener
// and traffic and cancels its prompt's generation. The services of a
// listener that has served go with the view unless taken first
// (GenListener::take_services): stop the engine before, or take them and
// keep them until the engine has stopped, as GenMainWindow does.
// Thread-safety: GUI thread only.

#include <QWidget>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "generation/gen_engine.h"
#include "generation/gen_metrics.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_cost.h"
#include "ui/generation/gen_listener.h"

class QCheckBox;
class QLabel;
class QTabWidget;
class QTimer;

namespace batchscope {

class GenControls;
class GenPlots;
class GenPromptBox;
class GenRecordBox;
class GenStepInspector;
class GenTraffic;
class GenTunerPanel;

struct GenViewConfig {
  double traffic_rate = 25;  // req/s for the built-in traffic: busy, within tiny_lm's capacity
  bool start_traffic = false;
  double span_s = 60;          // seconds of history in the plots
  std::string model_text;      // "tiny_lm (cpu)", shown above the controls
  std::string prompt;          // when set: in the prompt box, generated at once
  GenListenerConfig listener;  // the HTTP listener's host, access and start
  std::string device = "cpu";  // where the model runs, for the Tuner's export
  // The Tuner's step cost: the synthetic model's own, or the model's kept on
  // this machine (and where); neither: the steps this window runs.
  std::optional<GenStepCost> exact_cost;
  std::optional<StepCost> kept_cost;
  std::string kept_cost_source;
  // Called as the view goes with the steps it ran (the last 20,000), to
  // refine the model's kept step cost; may be empty.
  std::function<void(std::span<const StepRecord>, uint32_t lanes)> keep_steps;
};

class GenView : public QWidget {
 public:
  GenView(GenEngine& engine, GenViewConfig config = {}, QWidget* parent = nullptr);
  ~GenView() override;

  // One tick of the timer: drain, fold, show.
  void refresh();

  GenEngine& engine() const { return engine_; }
  const GenMetrics& metrics() const { return metrics_; }
  GenControls* controls() const { return controls_; }
  GenTraffic* traffic() const { return traffic_; }
  GenListener* listener() const { return listener_; }
  GenPromptBox* prompt() const { return prompt_; }
  GenPlots* plots() const { return plots_; }
  GenStepInspector* inspector() const { return inspector_; }
  GenTunerPanel* tuner() const { return tuner_; }
  // Records runs into the run history (set_history on it).
  GenRecordBox* recorder() const { return recorder_; }
  QString figures_text() const;

 private:
  void show_figures(const GenStatus& s);

  GenEngine& engine_;
  GenViewConfig config_;
  GenMetrics metrics_;
  std::vector<GenRecord> requests_;  // drain buffers, reused
  std::vector<StepRecord> steps_;

  GenTunerPanel* tuner_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  GenControls* controls_ = nullptr;
  GenTraffic* traffic_ = nullptr;
  GenListener* listener_ = nullptr;
  GenPromptBox* prompt_ = nullptr;
  GenRecordBox* recorder_ = nullptr;
  QCheckBox* record_clients_ = nullptr;  // the listener's Record switch
  GenPlots* plots_ = nullptr;
  GenStepInspector* inspector_ = nullptr;
  QLabel* model_ = nullptr;
  QLabel* figures_ = nullptr;
  QTimer* timer_ = nullptr;
};

}  // namespace batchscope

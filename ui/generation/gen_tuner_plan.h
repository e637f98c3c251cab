// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Tuner tab's "Plan for a GPU" inputs (gen_tuner.h): a language model
// that is not here, from its Hugging Face config.json (the shipped ones in
// models/llm-configs, or another file picked with "Other…"), planned for a
// GPU from the table (core/roofline/gpu_table.h) at a tensor parallelism
// and dtype, as `batchscope tune --model-config CONFIG --gpu NAME` plans it
// (core/model/planned_lm.h). A label shows the plan (the weights a GPU, the
// KV cache it leaves, the context) or, in red, why it cannot run there.
// And the serving plan an export of a planned tune carries.
// Thread-safety: GUI thread only; serving_plan_of() is a free function.

#include <QObject>
#include <functional>
#include <string>
#include <vector>

#include "common/options.h"
#include "common/serving_plan.h"
#include "common/status.h"
#include "model/planned_lm.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QSpinBox;

namespace batchscope {

// Its widgets are rows of the tab's form, so that their labels line up
// with the rest; it owns none of them once they are added.
class GenTunerPlanInputs : public QObject {
 public:
  explicit GenTunerPlanInputs(QObject* parent = nullptr);

  // Adds the rows (model config; GPU, TP and dtype; the plan) to `form`
  // from `row` on, and shows or hides them.
  void add_rows(QFormLayout* form, int row);
  void set_visible(bool visible);

  // What is chosen: the config, the GPU, the tensor parallelism, the dtype
  // (empty: the config's).
  PlanChoice choice() const;
  // The choice planned with `reserve`'s activations (the space's largest
  // max_num_seqs and max_num_batched_tokens), shown in the label.
  Expected<PlannedLm> plan(const Options& reserve);
  // Called when the config, GPU, TP or dtype changes.
  void set_on_change(std::function<void()> f) { on_change_ = std::move(f); }

  // Adds a config.json (or the folder holding one) to the configs and picks
  // it: what "Other…" does with the file its dialog gives.
  void add_config(const QString& path);
  // Picks a shipped config by its folder's name ("llama-3.1-8b"), or a GPU
  // by its table name ("h100-sxm"); false where there is none.
  bool select_config(const QString& name);
  bool select_gpu(const QString& name);

  QComboBox* config() const { return config_; }
  QComboBox* gpu() const { return gpu_; }
  QSpinBox* tp() const { return tp_; }
  QComboBox* dtype() const { return dtype_; }
  QString planned_text() const;
  bool refused() const { return refused_; }

 private:
  void changed();
  void pick_other();

  QComboBox* config_ = nullptr;
  QComboBox* gpu_ = nullptr;
  QSpinBox* tp_ = nullptr;
  QComboBox* dtype_ = nullptr;
  QLabel* planned_ = nullptr;
  QWidget* hardware_ = nullptr;  // the GPU, TP and dtype, in a row
  QFormLayout* form_ = nullptr;
  bool refused_ = false;
  int last_config_ = 0;  // picked before "Other…", kept when its dialog is cancelled
  std::function<void()> on_change_;
};

// The shipped configs: each folder of <models>/llm-configs holding a
// config.json, by name, with its path.
std::vector<std::pair<std::string, std::string>> shipped_llm_configs();

// What an export of a planned tune carries (core/common/serving_plan.h):
// one replica (no target rate is asked), its capacity where it was found,
// the default 15% held back, the selected row's median end to end, and
// what the plan assumes.
ServingPlan serving_plan_of(const PlanChoice& choice, const PlannedLm& planned,
                            const Options& reserve, double capacity_rps, double e2e_p50_ms);

}  // namespace batchscope

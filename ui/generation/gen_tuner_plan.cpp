// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_tuner_plan.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <algorithm>
#include <exception>
#include <filesystem>

#include "api/options_json.h"
#include "model/model_paths.h"
#include "model/planned_tune.h"
#include "roofline/gpu_table.h"
#include "runs/machine_facts.h"
#include "tuning/cost_drift.h"
#include "tuning/gen_tune.h"
#include "ui/common/qt_text.h"
#include "ui/generation/gen_tuner.h"

namespace batchscope {

namespace {

constexpr const char* kOther = "Other…";
constexpr const char* kConfigsDtype = "config's";

}  // namespace

std::vector<std::pair<std::string, std::string>> shipped_llm_configs() {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> out;
  const std::string models = models_dir();
  if (models.empty()) return out;
  std::error_code ec;
  const fs::path root = fs::path(models) / "llm-configs";
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path config = it->path() / "config.json";
    if (fs::is_regular_file(config, ec)) {
      out.emplace_back(it->path().filename().string(), config.lexically_normal().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

GenTunerPlanInputs::GenTunerPlanInputs(QObject* parent) : QObject(parent) {
  config_ = new QComboBox;
  for (const auto& [name, path] : shipped_llm_configs()) {
    config_->addItem(text_of(name), text_of(path));
    config_->setItemData(config_->count() - 1, text_of(path), Qt::ToolTipRole);
  }
  config_->addItem(kOther);
  config_->setToolTip(
      "The model's Hugging Face config.json: its shape is all that is read, no weights");
  gpu_ = new QComboBox;
  for (const GpuSpec& g : gpu_table()) {
    gpu_->addItem(text_of(g.name));
    gpu_->setItemData(gpu_->count() - 1, text_of(g.describe()), Qt::ToolTipRole);
  }
  gpu_->setToolTip("The GPU planned for, by its published figures (batchscope gpus)");
  tp_ = new QSpinBox;
  tp_->setRange(1, 8);
  tp_->setToolTip("Tensor parallelism: the GPUs one replica spans");
  dtype_ = new QComboBox;
  dtype_->addItems({kConfigsDtype, "bf16", "fp16", "fp8"});
  dtype_->setToolTip("The weights' dtype: the config's torch_dtype, or another");
  planned_ = new QLabel;
  planned_->setWordWrap(true);
  planned_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Defaults: a model and a GPU most plans start from.
  if (!select_config("llama-3.1-8b") && config_->count() > 1) config_->setCurrentIndex(0);
  select_gpu("h100-sxm");
  last_config_ = config_->currentIndex();

  connect(config_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0 && config_->itemText(i) == kOther && !config_->itemData(i).isValid()) {
      pick_other();
      return;
    }
    last_config_ = i;
    changed();
  });
  connect(gpu_, &QComboBox::currentIndexChanged, this, [this] { changed(); });
  connect(tp_, &QSpinBox::valueChanged, this, [this] { changed(); });
  connect(dtype_, &QComboBox::currentIndexChanged, this, [this] { changed(); });

  hardware_ = new QWidget;
  auto* hardware = new QHBoxLayout(hardware_);
  hardware->setContentsMargins(0, 0, 0, 0);
  hardware->addWidget(gpu_, 1);
  hardware->addSpacing(8);
  hardware->addWidget(new QLabel("TP"));
  hardware->addWidget(tp_);
  hardware->addSpacing(8);
  hardware->addWidget(new QLabel("dtype"));
  hardware->addWidget(dtype_);
}

void GenTunerPlanInputs::add_rows(QFormLayout* form, int row) {
  form_ = form;
  form->insertRow(row, "Model config", config_);
  form->insertRow(row + 1, "GPU", hardware_);
  form->insertRow(row + 2, "Planned", planned_);
}

void GenTunerPlanInputs::set_visible(bool visible) {
  if (!form_) return;
  for (QWidget* w : {static_cast<QWidget*>(config_), hardware_, static_cast<QWidget*>(planned_)}) {
    form_->setRowVisible(w, visible);
  }
}

PlanChoice GenTunerPlanInputs::choice() const {
  PlanChoice c;
  c.model_config = config_->currentData().toString().toStdString();
  c.gpu = gpu_->currentText().toStdString();
  c.tp = static_cast<uint32_t>(tp_->value());
  if (dtype_->currentText() != kConfigsDtype) c.dtype = dtype_->currentText().toStdString();
  return c;
}

Expected<PlannedLm> GenTunerPlanInputs::plan(const Options& reserve) {
  const PlanChoice c = choice();
  Expected<PlannedLm> planned =
      c.model_config.empty()
          ? Expected<PlannedLm>(invalid_argument("no model config: pick one, or Other… for a file"))
          : plan_lm(c, reserve);
  refused_ = !planned;
  planned_->setStyleSheet(refused_ ? "color:#b00000" : "");
  planned_->setText(text_of(planned ? planned->describe() : planned.error().message));
  return planned;
}

QString GenTunerPlanInputs::planned_text() const { return planned_->text(); }

void GenTunerPlanInputs::add_config(const QString& path) {
  QFileInfo info(path);
  const QString file =
      info.isDir() ? info.absoluteFilePath() + "/config.json" : info.absoluteFilePath();
  const QString name = QFileInfo(file).dir().dirName();
  int at = config_->findData(file);
  if (at < 0) {
    at = std::max(0, config_->count() - 1);  // before "Other…"
    config_->insertItem(at, name + " (" + file + ")", file);
    config_->setItemData(at, file, Qt::ToolTipRole);
  }
  config_->setCurrentIndex(at);  // changed() follows
  last_config_ = at;
}

bool GenTunerPlanInputs::select_config(const QString& name) {
  const int at = config_->findText(name);
  if (at < 0) return false;
  config_->setCurrentIndex(at);
  return true;
}

bool GenTunerPlanInputs::select_gpu(const QString& name) {
  const int at = gpu_->findText(name);
  if (at < 0) return false;
  gpu_->setCurrentIndex(at);
  return true;
}

void GenTunerPlanInputs::changed() {
  if (!on_change_) return;
  try {
    on_change_();
  } catch (const std::exception& e) {
    refused_ = true;
    planned_->setStyleSheet("color:#b00000");
    planned_->setText(QString("Not planned: ") + e.what());
  }
}

void GenTunerPlanInputs::pick_other() {
  const QString path =
      QFileDialog::getOpenFileName(config_->window(), "A model's config.json", QString(),
                                   "Hugging Face config (*.json);;All files (*)");
  if (path.isEmpty()) {  // cancelled: the config picked before stays
    const QSignalBlocker quiet(config_);
    config_->setCurrentIndex(last_config_);
    return;
  }
  add_config(path);
  changed();
}

ServingPlan serving_plan_of(const PlanChoice& choice, const PlannedLm& planned,
                            const Options& reserve, double capacity_rps, double e2e_p50_ms) {
  ServingPlan p = plan_for_export(choice, {}, planned, reserve);
  p.capacity_rps = capacity_rps;
  p.headroom = kDefaultBand;
  p.e2e_p50_ms = e2e_p50_ms;
  return p;
}

// The Tuner tab's plan mode (gen_tuner.h).

bool GenTunerPanel::planning() const { return mode_->currentIndex() == 1; }

Options GenTunerPanel::plan_reserve() const {
  // A plan starts from the defaults, as tune --model-config does.
  auto space = parse_gen_space(space_->text().toStdString());
  return space ? planned_reserve(*space, Options{}) : Options{};
}

void GenTunerPanel::replan() {
  if (!planning()) return;
  try {
    auto planned = plan_->plan(plan_reserve());
    run_->setEnabled(!running() && planned.ok());
    run_->setToolTip(planned ? QString() : "The model cannot be planned there: see Planned");
  } catch (const std::exception& e) {
    run_->setEnabled(false);
    error_->setText(QString("Not planned: ") + e.what());
  }
}

void GenTunerPanel::mode_changed() {
  const bool plan = planning();
  plan_->set_visible(plan);
  // Each mode's default space, unless another was typed.
  const QString here = text_of(default_gen_space_text());
  const QString there = text_of(default_planned_space_text());
  if (plan && space_->text() == here) space_->setText(there);
  if (!plan && space_->text() == there) space_->setText(here);
  clear_outcome();
  apply_->setEnabled(!plan);
  confirm_button_->setEnabled(!plan);
  const QString not_here =
      "The model is planned for a GPU that is not here: nothing runs it to apply to. "
      "Export… the configuration for the server that will.";
  apply_->setToolTip(plan ? not_here : "Put the selected configuration in force now");
  confirm_button_->setToolTip(
      plan ? not_here
           : "Apply the selected configuration and measure this window's traffic for the "
             "seconds above; the measured figures show beside the predicted ones");
  export_->setToolTip(plan ? "Export the selected configuration and the serving plan for vLLM, "
                             "TGI, TensorRT-LLM or KServe"
                           : "Export the selected configuration for vLLM, TGI or TensorRT-LLM");
  status_->setText(plan ? "Plans the model for the GPU on the roofline's step cost and tunes the "
                          "traffic panel's traffic there on the step predictor."
                        : "Tunes the traffic panel's traffic on the step predictor.");
  if (plan) {
    replan();
  } else {
    run_->setEnabled(!running());
    run_->setToolTip(QString());
  }
}

// The selected row for the export dialog: this model's, or the plan's with
// its serving plan.
Expected<ExportInput> GenTunerPanel::export_input() const {
  const auto row = selected_row();
  if (!row || !outcome_) return invalid_argument("select a configuration in the table first");
  const GenEvaluated& e = rows_[static_cast<size_t>(*row)];
  ExportInput in;
  in.options = e.options;
  in.device = setup_.device;
  in.lm = GenModelInfo{setup_.info.name, setup_.info.context_length, setup_.info.block_size,
                       setup_.info.num_blocks};
  in.tuning.traffic = outcome_->traffic;
  in.tuning.predicted = true;
  in.tuning.quantile = outcome_->result.slo.quantile;
  in.tuning.ttft_ms = e.ttft_ms;
  in.tuning.itl_ms = e.itl_ms;
  in.tuning.tokens_per_s = e.tokens_per_s;
  in.tuning.throughput_rps = e.requests_per_s;
  in.tuning.p50_ms = e.e2e_p50_ms;
  in.tuning.p99_ms = e.e2e_ms;
  if (const auto& p = outcome_->planned) {  // the model and GPU planned, not this machine's
    in.device = "cuda";
    in.lm =
        GenModelInfo{p->info.name, p->info.context_length, p->info.block_size, p->info.num_blocks};
    in.plan = serving_plan_of(outcome_->plan_choice, *p, outcome_->plan_reserve,
                              outcome_->capacity_rps, e.e2e_p50_ms);
  } else {
    in.tuning.hardware = hardware_text(setup_.device, machine_json());
  }
  return in;
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_main_window.h"

#include <QStatusBar>

#include "common/build_info.h"
#include "model/history_keeping.h"
#include "model/kept_steps.h"
#include "ui/common/about_box.h"
#include "ui/generation/gen_record.h"
#include "ui/generation/gen_traffic.h"

namespace batchscope {

Expected<std::unique_ptr<GenMainWindow>> GenMainWindow::open(const LocalModel& model,
                                                             const Options& options,
                                                             GenViewConfig config, bool learn,
                                                             const Say& say, QWidget* parent) {
  auto lm = model.lm(static_cast<int>(options.num_lanes));
  if (!lm) return lm.error();
  config.model_text = lm->runner->info().name + " (" + lm->device + ")";
  config.listener.device = lm->device;
  config.device = lm->device;
  // The Tuner's step cost, and the window's steps refining the kept one.
  if (const auto& synthetic = model.choice().synthetic_lm) {
    config.exact_cost = GenStepCost::synthetic(synthetic->step_us, synthetic->token_us);
  } else if (auto kept = kept_step_cost(model)) {
    config.kept_cost = kept->first;
    config.kept_cost_source = kept->second;
  }
  if (learn) {
    config.keep_steps = [model, say](std::span<const StepRecord> steps, uint32_t lanes) {
      refine_kept_steps(model, steps, lanes, say);
    };
  }
  auto engine =
      std::make_unique<GenEngine>(std::move(lm->runner), options, nullptr, lm->more_lanes);
  if (Status s = engine->start(); !s) return s.error();
  return std::make_unique<GenMainWindow>(std::move(engine), std::move(config), parent);
}

GenMainWindow::GenMainWindow(std::unique_ptr<GenEngine> engine, GenViewConfig config,
                             QWidget* parent)
    : QMainWindow(parent), engine_(std::move(engine)) {
  const QString name =
      QString::fromStdString(config.model_text.empty() ? engine_->info().name : config.model_text);
  setWindowTitle("Batchscope - " + name + " (generation)");
  view_ = new GenView(*engine_, std::move(config));
  setCentralWidget(view_);
  add_help_menu(this);
  statusBar()->showMessage(
      "Generative model: the batch is formed step by step; scheduling and budgets apply live");
}

void GenMainWindow::keep_runs_in(HistoryWriter* writer, const std::string& model_file,
                                 const std::string& device) {
  GenView* view = view_;
  view->recorder()->set_history(writer, [view, model_file, device] {
    GenRecordBox::RunInfo info;
    info.model = view->engine().info().name;
    info.options = view->engine().status().options;
    info.traffic = view->traffic()->running() ? view->traffic()->describe() : "";
    info.context = run_context_json(model_file, device);
    return info;
  });
}

GenMainWindow::~GenMainWindow() {
  // The listener stops first; what its services admitted may still be in the
  // engine and answers through them, so they stay until the engine has stopped.
  std::vector<std::unique_ptr<GenerationService>> services = view_->listener()->take_services();
  delete view_;  // its traffic and prompt use the engine: they go next
  view_ = nullptr;
  engine_->stop(std::chrono::milliseconds(500));
  services.clear();
}

Status GenMainWindow::open_beside(const std::string& path, const std::string& device,
                                  const ServiceAccess& access, const Say& say, QWidget* parent) {
  ModelChoice choice;
  choice.path = path;
  choice.device = device;
  auto model = LocalModel::open(choice);
  if (!model) return Status(model.error());
  GenViewConfig cfg;
  cfg.start_traffic = false;
  cfg.listener.access = access;
  cfg.listener.version = build_version();
  auto opened = open(*model, Options{}, cfg, true, say, parent);
  if (!opened) return Status(opened.error());
  GenMainWindow* window = opened->release();
  window->setWindowFlag(Qt::Window);
  window->setAttribute(Qt::WA_DeleteOnClose);
  window->resize(1500, 950);
  window->show();
  return Status::Ok();
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_main_window.h"

#include <QStatusBar>

#include "ui/common/about_box.h"

namespace batchscope {

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

GenMainWindow::~GenMainWindow() {
  // The listener stops first; what its services admitted may still be in the
  // engine and answers through them, so they stay until the engine has stopped.
  std::vector<std::unique_ptr<GenerationService>> services = view_->listener()->take_services();
  delete view_;  // its traffic and prompt use the engine: they go next
  view_ = nullptr;
  engine_->stop(std::chrono::milliseconds(500));
  services.clear();
}

}  // namespace batchscope

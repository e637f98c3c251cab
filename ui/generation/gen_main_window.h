// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The window for a generative model: the generation view over an engine the
// window owns (`batchscope gui --model tiny_lm.pt`, `--synthetic-lm S,T`).
// Closing it stops the view's HTTP listener and traffic first, then the
// engine (admitted requests get a short grace to finish); the listener's
// services outlive the engine's last completion.
// Thread-safety: GUI thread only.

#include <QMainWindow>
#include <memory>

#include "generation/gen_engine.h"
#include "ui/generation/gen_view.h"

namespace batchscope {

class GenMainWindow : public QMainWindow {
 public:
  // `engine` must be started.
  GenMainWindow(std::unique_ptr<GenEngine> engine, GenViewConfig config, QWidget* parent = nullptr);
  ~GenMainWindow() override;

  GenView* view() const { return view_; }
  GenEngine& engine() const { return *engine_; }

 private:
  std::unique_ptr<GenEngine> engine_;
  GenView* view_ = nullptr;
};

}  // namespace batchscope

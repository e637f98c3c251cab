// SPDX-License-Identifier: GPL-3.0-or-later
// The window for a generative model: the generation view over an engine the
// window owns (`batchscope gui --model tiny_lm.pt`, `--synthetic-lm S,T`).
// Closing it stops the view's HTTP listener and traffic first, then the
// engine (admitted requests get a short grace to finish); the listener's
// services outlive the engine's last completion.
// Thread-safety: GUI thread only.

#pragma once

#include <QMainWindow>
#include <memory>

#include "generation/gen_engine.h"
#include "model/local_model.h"
#include "model/say.h"
#include "ui/generation/gen_view.h"

namespace batchscope {

class HistoryWriter;

class GenMainWindow : public QMainWindow {
 public:
  // `engine` must be started.
  GenMainWindow(std::unique_ptr<GenEngine> engine, GenViewConfig config, QWidget* parent = nullptr);
  ~GenMainWindow() override;

  // A window over `model` (a language model): its engine made and started
  // with `options`, and `config` completed from the model: its name and
  // device, and the Tuner's step cost (the synthetic model's own, or the one
  // kept on this machine). With `learn`, the steps the window runs refine
  // the kept step cost, saying so through `say`.
  static Expected<std::unique_ptr<GenMainWindow>> open(const LocalModel& model,
                                                       const Options& options, GenViewConfig config,
                                                       bool learn, const Say& say,
                                                       QWidget* parent = nullptr);

  // The model at `path` on `device` in a window of its own beside `parent`
  // (the workbench's File > Open of a generative model), with no traffic
  // yet, its listener (when started) under `access`; deleted on close.
  static Status open_beside(const std::string& path, const std::string& device,
                            const ServiceAccess& access, const Say& say, QWidget* parent);

  // Records the view's runs into `writer`, each with the model, options,
  // traffic and context (`model_file`'s, on `device`) of when it starts.
  void keep_runs_in(HistoryWriter* writer, const std::string& model_file,
                    const std::string& device);

  GenView* view() const { return view_; }
  GenEngine& engine() const { return *engine_; }

 private:
  std::unique_ptr<GenEngine> engine_;
  GenView* view_ = nullptr;
};

}  // namespace batchscope

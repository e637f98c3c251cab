// SPDX-License-Identifier: GPL-3.0-or-later
// The workbench window's configuration files (File > Load/Save configuration),
// the settings it keeps between sessions (QSettings), and where its runs are
// kept.

#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <algorithm>
#include <fstream>

#include "api/options_json.h"
#include "model/history_keeping.h"
#include "ui/common/app_resources.h"
#include "ui/common/config_io.h"
#include "ui/runs/runs_panel.h"
#include "ui/tuner/tuner_panel.h"
#include "ui/workbench/traffic_panel.h"
#include "ui/workbench/workbench_window.h"

namespace batchscope {

Status WorkbenchWindow::load_config(const QString& path) { return load_options(path, path, false); }

Status WorkbenchWindow::load_preset(const Preset& preset) {
  return load_options(preset.path, "the preset '" + preset.title + "'", true);
}

// A file's options put in force. A preset is written for any model, so a
// batch above this model's limit is cut to it; a file's is refused.
Status WorkbenchWindow::load_options(const QString& path, const QString& what, bool fit_model) {
  if (!engine_) return no_engine();
  QFile file(path);  // a resource (":/presets/...") or a file
  if (!file.open(QIODevice::ReadOnly)) return invalid_argument("cannot read " + path.toStdString());
  constexpr qint64 kMaxBytes = 1 << 20;  // a configuration is a few hundred bytes
  if (file.size() > kMaxBytes)
    return invalid_argument(path.toStdString() + " is " + std::to_string(file.size()) +
                            " bytes; a configuration is at most 1 MiB");
  const QByteArray text = file.read(kMaxBytes);
  auto imported = import_config(text.toStdString(), engine_->status().options);
  if (!imported) return invalid_argument(path.toStdString() + ": " + imported.error().message);
  Options o = imported->options;
  QString notes;
  for (const std::string& n : imported->notes) notes += QString::fromStdString(n) + " ";
  const uint32_t limit = model_.metadata.max_batch_size;
  if (o.max_batch_size > limit && fit_model) {
    notes += QString("max_batch_size %1 is cut to the model's limit of %2.")
                 .arg(o.max_batch_size)
                 .arg(limit);
    o.max_batch_size = limit;
  } else if (o.max_batch_size > limit) {
    return invalid_argument("max_batch_size " + std::to_string(o.max_batch_size) +
                            " is above the model's limit of " + std::to_string(limit));
  }
  if (Status s = apply(o); !s) return s;
  statusBar()->showMessage(QString("Loaded %1. %2").arg(what, notes).trimmed(), 15000);
  return {};
}

Status WorkbenchWindow::save_config(const QString& path) const {
  const Options o = engine_ ? engine_->status().options : config_.options;
  std::ofstream out(path.toStdString());
  out << options_to_json(o) << "\n";
  if (!out) return invalid_argument("cannot write " + path.toStdString());
  return {};
}

void WorkbenchWindow::restore_settings() {
  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  restoreState(s.value("window/state").toByteArray());
  span_->setCurrentIndex(std::clamp(s.value("view/span", 1).toInt(), 0, 2));
  traffic_->set_pattern(s.value("traffic/pattern", "poisson").toString());
  // A rate the user set in an earlier session, unless --rate gives one.
  if (!config_.traffic_rate_given && s.contains("traffic/rate")) {
    traffic_->set_rate(s.value("traffic/rate").toDouble());
    config_.traffic_rate_given = true;
  }
  traffic_->set_concurrency(s.value("traffic/concurrency", 16).toInt());
  traffic_->set_lengths(s.value("traffic/lengths").toString());
  traffic_->set_target(
      static_cast<TrafficPanel::Target>(std::clamp(s.value("traffic/target", 0).toInt(), 0, 2)),
      s.value("traffic/url").toString());
  host_->setText(s.value("server/host", "127.0.0.1").toString());
  port_->setValue(s.value("server/port", 8000).toInt());
  tuner_->restore_settings(s);
}

void WorkbenchWindow::save_settings() const {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("view/span", span_->currentIndex());
  s.setValue("traffic/pattern", traffic_->pattern());
  // Only a rate the user set: one the window chose for the model is chosen again.
  if (traffic_->rate_edited()) s.setValue("traffic/rate", traffic_->rate());
  s.setValue("traffic/concurrency", traffic_->concurrency());
  s.setValue("traffic/lengths", traffic_->lengths());
  s.setValue("traffic/target", traffic_->target());
  s.setValue("traffic/url", traffic_->url());
  s.setValue("server/host", host_->text());
  s.setValue("server/port", port_->value());
  tuner_->save_settings(s);
  if (engine_) {
    s.setValue("model/path", QString::fromStdString(model_.path));
    s.setValue("model/device", QString::fromStdString(model_.device));
    s.setValue("options/json", QString::fromStdString(options_to_json(engine_->status().options)));
  }
}

void WorkbenchWindow::keep_runs_in(HistoryWriter* writer, const std::string& problem,
                                   const QString& png_program) {
  if (!writer) {
    if (!problem.empty()) runs_->show_history_problem(QString::fromStdString(problem));
    return;
  }
  runs_->set_context_provider([this] {
    const LoadedModel& m = model();
    return run_context_json(m.path.rfind("synthetic", 0) == 0 ? "" : m.path, m.device, m.python);
  });
  runs_->set_history(writer);
  runs_->set_png_program(png_program);
}

void restore_saved_choices(WorkbenchConfig& cfg, bool model_given, bool options_given) {
  QSettings saved;
  if (!model_given && saved.contains("model/path")) {
    cfg.model.path = saved.value("model/path").toString().toStdString();
    cfg.model.device = saved.value("model/device", "cpu").toString().toStdString();
  }
  if (!options_given && saved.contains("options/json")) {
    auto o = options_from_json(saved.value("options/json").toString().toStdString(), cfg.options);
    if (o) cfg.options = *o;
  }
}

}  // namespace batchscope

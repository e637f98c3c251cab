// SPDX-License-Identifier: GPL-3.0-or-later
// The Tuner panel's files: the cost file it may tune against, the JSON it
// writes, and the inputs it keeps between sessions (see tuner_panel.h).
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>
#include <QToolButton>
#include <fstream>

#include "common/text_out.h"
#include "tuning/tune_space.h"
#include "ui/common/qt_text.h"
#include "ui/tuner/tuner_panel.h"

namespace batchscope {

namespace {}  // namespace

Expected<CostModel> TunerPanel::run_cost(uint32_t max_batch) const {
  if (file_cost_) return *file_cost_;
  if (!model_) return invalid_argument("no model is loaded");
  if (model_->kept) return *model_->kept;
  return tuning_cost(*model_, max_batch);
}

void TunerPanel::update_cost_note() {
  const std::string name = model_ ? model_->metadata.name : std::string();
  QString note;
  if (file_cost_) {
    note = QString("Cost: %1, from %2.").arg(text_of(file_cost_->describe()), cost_path_);
  } else if (name.empty()) {
    note = "No model is loaded yet.";
  } else {
    auto cost = run_cost(std::min<uint32_t>(model_->metadata.max_batch_size, 4096));
    const QString kept_lanes = [&] {
      if (!model_->kept) return QString();
      QStringList n;
      if (calibrated_for(*model_->kept, 1)) n << "1";
      for (const LaneCostPoints& l : model_->kept->lanes()) {
        if (calibrated_for(*model_->kept, l.lanes)) n << QString::number(l.lanes);
      }
      return n.join(", ");
    }();
    const QString where =
        model_->kept ? QString(
                           " (kept on this machine: t(b) as %1 lane(s) ran it under load; "
                           "a lane count the search needs and the kept cost lacks is "
                           "calibrated first)")
                           .arg(kept_lanes)
        : model_->cost_key
            ? QString(
                  " (the profile measured when it loaded; the first run makes the kept cost "
                  "from it and a few seconds of live traffic per lane count)")
        : model_->synthetic ? QString(" (the synthetic formula, exact)")
                            : QString(" (measured when it loaded)");
    note = cost ? QString("Cost of %1: %2%3.").arg(text_of(name), text_of(cost->describe()), where)
                : QString("Cannot tune %1: %2.").arg(text_of(name), text_of(cost.error().message));
  }
  cost_->setText(note);
  update_controls();
}

Status TunerPanel::set_cost_file(const QString& path) {
  auto cost = CostModel::from_file(path.toStdString());
  if (!cost) {
    show_error("Cost file not used: " + text_of(cost.error().message));
    return cost.error();
  }
  show_error({});
  cost_path_ = path;
  file_cost_ = std::move(*cost);
  update_cost_note();
  return Status::Ok();
}

void TunerPanel::clear_cost_file() {
  cost_path_.clear();
  file_cost_.reset();
  update_cost_note();
}

QString TunerPanel::cost_file() const { return cost_path_; }
QString TunerPanel::cost_text() const { return cost_->text(); }

Status TunerPanel::save_json(const QString& path) const {
  if (!result_) return invalid_argument("nothing has been tuned yet");
  if (running()) return invalid_argument("a run is under way; save when it ends");
  TuneResult r = *result_;
  TuneJsonExtra extra;
  // As tune writes it: the best confirmed live, where one was, is the best.
  if (!confirmed_.empty()) {
    auto best = headroom_ ? best_holding(confirmed_, headroom_->needed, r.slo_p99_ms, r.objective)
                          : best_measured(confirmed_, r.slo_p99_ms, r.objective);
    if (best) {
      r.best = confirmed_[*best].predicted;
      extra.measured = confirmed_[*best].measured;
    }
  }
  extra.members.emplace_back("confirmed", confirmed_json(confirmed_));
  std::string cost;
  append_json_string(cost, run_cost_text_);
  extra.members.emplace_back("cost_model", cost);
  std::string traffic;
  append_json_string(traffic, traffic_text_);
  extra.members.emplace_back("traffic", traffic);
  if (headroom_) extra.members.emplace_back("headroom", headroom_json(*headroom_));
  std::ofstream out(path.toStdString(), std::ios::binary | std::ios::trunc);
  out << tune_json(r, extra) << "\n";
  out.close();
  if (!out) return invalid_argument("cannot write " + path.toStdString());
  return Status::Ok();
}

void TunerPanel::save_settings(QSettings& s) const {
  s.setValue("tuner/slo_ms", slo_->value());
  s.setValue("tuner/objective", objective_->currentText());
  s.setValue("tuner/seconds", seconds_->value());
  s.setValue("tuner/confirm", confirm_->value());
  s.setValue("tuner/budget_s", budget_->value());
  s.setValue("tuner/calibrate", calibrate_->isChecked());
  const bool is_default = space_->text() == text_of(default_space_text());
  s.setValue("tuner/space", is_default ? QString() : space_->text());
  s.setValue("tuner/cost_file", cost_path_);
}

void TunerPanel::restore_settings(const QSettings& s) {
  // Spin boxes clamp what is out of range; an unknown objective keeps the default.
  slo_->setValue(s.value("tuner/slo_ms", slo_->value()).toDouble());
  if (int i = objective_->findText(s.value("tuner/objective").toString()); i >= 0)
    objective_->setCurrentIndex(i);
  seconds_->setValue(s.value("tuner/seconds", seconds_->value()).toDouble());
  confirm_->setValue(s.value("tuner/confirm", confirm_->value()).toInt());
  budget_->setValue(s.value("tuner/budget_s", budget_->value()).toDouble());
  calibrate_->setChecked(s.value("tuner/calibrate", calibrate_->isChecked()).toBool());
  if (const QString space = s.value("tuner/space").toString(); !space.isEmpty()) {
    set_space_text(space);
    default_space_ = false;
  }
  // A cost file that went away or went bad is named in the error line.
  if (const QString file = s.value("tuner/cost_file").toString(); !file.isEmpty())
    (void)set_cost_file(file);
  space_edited();
  refresh();
}

}  // namespace batchscope

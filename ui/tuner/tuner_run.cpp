// SPDX-License-Identifier: GPL-3.0-or-later
// The Tuner panel's runs: the search and the live confirmation on a worker
// thread, their progress and results marshalled back as queued calls, and
// cancelling (see tuner_panel.h for the contract).
#include "ui/tuner/tuner_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QProgressBar>
#include <QSpinBox>
#include <QStringList>
#include <algorithm>
#include <cmath>

#include "tuning/adaptive_planner.h"
#include "tuning/cost_calibration.h"
#include "ui/common/gui_thread.h"
#include "ui/common/qt_text.h"
#include "ui/tuner/tune_plot.h"

namespace batchscope {

namespace {

// The stability rule of `batchscope tune`: perf_analyzer's.
const StabilityRule kRule{0.10, 3, 6};

}  // namespace

void TunerPanel::cancel() {
  if (!running()) return;
  stop_ = true;
  const bool live = phase_ == Phase::kConfirming || phase_ == Phase::kCalibrating;
  status_->setText(live ? "Cancelling: stopping the live run…" : "Cancelling…");
}

void TunerPanel::cancel_and_wait() {
  // The thread checks the flag before each prediction and each send; what it
  // posts after this is dropped with this object's pending events, or by
  // run_id_ if the panel lives on. The traffic a confirmation paused stays
  // off: this is for a window that is going away.
  stop_ = true;
  join_worker();
  ++run_id_;
  paused_traffic_ = false;
  if (running()) finish("Cancelled.");
}

void TunerPanel::join_worker() {
  if (worker_.joinable()) worker_.join();
}

void TunerPanel::start_worker(std::function<void()> work) {
  join_worker();  // the last phase posted its result as its last act
  worker_ = std::thread(std::move(work));
}

Status TunerPanel::run() {
  if (running()) return invalid_argument("a search is already running");
  show_error({});
  applied_->clear();
  auto refuse = [this](const std::string& message) -> Status {
    show_error(text_of(message));
    return invalid_argument(message);
  };
  if (!model_ || model_->metadata.name.empty()) return refuse("No model is loaded yet.");
  auto space = check_space();
  if (!space) {
    space_edited();
    return refuse(space.error().message);
  }
  const Options base = hooks_.options ? hooks_.options() : Options{};
  const uint32_t max_batch =
      std::min(largest_batch(*space, base), std::max(1u, model_->metadata.max_batch_size));
  auto cost = run_cost(max_batch);
  if (!cost) return refuse("Cannot tune: " + cost.error().message);
  if (!model_->factory) return refuse("Cannot tune: the model has no runner to confirm with");

  const ArrivalSpec traffic = this->traffic();
  if (Status s = traffic.validate(); !s) return refuse("Traffic: " + s.message());
  traffic_spec_ = traffic;
  traffic_text_ = traffic.describe();
  run_factory_ = model_->factory;  // a model loaded meanwhile is tuned next time
  run_metadata_ = model_->metadata;
  run_requests_ = tune_requests(run_metadata_, std::nullopt, traffic.seed);

  TuneSettings settings;
  settings.slo_p99_ms = slo_->value();
  settings.objective =
      objective_->currentIndex() == 1 ? TuneObjective::kLatency : TuneObjective::kThroughput;
  candidates_ = confirm_->value();
  // As tune's --budget-s: half for the search when it confirms live.
  const double budget_s = budget_->value();
  settings.max_seconds = candidates_ > 0 ? budget_s / 2 : budget_s;
  settings.clock = search_clock_.get();
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(budget_s));
  budget_ran_out_ = false;
  run_cost_model_ = *cost;
  run_cost_text_ =
      cost->describe() + (cost_path_.isEmpty() ? "" : " (" + cost_path_.toStdString() + ")");
  result_.reset();
  headroom_.reset();
  confirmed_.clear();
  winner_.reset();
  table_model_->clear();
  plot_->clear("Searching…");
  stop_ = false;
  const bool calibrating = calibrate_->isChecked();
  const std::vector<uint32_t> lanes = lane_counts(*space, base);
  // The kept cost, made or extended first where it lacks a lane count.
  std::vector<uint32_t> missing;
  std::optional<CostKey> key;
  if (!file_cost_ && model_->cost_key && !cost_cache_dir().empty()) {
    key = model_->cost_key;
    for (uint32_t n : lanes) {
      if (!model_->kept || !calibrated_for(*model_->kept, n)) missing.push_back(n);
    }
  }
  const uint32_t kept_batch =
      std::max(max_batch, std::min<uint32_t>(model_->metadata.max_batch_size, 256));
  phase_ = calibrating || !missing.empty() ? Phase::kCalibrating : Phase::kSearching;
  const uint64_t id = ++run_id_;
  if (!missing.empty()) {
    paused_traffic_ = hooks_.pause_traffic && hooks_.pause_traffic();
    bar_->setRange(0, static_cast<int>(missing.size()));
    status_->setText(QString("Making the kept cost of %1 on this machine: a live calibration "
                             "per lane count…%2")
                         .arg(text_of(model_->metadata.name))
                         .arg(paused_traffic_ ? " The window's traffic is paused meanwhile." : ""));
  } else if (calibrating) {
    // Its live runs would share the cores with the window's traffic.
    paused_traffic_ = hooks_.pause_traffic && hooks_.pause_traffic();
    bar_->setRange(0, static_cast<int>(lanes.size()));
    status_->setText(QString("Calibrating t(b) under %1: a live run per lane count…%2")
                         .arg(text_of(traffic_text_))
                         .arg(paused_traffic_ ? " The window's traffic is paused meanwhile." : ""));
  } else {
    bar_->setRange(0, static_cast<int>(std::min<uint64_t>(space->size(), 1u << 30)));
    status_->setText(QString("Predicting %1 configurations against %2…")
                         .arg(space->size())
                         .arg(text_of(traffic_text_)));
  }
  bar_->setValue(0);
  update_controls();

  ConfirmSpec live;
  live.factory = run_factory_;
  live.metadata = run_metadata_;
  live.traffic = traffic;
  live.stop = &stop_;  // calibrating: at the reference length, which the grid prices from
  start_worker([this, id, space = *space, base, settings, traffic, cost = *cost,
                clock = search_clock_, calibrating, lanes, live, max_batch, missing, key,
                kept_batch, seconds = calibration_s_, lengths = run_requests_.lengths]() mutable {
    std::optional<CostModel> calibrated;
    QString note;
    if (!missing.empty()) {
      const std::string when = utc_now_ms();
      QStringList made;
      for (size_t k = 0; k < missing.size() && !stop_; ++k) {
        post_progress(id, static_cast<int>(k), static_cast<int>(missing.size()),
                      QString("Making the kept cost: %1 lane(s) under stepped load (%2 s)…")
                          .arg(missing[k])
                          .arg(seconds));
        auto c = calibrate_lanes(live, base, cost, missing[k], kept_batch, seconds, when);
        if (!c) {
          note = QString(" Making the kept cost failed (%1); predicted with the profile.")
                     .arg(text_of(c.error().message));
          break;
        }
        made << QString("%1 lane(s) %2 req/s").arg(missing[k]).arg(std::lround(c->capacity));
      }
      if (!stop_ && made.size() == static_cast<int>(missing.size())) {
        const Status w = write_cached_cost(cost_cache_path(*key, cost_cache_dir()), *key, cost);
        note = " Kept cost made (capacity " + made.join(", ") + ")" +
               (w ? QString(".") : QString("; not kept: %1.").arg(text_of(w.message())));
        QMetaObject::invokeMethod(
            this, [this, id, kept = cost]() mutable { kept_made(id, std::move(kept)); },
            Qt::QueuedConnection);
        calibrated = cost;
      }
    }
    if (calibrating && !stop_) {
      CostModel m = cost;
      QStringList moved;
      bool failed = false;
      for (size_t k = 0; k < lanes.size() && !stop_; ++k) {
        post_progress(id, static_cast<int>(k), static_cast<int>(lanes.size()),
                      QString("Calibrating t(b) under the traffic: %1 lane(s), run %2 of %3…")
                          .arg(lanes[k])
                          .arg(k + 1)
                          .arg(lanes.size()));
        auto c = calibrate_live(live, calibration_options(base, max_batch, lanes[k]), m);
        if (!c) {
          note = QString(" Calibration failed (%1); predicted with the cost as it was.")
                     .arg(text_of(c.error().message));
          failed = true;
          break;
        }
        if (!c->moved.empty()) {
          moved << QString("%1 lane(s) %2%3%")
                       .arg(lanes[k])
                       .arg(c->moved[c->moved.size() / 2] >= 0 ? "+" : "")
                       .arg(std::lround(100 * c->moved[c->moved.size() / 2]));
        }
      }
      if (!failed && !stop_) {
        calibrated = m;
        cost = std::move(m);
        note = moved.isEmpty()
                   ? QString(" Calibrated: no batch size ran often enough to refine t(b).")
                   : " Calibrated under the traffic: t(b) moved " + moved.join(", ") +
                         " (median of the sizes seen).";
      }
    }
    uint64_t posted = 0;
    settings.cancel = [this] { return stop_.load(); };
    settings.progress = [this, id, &posted](uint64_t done, uint64_t total) {
      // A queued call per percent at most: a search evaluates thousands.
      if (done != total && done - posted < std::max<uint64_t>(1, total / 100)) return;
      posted = done;
      const int scale = total > (1u << 30) ? static_cast<int>(total >> 30) + 1 : 1;
      post_progress(id, static_cast<int>(done / static_cast<uint64_t>(scale)),
                    static_cast<int>(total / static_cast<uint64_t>(scale)),
                    QString("Predicted %1 of %2 configurations…").arg(done).arg(total));
    };
    TuneResult result =
        search(space, base, settings, prediction_evaluator(traffic, cost, nullptr, true, lengths));
    // Bands and headroom, as tune works them out.
    HeadroomSettings hs = headroom_settings(cost, traffic);
    hs.cancel = [this] { return stop_.load(); };
    if (result.best && !stop_) {
      post_progress(id, 0, 1, "Working out each best configuration's band and headroom…");
    }
    HeadroomResult headroom = apply_headroom(
        result, scaled_prediction_evaluator(traffic, cost, nullptr, true, lengths), hs);
    QMetaObject::invokeMethod(
        this,
        [this, id, r = std::move(result), h = std::move(headroom), c = std::move(calibrated),
         n = note]() mutable { search_done(id, std::move(r), std::move(h), std::move(c), n); },
        Qt::QueuedConnection);
  });
  return Status::Ok();
}

namespace {

// "it holds to 1.42x t(b) and +38% rate", or why it is fragile.
QString held_text(const HeadroomResult& h) {
  const Evaluated* c = h.chosen();
  if (!c || !c->headroom) return {};
  QString t = "it " + QString::fromStdString(headroom_text(*c->headroom));
  if (h.fragile()) {
    t += QString(": fragile, none shown meets the SLO with t(b) %1× as slow")
             .arg(h.needed, 0, 'f', 2);
  }
  return t;
}

}  // namespace

void TunerPanel::post_progress(uint64_t id, int value, int maximum, const QString& what) {
  QMetaObject::invokeMethod(
      this,
      [this, id, value, maximum, what] {
        assert_gui_thread("TunerPanel::post_progress");
        if (id != run_id_) return;
        bar_->setRange(0, std::max(1, maximum));
        bar_->setValue(value);
        status_->setText(what);
      },
      Qt::QueuedConnection);
}

void TunerPanel::search_done(uint64_t id, TuneResult result, HeadroomResult headroom,
                             std::optional<CostModel> calibrated, QString note) {
  assert_gui_thread("TunerPanel::search_done");
  if (id != run_id_) return;
  join_worker();
  phase_ = Phase::kSearching;
  if (calibrated) {
    run_cost_model_ = std::move(calibrated);
    run_cost_text_ =
        run_cost_model_->describe() +
        (calibrate_->isChecked() ? ", calibrated under the traffic" : ", kept on this machine") +
        (cost_path_.isEmpty() ? "" : " (from " + cost_path_.toStdString() + ")");
  }
  // The traffic the calibration paused runs again (a confirmation pauses it
  // once more).
  if (paused_traffic_ && hooks_.resume_traffic) hooks_.resume_traffic();
  paused_traffic_ = false;
  result_ = std::move(result);
  headroom_ = std::move(headroom);
  const TuneResult& r = *result_;
  if (r.best) winner_ = r.best->options;
  show_rows();
  const QString searched = QString("Predicted %1 of %2 configurations%3%4.%5")
                               .arg(r.evaluated.size())
                               .arg(r.space_size)
                               .arg(r.method == TuneResult::Method::kExhaustive
                                        ? ""
                                        : " (a coarse grid, then refined around the best)")
                               .arg(r.out_of_time ? " before the budget ran out" : "")
                               .arg(note);
  if (r.cancelled) return finish("Cancelled. " + searched);
  if (!r.best) {
    show_error(text_of(r.best.error().message));
    return finish(searched + " None meets the SLO; the front shows what comes closest.");
  }
  std::vector<Evaluated> picks = confirm_order(*headroom_, static_cast<size_t>(candidates_));
  if (picks.empty()) {
    bar_->setValue(bar_->maximum());
    return finish(searched + " Best predicted: " + options_brief(r.best->options) + ", " +
                  held_text(*headroom_) + ".");
  }
  start_confirming(std::move(picks));
}

void TunerPanel::start_confirming(std::vector<Evaluated> picks) {
  phase_ = Phase::kConfirming;
  paused_traffic_ = hooks_.pause_traffic && hooks_.pause_traffic();
  const int n = static_cast<int>(picks.size());
  const QString paused = paused_traffic_ ? " The window's traffic is paused until it ends." : "";
  bar_->setRange(0, n * kRule.max_trials);
  bar_->setValue(0);
  status_->setText(QString("Confirming 1 of %1 live…%2").arg(n).arg(paused));
  update_controls();
  const uint64_t id = run_id_;
  ConfirmSpec spec;
  spec.factory = run_factory_;
  spec.metadata = run_metadata_;
  spec.traffic = traffic_spec_;
  spec.stop = &stop_;
  spec.rule = kRule;
  spec.deadline = deadline_;
  spec.planner = plan_on_cost(*run_cost_model_);  // live plans as predicted
  spec.inputs = run_requests_.inputs;
  std::optional<CostKey> key;
  if (!file_cost_ && model_ && model_->cost_key && !cost_cache_dir().empty()) {
    key = model_->cost_key;
  }
  start_worker([this, id, spec, picks = std::move(picks), n, paused, cost = *run_cost_model_, key,
                lengths = run_requests_.lengths]() mutable {
    std::vector<Confirmed> done;
    // Every live run of the model here refines its kept cost.
    auto refine_kept = [&] {
      if (!key) return;
      const std::string path = cost_cache_path(*key, cost_cache_dir());
      for (const Confirmed& c : done) {
        for (const auto& run : c.live_runs) {
          const uint32_t lanes = c.predicted.options.num_lanes;
          if (auto seen = CostModel::from_run(*run, 5, lanes)) {
            (void)refine_cached_cost(path, *key, *seen, lanes,
                                     run->others ? &*run->others : nullptr);
          }
        }
      }
    };
    // Each confirmed configuration predicted again with t(b) as the live
    // runs ran it: how far off the first prediction was for want of it.
    auto recalibrate = [&] {
      if (done.empty() || stop_) return;
      const Evaluator again =
          prediction_evaluator(spec.traffic, calibrate(cost, done), nullptr, true, lengths);
      std::vector<std::optional<Evaluated>> figures;
      for (const Confirmed& c : done) {
        figures.push_back(c.observed ? std::optional<Evaluated>(again(c.predicted.options))
                                     : std::nullopt);
      }
      QMetaObject::invokeMethod(
          this, [this, id, f = std::move(figures)]() mutable { calibrated(id, std::move(f)); },
          Qt::QueuedConnection);
    };
    for (int i = 0; i < n; ++i) {
      spec.on_run = [this, id, i, n, paused](int runs) {
        post_progress(id, i * kRule.max_trials + runs, n * kRule.max_trials,
                      QString("Confirming %1 of %2 live: run %3 done…%4")
                          .arg(i + 1)
                          .arg(n)
                          .arg(runs)
                          .arg(paused));
      };
      auto c = confirm_live(spec, picks[static_cast<size_t>(i)]);
      Status s = c ? Status::Ok() : Status(c.error());
      const bool out_of_time = c && !*c;
      if (c && *c) {
        done.push_back(**c);
        QMetaObject::invokeMethod(
            this, [this, id, one = **c] { confirmed_one(id, one); }, Qt::QueuedConnection);
      } else if (out_of_time) {
        QMetaObject::invokeMethod(
            this,
            [this, id] {
              if (id == run_id_) budget_ran_out_ = true;
            },
            Qt::QueuedConnection);
      }
      if (!s || out_of_time || i + 1 == n) {
        if (s || out_of_time) recalibrate();
        refine_kept();
        QMetaObject::invokeMethod(
            this, [this, id, s] { confirm_done(id, s); }, Qt::QueuedConnection);
        return;
      }
    }
  });
}

void TunerPanel::confirmed_one(uint64_t id, Confirmed c) {
  assert_gui_thread("TunerPanel::confirmed_one");
  if (id != run_id_) return;
  confirmed_.push_back(std::move(c));
  bar_->setValue(static_cast<int>(confirmed_.size()) * kRule.max_trials);
  show_rows();
}

void TunerPanel::calibrated(uint64_t id, std::vector<std::optional<Evaluated>> again) {
  assert_gui_thread("TunerPanel::calibrated");
  if (id != run_id_) return;
  for (size_t i = 0; i < again.size() && i < confirmed_.size(); ++i) {
    confirmed_[i].recalibrated = again[i];
  }
  show_rows();
}

void TunerPanel::confirm_done(uint64_t id, Status s) {
  assert_gui_thread("TunerPanel::confirm_done");
  if (id != run_id_) return;
  join_worker();
  const QString note = paused_traffic_ ? " The window's traffic is back on." : "";
  if (paused_traffic_ && hooks_.resume_traffic) hooks_.resume_traffic();
  paused_traffic_ = false;
  if (!s && s.error().code == ErrorCode::kCancelled) {
    return finish(QString("Cancelled during live confirmation; %1 confirmed.%2")
                      .arg(confirmed_.size())
                      .arg(note));
  }
  if (!s) show_error("Confirming live failed: " + text_of(s.message()));
  bool measured_best = false;
  if (!confirmed_.empty()) {
    auto best = headroom_ ? best_holding(confirmed_, headroom_->needed, result_->slo_p99_ms,
                                         result_->objective)
                          : best_measured(confirmed_, result_->slo_p99_ms, result_->objective);
    if (best) {
      winner_ = confirmed_[*best].predicted.options;
      measured_best = true;
    } else {
      show_error(text_of(best.error().message));
    }
  }
  show_rows();
  bar_->setValue(bar_->maximum());
  QString text =
      QString("Confirmed %1 live%2.")
          .arg(confirmed_.size())
          .arg(budget_ran_out_ ? QString(" of %1 before the budget ran out").arg(candidates_)
                               : QString());
  if (winner_) {
    text +=
        measured_best ? " Best as measured: " : " None meets the SLO as measured; best predicted: ";
    text += options_brief(*winner_) + ".";
  }
  finish(text + note);
}

void TunerPanel::kept_made(uint64_t id, CostModel kept) {
  assert_gui_thread("TunerPanel::kept_made");
  if (id != run_id_ || !model_) return;
  model_->kept = std::move(kept);
  model_->kept_note.clear();
  update_cost_note();
}

void TunerPanel::finish(const QString& status) {
  phase_ = Phase::kIdle;
  status_->setText(status);
  update_controls();
}

}  // namespace batchscope

// SPDX-License-Identifier: GPL-3.0-or-later
// The Tuner panel, offscreen, driving real tunes through the workbench window
// on the synthetic model: a search predicted for every configuration and its
// best confirmed live (the window's traffic paused meanwhile and resumed),
// the progress bar at its end, the front in the table and on the scatter, the
// best marked and within the SLO, Apply putting its options in force on the
// window's engine and Export handing them to the dialog; Cancel stopping a
// search and a live confirmation promptly and leaving the panel usable; a bad
// space refused naming the entry; an SLO nothing meets naming the closest; a
// model without a cost profile refused; a window destroyed mid-run
// cancelling and joining cleanly; the time budget stopping the search on its
// share (on an injected clock) and leaving a candidate unconfirmed; a cost
// file replacing the model's cost, a bad one refused naming it; the run
// written as tune's JSON; and the inputs kept between sessions.

#include "ui/tuner/tuner_panel.h"
#include "ui/common/number_text.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>

#include <qcustomplot.h>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QDoubleSpinBox>
#include <QImage>
#include <QItemSelectionModel>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QMouseEvent>
#include <QProgressBar>
#include <QPushButton>
#include <QSet>
#include <QSettings>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTimer>
#include <QToolTip>
#include <atomic>
#include <chrono>
#include <fstream>

#include "tests/ui/workbench/toy_window.h"
#include "tuning/cost_cache.h"
#include "tuning/tune_space.h"
#include "ui/tuner/tune_plot.h"

namespace batchscope {
namespace {

// A space of 5 x 5 configurations: predicted in a blink.
const QString kSmallSpace = "max_batch_size=1|2|4|8|16,max_wait_ms=0|0.1|0.2|0.5|1,lanes=1";

class TunerPanelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window_ = std::make_unique<WorkbenchWindow>(toy_config());
    window_->resize(1500, 950);
    ASSERT_NE(window_->engine(), nullptr);
    tuner()->slo_box()->setValue(20);
    tuner()->seconds_box()->setValue(0.5);
    tuner()->confirm_box()->setValue(1);
    tuner()->space_edit()->setText(kSmallSpace);
    // The flows below without the calibration runs; those have tests of
    // their own.
    EXPECT_TRUE(tuner()->calibrate_box()->isChecked());  // the default
    tuner()->calibrate_box()->setChecked(false);
  }
  void TearDown() override { window_.reset(); }
  TunerPanel* tuner() { return window_->tuner(); }
  void show_tuner() {
    window_->show();
    auto* tabs = qobject_cast<QTabWidget*>(tuner()->parentWidget()->parentWidget());
    ASSERT_NE(tabs, nullptr);
    tabs->setCurrentWidget(tuner());
    QApplication::processEvents();
  }
  std::unique_ptr<WorkbenchWindow> window_;
};

TEST_F(TunerPanelTest, ARealTuneConfirmsTheBestAndAppliesIt) {
  // The model predicts p99 around a millisecond; the SLO leaves the live
  // half-second window room for a loaded machine (sanitizers, a test beside
  // it), so the flow under test does not hang on the machine's pauses.
  tuner()->slo_box()->setValue(100);
  ASSERT_TRUE(window_->start_traffic().ok());
  ASSERT_TRUE(tuner()->run().ok());
  EXPECT_TRUE(tuner()->running());
  EXPECT_FALSE(tuner()->run_button()->isEnabled());
  EXPECT_TRUE(tuner()->cancel_button()->isEnabled());
  // Live confirmation runs with the window's own traffic paused.
  QTRY_VERIFY_WITH_TIMEOUT(tuner()->phase() == TunerPanel::Phase::kConfirming, 30000);
  EXPECT_FALSE(window_->traffic_running());
  EXPECT_TRUE(tuner()->status_text().contains("paused")) << tuner()->status_text().toStdString();
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 60000);
  EXPECT_TRUE(window_->traffic_running());
  EXPECT_TRUE(tuner()->error_text().isEmpty()) << tuner()->error_text().toStdString();
  EXPECT_TRUE(tuner()->status_text().contains("Confirmed 1 live"))
      << tuner()->status_text().toStdString();
  EXPECT_EQ(tuner()->progress_bar()->value(), tuner()->progress_bar()->maximum());
  EXPECT_TRUE(tuner()->run_button()->isEnabled());

  // Every configuration predicted, the front in the table, the best marked.
  ASSERT_TRUE(tuner()->result().has_value());
  const TuneResult& r = *tuner()->result();
  EXPECT_EQ(r.evaluated.size(), r.space_size);
  EXPECT_EQ(r.space_size, 25u);
  const TuneTableModel* table = tuner()->table_model();
  ASSERT_GT(table->rowCount(), 0);
  ASSERT_TRUE(tuner()->best_row().has_value());
  const int best = static_cast<int>(*tuner()->best_row());
  EXPECT_EQ(table->data(table->index(best, TuneTableModel::kMark)).toString(), "★");
  const TuneRow& row = table->at(best);
  EXPECT_TRUE(meets_slo(row.predicted, 100));
  ASSERT_TRUE(row.live.has_value());  // the one confirmed is the winner
  EXPECT_GT(row.live->measured.throughput_rps, 0);
  EXPECT_FALSE(table->data(table->index(best, TuneTableModel::kLiveP99)).toString().isEmpty());
  ASSERT_EQ(tuner()->confirmed().size(), 1u);
  // The winner's p99 band and headroom: columns of their own, as tune prints them.
  ASSERT_TRUE(tuner()->headroom().has_value());
  ASSERT_TRUE(row.predicted.band && row.predicted.headroom);
  EXPECT_EQ(
      table->data(table->index(best, TuneTableModel::kBand)).toString(),
      ms_text(row.predicted.band->p99_ms.low) + "–" + ms_text(row.predicted.band->p99_ms.high));
  EXPECT_TRUE(table->data(table->index(best, TuneTableModel::kHeadroom)).toString().contains("×"))
      << table->data(table->index(best, TuneTableModel::kHeadroom)).toString().toStdString();
  EXPECT_EQ(table->headerData(TuneTableModel::kHeadroom, Qt::Horizontal).toString(),
            "headroom\nt(b), rate");
  EXPECT_TRUE(table->data(table->index(best, TuneTableModel::kMark), Qt::ToolTipRole)
                  .toString()
                  .contains("Headroom: holds to"));
  // Predicted again with t(b) as the live runs ran it: a column of the table
  // and a point of the scatter of its own, apart from the first prediction.
  ASSERT_TRUE(row.live->observed);
  ASSERT_TRUE(row.live->recalibrated.has_value());
  EXPECT_GT(row.live->recalibrated->p99_ms, 0);
  EXPECT_EQ(table->data(table->index(best, TuneTableModel::kCalibratedP99)).toString(),
            ms_text(row.live->recalibrated->p99_ms));
  TunePlot* plot = tuner()->plot();
  plot->plot()->replot();
  const QString said = plot->text_at(plot->pixel_of(best, TunePlot::Point::kCalibrated));
  EXPECT_TRUE(said.contains("calibrated: ")) << said.toStdString();
  // The three kinds of point are graphs of their own: each holds the best
  // row's figures, predicted, measured live and calibrated.
  auto holds = [&](const char* name, const Evaluated& e) {
    for (int g = 0; g < plot->plot()->graphCount(); ++g) {
      QCPGraph* graph = plot->plot()->graph(g);
      if (graph->name() != name) continue;
      for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) {
        if (std::abs(it->value - e.throughput_rps) <= 1e-9 * std::max(1.0, e.throughput_rps))
          return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(holds("Pareto front", row.predicted) || holds("best", row.predicted));
  EXPECT_TRUE(holds("measured live", row.live->measured));
  EXPECT_TRUE(holds("calibrated", *row.live->recalibrated));
  const QString live_said = plot->text_at(plot->pixel_of(best, TunePlot::Point::kMeasured));
  EXPECT_TRUE(live_said.contains("measured: ")) << live_said.toStdString();
  for (int i = 0; i < table->rowCount(); ++i) {
    if (table->at(i).on_front) continue;
    // Off the front only the best, the confirmed, or a candidate ranked by headroom.
    EXPECT_TRUE(i == best || table->at(i).live.has_value() ||
                table->at(i).predicted.headroom.has_value())
        << i;
  }

  // The best is selected; Apply puts it in force on the window's engine.
  ASSERT_EQ(tuner()->selected_row(), best);
  Engine& engine = *window_->engine();
  const uint64_t v0 = engine.status().options_version;
  ASSERT_TRUE(tuner()->apply_button()->isEnabled());
  tuner()->apply_button()->click();
  const EngineStatus now = engine.status();
  EXPECT_EQ(now.options_version, v0 + 1);
  EXPECT_EQ(now.options.max_batch_size, row.predicted.options.max_batch_size);
  EXPECT_EQ(now.options.max_wait_us, row.predicted.options.max_wait_us);
  EXPECT_EQ(now.options.strategy, row.predicted.options.strategy);
  EXPECT_EQ(now.options.num_lanes, row.predicted.options.num_lanes);

  // Export hands the dialog the options and the figures measured for them.
  auto in = tuner()->export_input();
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->options.max_batch_size, row.predicted.options.max_batch_size);
  EXPECT_TRUE(in->tuning.measured);
  EXPECT_DOUBLE_EQ(in->tuning.p99_ms, row.live->measured.p99_ms);
  EXPECT_NE(in->tuning.traffic.find("poisson"), std::string::npos) << in->tuning.traffic;
  ASSERT_TRUE(in->model.has_value());
  QString title;
  QTimer::singleShot(0, [&title] {
    if (QWidget* w = QApplication::activeModalWidget()) {
      title = w->windowTitle();
      w->close();
    }
  });
  tuner()->export_button()->click();
  EXPECT_EQ(title, "Export configuration for a server");
}

TEST_F(TunerPanelTest, TheScatterReadsOutPointsAndClickingOneSelectsItsRow) {
  show_tuner();
  tuner()->confirm_box()->setValue(0);
  ASSERT_TRUE(tuner()->run().ok());
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 30000);
  ASSERT_TRUE(tuner()->best_row().has_value());
  EXPECT_EQ(tuner()->progress_bar()->value(), tuner()->progress_bar()->maximum());
  TunePlot* plot = tuner()->plot();
  QCustomPlot* qcp = plot->plot();
  qcp->replot();
  const int best = static_cast<int>(*tuner()->best_row());
  const QPoint at = plot->pixel_of(best);
  EXPECT_TRUE(plot->text_at(at).contains("★ best")) << plot->text_at(at).toStdString();
  QMouseEvent move(QEvent::MouseMove, QPointF(at), QPointF(qcp->mapToGlobal(at)), Qt::NoButton,
                   Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(qcp, &move);
  EXPECT_TRUE(QToolTip::text().contains("predicted:")) << QToolTip::text().toStdString();
  EXPECT_TRUE(plot->text_at(QPoint(2, 2)).isEmpty());

  // Clicking a row's point selects that row.
  tuner()->table()->clearSelection();
  ASSERT_FALSE(tuner()->selected_row().has_value());
  QTest::mouseClick(qcp, Qt::LeftButton, Qt::NoModifier, at);
  EXPECT_EQ(tuner()->selected_row(), best);
}

TEST_F(TunerPanelTest, TheWindowWithATuneShownRendersToAPicture) {
  show_tuner();
  tuner()->confirm_box()->setValue(2);
  ASSERT_TRUE(window_->start_traffic().ok());
  ASSERT_TRUE(tuner()->run().ok());
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 60000);
  EXPECT_EQ(tuner()->confirmed().size(), 2u);
  wait_for_ok(*window_, 300);
  window_->refresh();
  const QImage img = window_->grab().toImage();
  QSet<QRgb> colours;
  for (int y = img.height() * 2 / 3; y < img.height(); y += 3) {
    for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
  }
  EXPECT_GT(colours.size(), 50);
  EXPECT_TRUE(img.save(QDir::temp().filePath("batchscope_tuner_test.png")));
}

TEST_F(TunerPanelTest, CancelStopsASearchPromptlyAndThePanelRunsAgain) {
  // The default space (280 configurations) over two minutes of traffic each:
  // tens of millions of requests to replay, far longer than the cancel takes.
  tuner()->space_edit()->setText(QString::fromStdString(TuneSpace::default_text(64)));
  tuner()->seconds_box()->setValue(120);
  ASSERT_TRUE(tuner()->run().ok());
  tuner()->cancel_button()->click();
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 5000);
  ASSERT_TRUE(tuner()->result().has_value());
  EXPECT_TRUE(tuner()->result()->cancelled);
  EXPECT_LT(tuner()->result()->evaluated.size(), tuner()->result()->space_size);
  EXPECT_TRUE(tuner()->status_text().startsWith("Cancelled"))
      << tuner()->status_text().toStdString();
  EXPECT_TRUE(tuner()->run_button()->isEnabled());

  tuner()->space_edit()->setText(kSmallSpace);
  tuner()->seconds_box()->setValue(0.5);
  tuner()->confirm_box()->setValue(0);
  ASSERT_TRUE(tuner()->run().ok());
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 30000);
  EXPECT_FALSE(tuner()->result()->cancelled);
  EXPECT_TRUE(tuner()->best_row().has_value());
}

TEST_F(TunerPanelTest, ItCalibratesUnderTheTrafficBeforeItSearches) {
  tuner()->calibrate_box()->setChecked(true);
  tuner()->slo_box()->setValue(100);
  tuner()->confirm_box()->setValue(0);
  ASSERT_TRUE(window_->start_traffic().ok());
  ASSERT_TRUE(tuner()->run().ok());
  // The live run pauses the window's traffic, as a confirmation does.
  EXPECT_EQ(tuner()->phase(), TunerPanel::Phase::kCalibrating);
  EXPECT_FALSE(window_->traffic_running());
  EXPECT_TRUE(tuner()->status_text().contains("Calibrating t(b)"))
      << tuner()->status_text().toStdString();
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 60000);
  EXPECT_TRUE(window_->traffic_running());
  EXPECT_TRUE(tuner()->status_text().contains("Calibrated under the traffic: t(b) moved 1 lane(s)"))
      << tuner()->status_text().toStdString();
  // The toy model's formula has no time outside a batch; the live run
  // measured one, and the search predicted with it.
  ASSERT_TRUE(tuner()->run_cost_model().has_value());
  EXPECT_TRUE(tuner()->run_cost_model()->has_overhead());
  ASSERT_TRUE(tuner()->result().has_value());
  EXPECT_EQ(tuner()->result()->evaluated.size(), 25u);

  // Off: the model's own cost, as it was.
  tuner()->calibrate_box()->setChecked(false);
  ASSERT_TRUE(tuner()->run().ok());
  EXPECT_EQ(tuner()->phase(), TunerPanel::Phase::kSearching);
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 60000);
  EXPECT_FALSE(tuner()->run_cost_model()->has_overhead());
  EXPECT_FALSE(tuner()->status_text().contains("Calibrated"))
      << tuner()->status_text().toStdString();
}

// A model with a key in the cost cache and no kept cost yet: the first run
// makes it (a live calibration, the traffic paused) and predicts with it,
// the confirmation's live runs refine the file, and the next run reuses it.
TEST_F(TunerPanelTest, TheFirstRunMakesTheKeptCostAndTheConfirmationRefinesIt) {
  const TempCacheHome cache("batchscope_tuner_cache");
  // Tests run beside each other (ctest -j): the machine is busy and its
  // speed moves by design, and such a run would refine nothing.
  struct QuietEnough {
    QuietEnough() { ::setenv("BATCHSCOPE_REFINE_ALWAYS", "1", 1); }
    ~QuietEnough() { ::unsetenv("BATCHSCOPE_REFINE_ALWAYS"); }
  } quiet;
  LoadedModel m = toy_loaded();
  m.cost_key = CostKey{"toy", "synthetic:100,5,0,0,spin", "cpu", R"({"machine": {"host": "t"}})"};
  tuner()->set_model(m);
  tuner()->space_edit()->setText(kSmallSpace);  // one lane count: one calibration
  tuner()->set_calibration_seconds(0.6);
  tuner()->slo_box()->setValue(100);
  EXPECT_TRUE(tuner()->cost_text().contains("the first run makes the kept cost"))
      << tuner()->cost_text().toStdString();
  ASSERT_TRUE(window_->start_traffic().ok());
  ASSERT_TRUE(tuner()->run().ok());
  EXPECT_EQ(tuner()->phase(), TunerPanel::Phase::kCalibrating);
  EXPECT_FALSE(window_->traffic_running());
  EXPECT_TRUE(tuner()->status_text().contains("Making the kept cost of toy"))
      << tuner()->status_text().toStdString();
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 60000);
  EXPECT_TRUE(window_->traffic_running());
  EXPECT_TRUE(tuner()->error_text().isEmpty()) << tuner()->error_text().toStdString();
  ASSERT_EQ(tuner()->confirmed().size(), 1u);
  // Predicted with the kept cost: measured live, with the load driver's lag.
  ASSERT_TRUE(tuner()->run_cost_model().has_value());
  EXPECT_TRUE(tuner()->run_cost_model()->has_overhead());
  EXPECT_TRUE(calibrated_for(*tuner()->run_cost_model(), 1));
  ASSERT_TRUE(tuner()->model()->kept.has_value());
  const uint64_t made = tuner()->model()->kept->live_batches(1);
  EXPECT_GT(made, 0u);
  EXPECT_TRUE(tuner()->cost_text().contains("kept on this machine"))
      << tuner()->cost_text().toStdString();
  // The file is there, and the confirmation's runs refined it beyond what
  // the calibration made.
  const std::string path = cost_cache_path(*m.cost_key, cost_cache_dir());
  auto kept = read_cached_cost(path, *m.cost_key);
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  ASSERT_TRUE(kept->has_value());
  EXPECT_GT((*kept)->live_batches(1), made);
  // The next run finds it calibrated: no calibration phase.
  tuner()->confirm_box()->setValue(0);
  ASSERT_TRUE(tuner()->run().ok());
  EXPECT_EQ(tuner()->phase(), TunerPanel::Phase::kSearching);
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 60000);
}

TEST_F(TunerPanelTest, CancelStopsACalibrationRunAndTheTrafficResumes) {
  tuner()->calibrate_box()->setChecked(true);
  tuner()->seconds_box()->setValue(60);  // a minute of live traffic: the cancel cuts it short
  ASSERT_TRUE(window_->start_traffic().ok());
  ASSERT_TRUE(tuner()->run().ok());
  EXPECT_FALSE(window_->traffic_running());
  QTest::qWait(200);
  tuner()->cancel();
  EXPECT_TRUE(tuner()->status_text().contains("stopping the live run"))
      << tuner()->status_text().toStdString();
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 5000);
  EXPECT_TRUE(tuner()->status_text().startsWith("Cancelled"))
      << tuner()->status_text().toStdString();
  EXPECT_TRUE(window_->traffic_running());
  EXPECT_TRUE(tuner()->run_button()->isEnabled());
}

TEST_F(TunerPanelTest, CancelStopsALiveConfirmationAndTheTrafficResumes) {
  tuner()->seconds_box()->setValue(30);  // each live run 30 s: the cancel cuts it short
  tuner()->space_edit()->setText("max_batch_size=8|16,max_wait_ms=0.5,lanes=1");
  ASSERT_TRUE(window_->start_traffic().ok());
  ASSERT_TRUE(tuner()->run().ok());
  QTRY_VERIFY_WITH_TIMEOUT(tuner()->phase() == TunerPanel::Phase::kConfirming, 30000);
  EXPECT_FALSE(window_->traffic_running());
  tuner()->cancel();
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 5000);
  EXPECT_TRUE(tuner()->status_text().contains("Cancelled during live confirmation"))
      << tuner()->status_text().toStdString();
  EXPECT_TRUE(tuner()->confirmed().empty());
  EXPECT_TRUE(window_->traffic_running());
  // The predicted front stays, and its best can still be applied.
  EXPECT_GT(tuner()->table_model()->rowCount(), 0);
  EXPECT_TRUE(tuner()->apply_selected().ok());
}

TEST_F(TunerPanelTest, ABadSpaceIsRefusedNamingTheEntry) {
  tuner()->space_edit()->setText("max_batch_size=1..16,colour=red");
  const Status s = tuner()->run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'colour=red'"), std::string::npos) << s.message();
  EXPECT_TRUE(tuner()->error_text().contains("colour=red")) << tuner()->error_text().toStdString();
  EXPECT_TRUE(tuner()->space_error().contains("colour=red"));
  EXPECT_FALSE(tuner()->running());

  // Typed: checked at once. Above the model's limit of 64: refused too.
  tuner()->space_edit()->clear();
  QTest::keyClicks(tuner()->space_edit(), "max_batch_size=1..128");
  EXPECT_TRUE(tuner()->space_error().contains("above the model's maximum 64"))
      << tuner()->space_error().toStdString();
  EXPECT_FALSE(tuner()->run().ok());
}

TEST_F(TunerPanelTest, AnSloNothingMeetsNamesTheClosestAndStillShowsTheFront) {
  tuner()->slo_box()->setValue(0.01);  // every batch runs at least 105 us
  ASSERT_TRUE(tuner()->run().ok());
  QTRY_VERIFY_WITH_TIMEOUT(!tuner()->running(), 30000);
  EXPECT_TRUE(tuner()->error_text().contains("closest: strategy="))
      << tuner()->error_text().toStdString();
  EXPECT_TRUE(tuner()->confirmed().empty());
  EXPECT_GT(tuner()->table_model()->rowCount(), 0);
  EXPECT_FALSE(tuner()->best_row().has_value());
}

TEST_F(TunerPanelTest, DestroyingTheWindowDuringALiveRunCancelsAndJoins) {
  tuner()->seconds_box()->setValue(30);
  ASSERT_TRUE(tuner()->run().ok());
  QTRY_VERIFY_WITH_TIMEOUT(tuner()->phase() == TunerPanel::Phase::kConfirming, 30000);
  const auto t0 = std::chrono::steady_clock::now();
  window_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST_F(TunerPanelTest, DestroyingTheWindowDuringASearchCancelsAndJoins) {
  tuner()->space_edit()->setText(QString::fromStdString(TuneSpace::default_text(64)));
  tuner()->seconds_box()->setValue(120);
  ASSERT_TRUE(tuner()->run().ok());
  QApplication::processEvents();  // some progress on its way
  window_.reset();
}

TEST(TunerPanel, AModelWithoutACostProfileCannotBeTuned) {
  TunerPanel panel(TunerHooks{});
  LoadedModel m = toy_loaded("plain");
  m.profile.clear();
  m.synthetic.reset();
  panel.set_model(m);
  EXPECT_FALSE(panel.run_button()->isEnabled());
  const Status s = panel.run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no cost profile"), std::string::npos) << s.message();

  // With one, it can; the default space is clipped to the model's maximum.
  panel.set_model(toy_loaded("toy8", 8));
  EXPECT_TRUE(panel.run_button()->isEnabled());
  EXPECT_TRUE(panel.space_edit()->text().startsWith("max_batch_size=1..8,"))
      << panel.space_edit()->text().toStdString();
}

TEST(TunerPanel, TheCostIsTheSyntheticFormulaElseTheProfile) {
  LoadedModel m = toy_loaded();
  auto exact = tuning_cost(m, 64);
  ASSERT_TRUE(exact.ok());
  EXPECT_DOUBLE_EQ(exact->cost_us(33), 100 + 5 * 33);
  m.synthetic.reset();
  m.profile = {{1, 100, 0.05}, {4, 400, 0.1}};
  auto measured = tuning_cost(m, 64);
  ASSERT_TRUE(measured.ok());
  EXPECT_DOUBLE_EQ(measured->cost_us(2), 200);
  EXPECT_NEAR(measured->spread(4), 0.1, 1e-12);
  m.profile = {{4, 100, 0}, {2, 50, 0}};
  auto bad = tuning_cost(m, 64);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("cost profile"), std::string::npos);
}

// A clock that moves one second each time it is read.
class SteppingClock final : public Clock {
 public:
  TimePoint now() const override { return TimePoint(std::chrono::seconds(reads_++)); }
  void wait_until(std::unique_lock<std::mutex>&, std::condition_variable&, TimePoint) override {}
  void wait_until(std::unique_lock<std::mutex>&, Doorbell&, TimePoint) override {}

 private:
  mutable std::atomic<int64_t> reads_{0};
};

// A standalone panel on the toy model: poisson at 1000 req/s, nothing confirmed.
class LonePanel : public ::testing::Test {
 protected:
  void SetUp() override {
    panel_.set_model(toy_loaded());
    panel_.slo_box()->setValue(20);
    panel_.seconds_box()->setValue(0.5);
    panel_.confirm_box()->setValue(0);
    panel_.space_edit()->setText(kSmallSpace);
    panel_.calibrate_box()->setChecked(false);
  }
  void run_to_end() {
    ASSERT_TRUE(panel_.run().ok());
    QTRY_VERIFY_WITH_TIMEOUT(!panel_.running(), 30000);
  }
  static std::string temp_path(const char* name) {
    return QDir::temp().filePath(name).toStdString();
  }
  TunerPanel panel_{TunerHooks{}};
};

TEST_F(LonePanel, TheBudgetStopsTheSearchOnItsShare) {
  // Nothing to confirm: the search has the whole budget, 3 s; each reading of
  // the clock takes one, so it stops after a few of the 25.
  panel_.set_search_clock(std::make_shared<SteppingClock>());
  panel_.budget_box()->setValue(3);
  run_to_end();
  ASSERT_TRUE(panel_.result().has_value());
  EXPECT_TRUE(panel_.result()->out_of_time);
  EXPECT_GT(panel_.result()->evaluated.size(), 0u);
  EXPECT_LT(panel_.result()->evaluated.size(), 25u);
  EXPECT_TRUE(panel_.status_text().contains("before the budget ran out"))
      << panel_.status_text().toStdString();

  // The steady clock again, and a budget of 1 s to confirm one: each live run
  // replays 0.5 s of traffic and three must agree, so the third never starts.
  panel_.set_search_clock(nullptr);
  panel_.budget_box()->setValue(1);
  panel_.confirm_box()->setValue(1);
  run_to_end();
  EXPECT_FALSE(panel_.result()->out_of_time);
  EXPECT_EQ(panel_.result()->evaluated.size(), 25u);
  EXPECT_TRUE(panel_.confirmed().empty());
  EXPECT_TRUE(panel_.status_text().contains("Confirmed 0 live of 1 before the budget ran out"))
      << panel_.status_text().toStdString();
  EXPECT_TRUE(panel_.error_text().isEmpty()) << panel_.error_text().toStdString();
  EXPECT_TRUE(panel_.best_row().has_value());  // the best predicted stays chosen
}

TEST_F(LonePanel, ACostFileReplacesTheModelsCostAndABadOneIsRefused) {
  EXPECT_TRUE(panel_.cost_text().contains("synthetic formula")) << panel_.cost_text().toStdString();
  // 5 ms a batch whatever its size, where the toy model takes 0.1 to 0.4 ms.
  const std::string slow = temp_path("batchscope_tuner_slow_cost.json");
  std::ofstream(slow) << R"({"model": "toy", "points": [{"batch": 1, "median_us": 5000},
                                                     {"batch": 64, "median_us": 5000}]})";
  ASSERT_TRUE(panel_.set_cost_file(QString::fromStdString(slow)).ok());
  EXPECT_EQ(panel_.cost_file().toStdString(), slow);
  EXPECT_TRUE(panel_.cost_text().contains(QString::fromStdString(slow)))
      << panel_.cost_text().toStdString();
  run_to_end();
  ASSERT_TRUE(panel_.best_row().has_value());
  const TuneRow& best = panel_.table_model()->at(static_cast<int>(*panel_.best_row()));
  EXPECT_GE(best.predicted.p50_ms, 5.0);  // every request waits out a 5 ms batch

  // A file that is not there, or not a profile: refused by name, the cost kept.
  const Status missing = panel_.set_cost_file("/nonexistent/cost.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("cannot read /nonexistent/cost.json"), std::string::npos)
      << missing.message();
  EXPECT_TRUE(panel_.error_text().contains("/nonexistent/cost.json"));
  const std::string bad = temp_path("batchscope_tuner_bad_cost.json");
  std::ofstream(bad) << R"({"points": [{"batch": 1, "median_us": -3}]})";
  const Status refused = panel_.set_cost_file(QString::fromStdString(bad));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("points[0].median_us = -3"), std::string::npos)
      << refused.message();
  EXPECT_EQ(panel_.cost_file().toStdString(), slow);

  // Back to the model's own: the toy's batches are fast again.
  panel_.clear_cost_file();
  EXPECT_TRUE(panel_.cost_file().isEmpty());
  EXPECT_TRUE(panel_.cost_text().contains("synthetic formula"));
  run_to_end();
  ASSERT_TRUE(panel_.best_row().has_value());
  EXPECT_LT(panel_.table_model()->at(static_cast<int>(*panel_.best_row())).predicted.p50_ms, 2.0);
  std::remove(slow.c_str());
  std::remove(bad.c_str());
}

TEST_F(LonePanel, SaveJsonWritesTheRunAsTuneDoes) {
  const QString path = QString::fromStdString(temp_path("batchscope_tuner_result.json"));
  EXPECT_FALSE(panel_.save_json(path).ok());  // nothing tuned yet
  EXPECT_FALSE(panel_.save_json_button()->isEnabled());
  run_to_end();
  EXPECT_TRUE(panel_.save_json_button()->isEnabled());
  ASSERT_TRUE(panel_.save_json(path).ok());
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
  const TuneResult& r = *panel_.result();
  EXPECT_EQ(doc["evaluated"].toInt(), static_cast<int>(r.evaluated.size()));
  EXPECT_EQ(doc["space_size"].toInt(), 25);
  EXPECT_EQ(doc["objective"].toString(), "throughput");
  EXPECT_DOUBLE_EQ(doc["slo_p99_ms"].toDouble(), 20);
  ASSERT_TRUE(r.best.ok());
  const QJsonObject best = doc["best"].toObject();
  EXPECT_EQ(best["options"].toObject()["max_batch_size"].toInt(),
            static_cast<int>(r.best->options.max_batch_size));
  EXPECT_NEAR(best["predicted"].toObject()["p99_ms"].toDouble(), r.best->p99_ms, 1e-6);
  EXPECT_EQ(doc["pareto"].toArray().size(), static_cast<qsizetype>(r.pareto.size()));
  EXPECT_TRUE(doc["confirmed"].toArray().isEmpty());
  EXPECT_TRUE(doc["cost_model"].toString().startsWith("t(b)"))
      << doc["cost_model"].toString().toStdString();
  EXPECT_TRUE(doc["traffic"].toString().contains("poisson"));
  // The band and headroom, as tune writes them.
  const QJsonObject headroom = doc["headroom"].toObject();
  EXPECT_GE(headroom["needed_slowdown"].toDouble(), 1.0);
  EXPECT_FALSE(headroom["checked"].toArray().isEmpty());
  EXPECT_TRUE(best["predicted"].toObject()["band"].toObject().contains("p99_ms"));
  EXPECT_FALSE(panel_.save_json("/nonexistent/dir/tune.json").ok());
  f.close();
  QFile::remove(path);
}

TEST_F(LonePanel, TheInputsAndTheCostFileAreKeptBetweenSessions) {
  const std::string cost = temp_path("batchscope_tuner_kept_cost.json");
  std::ofstream(cost) << R"({"points": [{"batch": 1, "median_us": 300}]})";
  const QString ini = QDir::temp().filePath("batchscope_tuner_settings.ini");
  QFile::remove(ini);
  panel_.slo_box()->setValue(7.5);
  panel_.objective_box()->setCurrentIndex(1);
  panel_.seconds_box()->setValue(4);
  panel_.confirm_box()->setValue(2);
  panel_.budget_box()->setValue(90);
  ASSERT_TRUE(panel_.set_cost_file(QString::fromStdString(cost)).ok());
  {
    QSettings s(ini, QSettings::IniFormat);
    panel_.save_settings(s);
  }
  TunerPanel again{TunerHooks{}};
  again.set_model(toy_loaded());
  {
    QSettings s(ini, QSettings::IniFormat);
    again.restore_settings(s);
  }
  EXPECT_DOUBLE_EQ(again.slo_box()->value(), 7.5);
  EXPECT_EQ(again.objective_box()->currentText(), "latency");
  EXPECT_DOUBLE_EQ(again.seconds_box()->value(), 4);
  EXPECT_EQ(again.confirm_box()->value(), 2);
  EXPECT_DOUBLE_EQ(again.budget_box()->value(), 90);
  EXPECT_FALSE(again.calibrate_box()->isChecked());  // off in SetUp, on by default
  EXPECT_EQ(again.space_edit()->text().toStdString(),
            kSmallSpace.toStdString());  // not the default
  EXPECT_EQ(again.cost_file().toStdString(), cost);
  EXPECT_TRUE(again.cost_text().contains("300 us")) << again.cost_text().toStdString();

  // The default space is not kept (it follows the model), and a cost file
  // gone since is named and not used.
  panel_.space_edit()->setText(QString::fromStdString(TuneSpace::default_text(64)));
  {
    QSettings s(ini, QSettings::IniFormat);
    panel_.save_settings(s);
    EXPECT_TRUE(s.value("tuner/space").toString().isEmpty());
  }
  std::remove(cost.c_str());
  TunerPanel third{TunerHooks{}};
  third.set_model(toy_loaded("toy8", 8));
  {
    QSettings s(ini, QSettings::IniFormat);
    third.restore_settings(s);
  }
  EXPECT_TRUE(third.space_edit()->text().startsWith("max_batch_size=1..8,"))
      << third.space_edit()->text().toStdString();
  EXPECT_TRUE(third.cost_file().isEmpty());
  EXPECT_TRUE(third.error_text().contains(QString::fromStdString(cost)))
      << third.error_text().toStdString();
  QFile::remove(ini);
}

}  // namespace
}  // namespace batchscope

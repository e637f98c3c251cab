// The Tuner panel, offscreen, driving real tunes through the workbench window
// on the synthetic model: a search predicted for every configuration and its
// best confirmed live (the window's traffic paused meanwhile and resumed),
// the progress bar at its end, the front in the table and on the scatter, the
// best marked and within the SLO, Apply putting its options in force on the
// window's engine and Export handing them to the dialog; Cancel stopping a
// search and a live confirmation promptly and leaving the panel usable; a bad
// space refused naming the entry; an SLO nothing meets naming the closest; a
// model without a cost profile refused; and a window destroyed mid-run
// cancelling and joining cleanly.

#include "tuner_panel.h"

#include <gtest/gtest.h>

#include <qcustomplot.h>
#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QDoubleSpinBox>
#include <QImage>
#include <QItemSelectionModel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QProgressBar>
#include <QPushButton>
#include <QSet>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTimer>
#include <QToolTip>
#include <chrono>

#include "toy_window.h"
#include "tune_plot.h"

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
  EXPECT_TRUE(meets_slo(row.predicted, 20));
  ASSERT_TRUE(row.live.has_value());  // the one confirmed is the winner
  EXPECT_GT(row.live->measured.throughput_rps, 0);
  EXPECT_FALSE(table->data(table->index(best, TuneTableModel::kLiveP99)).toString().isEmpty());
  ASSERT_EQ(tuner()->confirmed().size(), 1u);
  for (int i = 0; i < table->rowCount(); ++i) {
    if (table->at(i).on_front) continue;
    // Off the front only the best or the confirmed.
    EXPECT_TRUE(i == best || table->at(i).live.has_value()) << i;
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

}  // namespace
}  // namespace batchscope

// The workbench window, offscreen, over a real engine with the synthetic
// model: the batch-size slider changes the options in force, an invalid
// value is explained in place, traffic starts and stops and reaches the
// plots, and the window renders to a picture that is not blank.

#include "workbench_window.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QMouseEvent>
#include <QSet>
#include <QSlider>
#include <QToolTip>
#include <thread>

#include "../net/test_client.h"
#include "synthetic_runner.h"

namespace batchscope {
namespace {

ModelMetadata toy_model() {
  ModelMetadata m;
  m.name = "toy";
  m.max_batch_size = 64;
  m.inputs = {TensorSpec{"data", DType::kFloat32, {-1, 4}, false}};
  m.outputs = {TensorSpec{"output", DType::kFloat32, {-1, 4}, false}};
  return m;
}

class WorkbenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ =
        std::make_unique<Engine>(SyntheticRunner::factory({.fixed_us = 100, .per_item_us = 5}),
                                 Options{.max_batch_size = 16, .max_wait_us = 1000});
    ASSERT_TRUE(engine_->start().ok());
    WorkbenchConfig cfg;
    cfg.model = toy_model();
    cfg.traffic_rate = 2000;
    cfg.start_traffic = false;
    window_ = std::make_unique<WorkbenchWindow>(*engine_, cfg);
    window_->resize(1400, 900);
  }
  void TearDown() override {
    window_.reset();
    engine_->stop();
  }
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<WorkbenchWindow> window_;
};

TEST_F(WorkbenchTest, TheBatchSizeSliderChangesTheOptionsInForce) {
  const uint64_t v0 = engine_->status().options_version;
  window_->batch_slider()->setValue(40);
  window_->apply_now();  // what the debounce would do 100 ms later
  EXPECT_EQ(engine_->status().options.max_batch_size, 40u);
  EXPECT_EQ(engine_->status().options_version, v0 + 1);
  EXPECT_TRUE(window_->problem().isEmpty());
}

TEST_F(WorkbenchTest, AValueAboveTheModelsLimitIsExplainedAndNotApplied) {
  window_->batch_slider()->setValue(100);  // the toy model takes at most 64
  window_->apply_now();
  EXPECT_EQ(engine_->status().options.max_batch_size, 16u);
  EXPECT_TRUE(window_->problem().contains("limit of 64")) << window_->problem().toStdString();
  EXPECT_EQ(window_->batch_slider()->value(), 16);  // the panel shows what is in force
}

TEST_F(WorkbenchTest, TrafficStartsStopsAndReachesThePlots) {
  window_->start_traffic();
  ASSERT_TRUE(window_->traffic_running());
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (window_->traffic_counters().ok.load() < 200) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "no traffic completed";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  window_->stop_traffic();
  EXPECT_FALSE(window_->traffic_running());
  const uint64_t sent = window_->traffic_counters().sent.load();
  EXPECT_EQ(window_->traffic_counters().ok.load() + window_->traffic_counters().rejected.load() +
                window_->traffic_counters().failed.load(),
            sent);  // every request it sent came back
  window_->refresh();
  EXPECT_GT(window_->plotted_windows(), 0);

  // Hovering over the latency panel reads out the exact values there.
  window_->show();
  QWidget* plot = window_->plot_widget();
  const QPoint at(plot->width() - 40, plot->height() / 8);
  QMouseEvent move(QEvent::MouseMove, QPointF(at), QPointF(plot->mapToGlobal(at)), Qt::NoButton,
                   Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(plot, &move);
  EXPECT_TRUE(QToolTip::text().contains("p50: ")) << QToolTip::text().toStdString();
}

TEST_F(WorkbenchTest, TheWindowRendersToAPictureThatIsNotBlank) {
  window_->start_traffic();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (window_->traffic_counters().ok.load() < 300) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  window_->refresh();
  window_->stop_traffic();
  window_->show();
  const QImage img = window_->grab().toImage();
  ASSERT_EQ(img.width(), 1400);
  QSet<QRgb> colours;
  for (int y = 0; y < img.height(); y += 3) {
    for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
  }
  EXPECT_GT(colours.size(), 50);
  const QString path = QDir::temp().filePath("batchscope_workbench_test.png");
  ASSERT_TRUE(window_->export_png(path));
  EXPECT_FALSE(QImage(path).isNull());
}

}  // namespace
}  // namespace batchscope

namespace batchscope {
namespace {

TEST_F(WorkbenchTest, TheServerPanelServesHttpWhileOn) {
  auto port = window_->start_server("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error().message;
  ASSERT_TRUE(window_->server_running());
  {
    test::TestClient c(*port);
    ASSERT_TRUE(c.connected());
    c.send(test::http_request("POST", "/infer", "{\"data\": [1, 2, 3, 4]}"));
    auto r = c.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_NE(r->body.find("\"result\":[3,5,7,9]"), std::string::npos) << r->body;
  }
  window_->stop_server();
  EXPECT_FALSE(window_->server_running());
  test::TestClient after(*port);
  EXPECT_FALSE(after.connected());  // the listener is gone
}

}  // namespace
}  // namespace batchscope

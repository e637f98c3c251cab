// SPDX-License-Identifier: GPL-3.0-or-later
// The workbench window, offscreen, over real engines with the synthetic
// model: the batch-size slider changes the options in force, an invalid
// value is explained in place, traffic starts and stops and reaches the
// plots, the inspector and a recorded run, the window renders to a picture
// that is not blank, the server panel serves HTTP, a model loaded off the
// GUI thread replaces the engine (and a failed load leaves the old one
// serving; options changed during the load carry over; a failed first load
// leaves a window that copes without an engine; closing or destroying the
// window cancels a load instead of waiting for it, and a cancelled load
// starts no engine), a stopped listener's requests are still answered
// safely, configurations load and save, and settings persist.

#include "ui/workbench/workbench_window.h"

#include <gtest/gtest.h>
#include <qcustomplot.h>
#include <stdlib.h>

#include <QAbstractItemModel>
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QMouseEvent>
#include <QPushButton>
#include <QSet>
#include <QSettings>
#include <QSlider>
#include <QTemporaryDir>
#include <QToolTip>
#include <cmath>
#include <future>
#include <thread>

#include "batching/synthetic_runner.h"
#include "model/window_loader.h"
#include "runs/history.h"
#include "runs/history_writer.h"
#include "tests/http/test_client.h"
#include "tests/ui/workbench/toy_window.h"
#include "tuning/cost_cache.h"
#include "ui/runs/runs_panel.h"
#include "ui/workbench/batch_inspector.h"
#include "ui/workbench/batching_panel.h"
#include "ui/workbench/live_plots.h"
#include "ui/workbench/traffic_panel.h"

namespace batchscope {
namespace {

class WorkbenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window_ = std::make_unique<WorkbenchWindow>(toy_config());
    window_->resize(1500, 950);
    ASSERT_NE(window_->engine(), nullptr);
  }
  void TearDown() override { window_.reset(); }
  Engine& engine() { return *window_->engine(); }
  std::unique_ptr<WorkbenchWindow> window_;
};

TEST_F(WorkbenchTest, TheBatchSizeSliderChangesTheOptionsInForce) {
  const uint64_t v0 = engine().status().options_version;
  window_->batch_slider()->setValue(40);
  window_->apply_now();  // what the debounce would do 100 ms later
  EXPECT_EQ(engine().status().options.max_batch_size, 40u);
  EXPECT_EQ(engine().status().options_version, v0 + 1);
  EXPECT_TRUE(window_->problem().isEmpty());
  window_->refresh();  // the next tick confirms the edit
  EXPECT_TRUE(window_->batching()->pending().empty());
}

TEST_F(WorkbenchTest, AValueAboveTheModelsLimitIsExplainedAndNotApplied) {
  window_->batch_slider()->setValue(100);  // the toy model takes at most 64
  window_->apply_now();
  EXPECT_EQ(engine().status().options.max_batch_size, 16u);
  EXPECT_TRUE(window_->problem().contains("limit of 64")) << window_->problem().toStdString();
  EXPECT_EQ(window_->batch_slider()->value(), 16);  // the panel shows what is in force
}

TEST_F(WorkbenchTest, TrafficReachesThePlotsTheInspectorAndARecordedRun) {
  window_->show();  // the inspector takes records only while it can be seen
  window_->runs()->start_recording("first");
  ASSERT_TRUE(window_->start_traffic().ok());
  ASSERT_TRUE(window_->traffic_running());
  wait_for_ok(*window_, 300);
  window_->stop_traffic();
  EXPECT_FALSE(window_->traffic_running());
  const LoadCounters& c = window_->traffic()->counters();
  EXPECT_EQ(c.ok.load() + c.rejected.load() + c.failed.load(), c.sent.load());
  window_->refresh();
  EXPECT_GT(window_->plotted_windows(), 0);
  EXPECT_GT(window_->plots()->batches_in_span(), 0u);
  EXPECT_GT(window_->inspector()->model()->rowCount(), 0);
  window_->runs()->stop_recording();
  ASSERT_EQ(window_->runs()->run_count(), 1);
  EXPECT_EQ(window_->runs()->run(0).summary.ok, c.ok.load());

  // Hovering over the latency panel reads out the exact values there: at
  // the newest window with a p50 (how far back that lies depends on how long
  // the 300 answers took, so no fixed pixel is sure to hit one).
  QCustomPlot* plot = window_->plots()->plot();
  QCPGraph* p50 = nullptr;
  for (int i = 0; i < plot->graphCount(); ++i)
    if (plot->graph(i)->name() == "p50") p50 = plot->graph(i);
  ASSERT_NE(p50, nullptr);
  // The readout shows the point at or before the mouse: aim between the
  // newest p50 and the point after it.
  double newest = std::nan(""), after = std::nan("");
  for (auto it = p50->data()->constBegin(); it != p50->data()->constEnd(); ++it) {
    if (!std::isnan(it->value)) {
      newest = it->key;
      after = std::nan("");
    } else if (std::isnan(after)) {
      after = it->key;
    }
  }
  ASSERT_FALSE(std::isnan(newest));
  const QCPAxis* time = p50->keyAxis();
  const double right =
      std::isnan(after) ? time->pixelToCoord(time->coordToPixel(newest) + 4) : (newest + after) / 2;
  const int x = static_cast<int>(std::ceil(time->coordToPixel(right)));
  const QPoint at(x, p50->keyAxis()->axisRect()->center().y());
  QMouseEvent move(QEvent::MouseMove, QPointF(at), QPointF(plot->mapToGlobal(at)), Qt::NoButton,
                   Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(plot, &move);
  EXPECT_TRUE(QToolTip::text().contains("p50: ")) << QToolTip::text().toStdString();
}

// The Server tab's Record switch: what a real client sends to the window's
// listener while it is on is kept as a run of kind serve, in the Runs tab and
// the run history.
TEST_F(WorkbenchTest, TheServerTabsRecordSwitchKeepsTheClientsRequestsAsAServeRun) {
  QTemporaryDir dir;
  auto store = History::open(dir.filePath("h.sqlite").toStdString());
  ASSERT_TRUE(store.ok());
  HistoryWriter writer(std::move(*store));
  window_->runs()->set_history(&writer);
  QCheckBox* record = nullptr;
  for (QCheckBox* c : window_->findChildren<QCheckBox*>())
    if (c->text() == "Record as a serve run") record = c;
  ASSERT_NE(record, nullptr);
  auto port = window_->start_server("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error().message;
  record->setChecked(true);
  ASSERT_TRUE(window_->runs()->recording());
  test::TestClient client(*port);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(client.send(test::http_request("POST", "/infer", "{\"data\": [1, 2, 3, 4]}")));
    auto r = client.read(10000);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 200) << r->body;
  }
  window_->refresh();  // the poll that hands the records to the recording
  record->setChecked(false);
  EXPECT_FALSE(window_->runs()->recording());
  ASSERT_EQ(window_->runs()->run_count(), 1);
  EXPECT_EQ(window_->runs()->run(0).kind, "serve");
  EXPECT_EQ(window_->runs()->run(0).summary.ok, 50u);
  writer.flush();
  auto reader = History::open(dir.filePath("h.sqlite").toStdString(), {.read_only = true});
  auto runs = (*reader)->list({.kind = "serve"});
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].requests_kept, 50u);
  window_->stop_server();
  window_->runs()->set_history(nullptr);  // the writer goes before the window
}

// Real traffic through a real engine, recorded into a run history file: the
// run is there, with every answer the traffic counted, while the window is
// still open (the writer's thread wrote it as it went).
TEST_F(WorkbenchTest, ARecordedRunGoesIntoTheRunHistory) {
  QTemporaryDir dir;
  auto store = History::open(dir.filePath("h.sqlite").toStdString());
  ASSERT_TRUE(store.ok());
  HistoryWriter writer(std::move(*store));
  window_->runs()->set_context_provider(
      [] { return std::string(R"({"model": {"path": "toy"}})"); });
  window_->runs()->set_history(&writer);
  window_->runs()->start_recording("kept");
  ASSERT_TRUE(window_->start_traffic().ok());
  wait_for_ok(*window_, 300);
  window_->stop_traffic();
  window_->refresh();  // the last poll's records reach the recording
  window_->runs()->stop_recording();
  writer.flush();
  auto reader = History::open(dir.filePath("h.sqlite").toStdString(), {.read_only = true});
  auto runs = (*reader)->list();
  ASSERT_EQ(runs->size(), 1u);
  const HistoryRun& r = (*runs)[0];
  EXPECT_EQ(r.label, "kept");
  EXPECT_TRUE(r.finished());
  EXPECT_GE(r.requests_kept, window_->runs()->run(0).summary.sent);
  auto data = (*reader)->load(r.id);
  EXPECT_GT(data->batches.size(), 0u);
  EXPECT_EQ(summarize_run(*data).ok, window_->runs()->run(0).summary.ok);
  window_->runs()->set_history(nullptr);  // the writer goes before the window
}

// A recorded run is a live run of the model here: it refines the model's
// kept cost (its send lag left out: a recording knows arrivals, not intents).
TEST(WorkbenchKeptCost, ARecordedRunRefinesTheModelsKeptCost) {
  const TempCacheHome cache("batchscope_window_cache");
  WorkbenchConfig cfg = toy_config();
  cfg.loaded->cost_key = CostKey{"toy", "synthetic:100,5,0,0,spin", "cpu", "{}"};
  const std::string path = cost_cache_path(*cfg.loaded->cost_key, cost_cache_dir());
  // Tests run beside each other (ctest -j): the machine is busy by design.
  ::setenv("BATCHSCOPE_REFINE_ALWAYS", "1", 1);
  // Kept: the formula, measured live at b = 1 only, slower than it is
  // (within what one run may move: cost_drift.h).
  const CostModel before = CostModel::from_synthetic(*cfg.loaded->synthetic, 64)
                               .calibrated(*CostModel::from_points({{1, 120, 0, {}, true, 10}}));
  ASSERT_TRUE(write_cached_cost(path, *cfg.loaded->cost_key, before).ok());
  {
    WorkbenchWindow window(cfg);
    window.runs()->start_recording("refines");
    ASSERT_TRUE(window.start_traffic().ok());
    wait_for_ok(window, 500);
    window.stop_traffic();
    window.refresh();
    window.runs()->stop_recording();
    window.wait_for_kept_cost();
  }
  auto after = read_cached_cost(path, *cfg.loaded->cost_key);
  ASSERT_TRUE(after.ok()) << after.error().message;
  ASSERT_TRUE(after->has_value());
  ::unsetenv("BATCHSCOPE_REFINE_ALWAYS");
  EXPECT_GT((*after)->live_batches(1), before.live_batches(1));
  EXPECT_FALSE((*after)->has_send_lag());
  EXPECT_TRUE((*after)->has_overhead());
  ASSERT_EQ((*after)->evidence().size(), 1u);  // the recording, kept as evidence
  EXPECT_TRUE((*after)->evidence()[0].busy.empty());
}

TEST_F(WorkbenchTest, TheWindowRendersToAPictureThatIsNotBlank) {
  ASSERT_TRUE(window_->start_traffic().ok());
  wait_for_ok(*window_, 300);
  window_->refresh();
  window_->stop_traffic();
  window_->show();
  const QImage img = window_->grab().toImage();
  ASSERT_EQ(img.width(), 1500);
  QSet<QRgb> colours;
  for (int y = 0; y < img.height(); y += 3) {
    for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
  }
  EXPECT_GT(colours.size(), 50);
  const QString path = QDir::temp().filePath("batchscope_workbench_test.png");
  ASSERT_TRUE(window_->export_png(path));
  EXPECT_FALSE(QImage(path).isNull());
}

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

// The window's listener keeps to --max-connections as serve does: at the
// limit the longest-idle keep-alive connection makes room for a new one.
TEST(WorkbenchListener, KeepsToItsConnectionLimit) {
  WorkbenchConfig cfg = toy_config();
  cfg.max_connections = 2;
  WorkbenchWindow w(cfg);
  auto port = w.start_server("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error().message;
  test::TestClient oldest(*port), newer(*port);
  for (test::TestClient* c : {&oldest, &newer}) {
    ASSERT_TRUE(c->connected());
    c->send(test::http_request("GET", "/health", ""));
    auto r = c->read();
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
  }
  test::TestClient third(*port);
  ASSERT_TRUE(third.connected());
  third.send(test::http_request("GET", "/metrics", ""));
  auto r = third.read();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("batchscope_http_connections_max 2\n"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("batchscope_http_connections_closed_for_room_total 1\n"),
            std::string::npos)
      << r->body;
  EXPECT_TRUE(oldest.closed_by_peer());
  newer.send(test::http_request("GET", "/health", ""));
  auto still = newer.read();
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 200);
  w.stop_server();
}

TEST_F(WorkbenchTest, MetricsScrapesDoNotTakeRecordsFromThePlots) {
  auto port = window_->start_server("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error().message;
  window_->show();
  ASSERT_TRUE(window_->start_traffic().ok());
  wait_for_ok(*window_, 300);
  window_->stop_traffic();
  window_->refresh();
  test::TestClient c(*port);
  ASSERT_TRUE(c.connected());
  c.send(test::http_request("GET", "/metrics", ""));
  auto r = c.read();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  // The scrape reports the window's totals...
  const auto at = r->body.find("batchscope_batch_size_count ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stoull(r->body.substr(at + 28)), 0u);
  // ...and the plots still see every batch.
  window_->refresh();
  EXPECT_GT(window_->plots()->batches_in_span(), 0u);
}

TEST_F(WorkbenchTest, ConfigurationsSaveAndLoadInBothFormats) {
  QTemporaryDir dir;
  const QString json = dir.filePath("c.json");
  window_->batch_slider()->setValue(24);
  window_->apply_now();
  ASSERT_TRUE(window_->save_config(json).ok());
  window_->batch_slider()->setValue(8);
  window_->apply_now();
  ASSERT_TRUE(window_->load_config(json).ok());
  EXPECT_EQ(engine().status().options.max_batch_size, 24u);

  const QString pbtxt = dir.filePath("config.pbtxt");
  QFile f(pbtxt);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write("max_batch_size: 32\ndynamic_batching {\n  max_queue_delay_microseconds: 750\n}\n");
  f.close();
  const Status s = window_->load_config(pbtxt);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(engine().status().options.max_batch_size, 32u);
  EXPECT_EQ(engine().status().options.max_wait_us, 750);

  QFile bad(dir.filePath("bad.json"));
  ASSERT_TRUE(bad.open(QIODevice::WriteOnly));
  bad.write("{\"max_batch_size\": \"many\"}");
  bad.close();
  const Status refused = window_->load_config(bad.fileName());
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("max_batch_size"), std::string::npos) << refused.message();
  EXPECT_EQ(engine().status().options.max_batch_size, 32u);  // unchanged

  // A file too large to be a configuration is refused before it is read.
  QFile huge(dir.filePath("huge.json"));
  ASSERT_TRUE(huge.open(QIODevice::WriteOnly));
  huge.write(QByteArray((1 << 20) + 1, ' '));
  huge.close();
  const Status too_big = window_->load_config(huge.fileName());
  EXPECT_FALSE(too_big.ok());
  EXPECT_NE(too_big.message().find("is 1048577 bytes; a configuration is at most 1 MiB"),
            std::string::npos)
      << too_big.message();
}

TEST(WorkbenchLoad, AModelLoadedOffTheGuiThreadReplacesTheEngineAndTrafficResumes) {
  std::atomic<int> calls{0};
  WorkbenchConfig cfg = toy_config();
  cfg.loader = toy_loader(&calls);
  WorkbenchWindow w(cfg);
  ASSERT_TRUE(w.start_traffic().ok());
  wait_for_ok(w, 50);
  Engine* before = w.engine();
  ModelRequest r;
  r.path = "toy8.pt";
  w.load_model(r);
  ASSERT_TRUE(w.wait_loaded(20'000));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_NE(w.engine(), before);
  EXPECT_EQ(w.model().metadata.name, "toy8");
  EXPECT_EQ(w.engine()->status().options.max_batch_size, 8u);  // clamped to the new model's
  EXPECT_TRUE(w.windowTitle().contains("toy8"));
  ASSERT_TRUE(w.traffic_running());  // it resumed on the new engine
  const uint64_t ok_before = w.engine()->status().counters.ok;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (w.engine()->status().counters.ok < ok_before + 50) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up);
    QApplication::processEvents();
  }
  w.stop_traffic();
}

TEST(WorkbenchLoad, AFailedLoadIsShownAndTheOldEngineKeepsServing) {
  std::atomic<int> calls{0};
  WorkbenchConfig cfg = toy_config();
  cfg.loader = toy_loader(&calls);
  WorkbenchWindow w(cfg);
  Engine* before = w.engine();
  ModelRequest r;
  r.path = "missing.pt";
  w.load_model(r);
  EXPECT_TRUE(w.wait_loaded(20'000));
  EXPECT_EQ(w.engine(), before);
  EXPECT_EQ(w.model().metadata.name, "toy");
  EXPECT_TRUE(w.model_panel()->error_text().contains("missing.pt"))
      << w.model_panel()->error_text().toStdString();
}

// A Python model through the window's own loader: its workers start, the
// panel says it runs in them, and traffic flows through them.
TEST(WorkbenchLoad, APythonModelLoadsAndThePanelShowsItsWorkers) {
#ifndef BATCHSCOPE_WITH_TORCH
  GTEST_SKIP() << "the window measures a model's t(b) with core/torch's profile, not in this build";
#endif
  TempCacheHome cache("workbench_python");
  WorkbenchConfig cfg = toy_config();
  cfg.loader = make_model_loader(1);
  WorkbenchWindow w(cfg);
  ModelRequest r;
  r.path = std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/python/handlers/faults.py";
  r.options.max_batch_size = 8;
  w.load_model(r);
  ASSERT_TRUE(w.wait_loaded(60'000));
  ASSERT_EQ(w.model().metadata.name, "faults") << w.model_panel()->error_text().toStdString();
  EXPECT_EQ(w.model().metadata.platform, "python");
  ASSERT_TRUE(w.model().workers);
  EXPECT_TRUE(w.model_panel()->runtime_text().startsWith("Python, "))
      << w.model_panel()->runtime_text().toStdString();
  ASSERT_TRUE(w.start_traffic().ok());
  wait_for_ok(w, 50);
  EXPECT_GE(w.model().workers->health().ready, 1);
  EXPECT_TRUE(w.model_panel()->runtime_text().contains("worker process"));
  w.stop_traffic();
}

TEST(WorkbenchLoad, TheFirstModelLoadsOffTheGuiThreadAndTrafficStarts) {
  std::atomic<int> calls{0};
  WorkbenchConfig cfg;
  cfg.loader = toy_loader(&calls);
  cfg.model.path = "toy8.pt";
  cfg.start_traffic = true;
  cfg.traffic_rate = 500;
  WorkbenchWindow w(cfg);
  EXPECT_EQ(w.engine(), nullptr);  // the window is up before the model
  ASSERT_TRUE(w.wait_loaded(20'000));
  EXPECT_TRUE(w.traffic_running());
  w.stop_traffic();
}

TEST(WorkbenchLoad, StartingOptionsAreClampedToAReadyModelsLimit) {
  WorkbenchConfig cfg = toy_config();
  cfg.options.max_batch_size = 128;  // the toy model takes at most 64
  WorkbenchWindow w(cfg);
  ASSERT_NE(w.engine(), nullptr);
  EXPECT_EQ(w.engine()->status().options.max_batch_size, 64u);
}

TEST(WorkbenchLoad, OptionsChangedWhileAModelLoadsCarryOverToIt) {
  std::atomic<bool> release{false};
  WorkbenchConfig cfg = toy_config();
  cfg.loader = [&release](const ModelRequest&, const LoadProgress&) -> Expected<LoadedModel> {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return toy_loaded("toy8", 8);
  };
  WorkbenchWindow w(cfg);
  struct Release {  // a failed assertion must not leave the loader waiting
    std::atomic<bool>& release;
    ~Release() { release = true; }
  } guard{release};
  ModelRequest r;
  r.path = "toy8.pt";
  w.load_model(r);
  ASSERT_TRUE(w.loading());
  w.load_model(r);  // a second request while one loads is turned away, not queued
  // Changed while it loads, as the panel, a configuration file or HTTP would.
  ASSERT_TRUE(
      w.engine()
          ->set_options(Options{
              .max_batch_size = 16, .max_wait_us = 250, .strategy = StrategyKind::kAdaptive})
          .ok());
  release = true;
  ASSERT_TRUE(w.wait_loaded(20'000));
  const Options o = w.engine()->status().options;
  EXPECT_EQ(o.max_wait_us, 250);
  EXPECT_EQ(o.strategy, StrategyKind::kAdaptive);
  EXPECT_EQ(o.max_batch_size, 8u);  // clamped to the new model's limit
  w.refresh();
  EXPECT_TRUE(w.batching()->pending().empty());
}

TEST(WorkbenchLoad, AWindowWithoutALoaderSaysSoAndKeepsTheModelPanelUsable) {
  WorkbenchWindow w(toy_config());  // a ready model and no loader
  w.model_panel()->load_button()->click();
  EXPECT_FALSE(w.loading());
  EXPECT_TRUE(w.model_panel()->load_button()->isEnabled());
  EXPECT_FALSE(w.model_panel()->error_text().isEmpty());
}

TEST(WorkbenchLoad, AFailedFirstLoadLeavesAWindowThatCopesWithoutAnEngine) {
  std::atomic<int> calls{0};
  WorkbenchConfig cfg;
  cfg.loader = toy_loader(&calls);
  cfg.model.path = "missing.pt";
  cfg.start_traffic = true;
  cfg.listen_port = 0;
  WorkbenchWindow w(cfg);
  EXPECT_FALSE(w.wait_loaded(20'000));
  ASSERT_EQ(w.engine(), nullptr);
  w.show();
  w.refresh();
  for (int t : {TrafficPanel::kInProcess, TrafficPanel::kSelfHttp, TrafficPanel::kUrl}) {
    w.traffic()->set_target(static_cast<TrafficPanel::Target>(t), "http://127.0.0.1:9/infer");
    EXPECT_FALSE(w.start_traffic().ok()) << t;
    EXPECT_FALSE(w.traffic_running()) << t;
  }
  EXPECT_FALSE(w.start_server("127.0.0.1", 0).ok());
  QTemporaryDir dir;
  const QString json = dir.filePath("c.json");
  EXPECT_TRUE(w.save_config(json).ok());
  const Status loaded = w.load_config(json);
  EXPECT_FALSE(loaded.ok());
  EXPECT_NE(loaded.message().find("no model"), std::string::npos) << loaded.message();
  w.batch_slider()->setValue(4);
  w.apply_now();
  EXPECT_FALSE(w.problem().isEmpty());
  w.refresh();
}

// A loader that stands for a large model: it holds its step until the load
// is cancelled, or gives up after a real-time safety limit (the window then
// waited for the whole load, and the test fails). `model` is what it returns
// either way, as a loader does whose last step was already done.
struct BlockingLoader {
  std::promise<void> started;
  std::promise<bool> saw_cancel;
  std::optional<LoadedModel> model;

  ModelLoader loader() {
    return [this](const ModelRequest& r, const LoadProgress&) -> Expected<LoadedModel> {
      started.set_value();
      const bool cancelled = r.cancel.wait_for(std::chrono::seconds(20));
      saw_cancel.set_value(cancelled);
      if (model) return *model;
      if (cancelled) return Error{ErrorCode::kCancelled, "loading " + r.path + " was cancelled"};
      return toy_loaded("toy8", 8);
    };
  }
};

TEST(WorkbenchLoad, DestroyingTheWindowWhileAModelLoadsCancelsTheLoadInsteadOfWaitingForIt) {
  BlockingLoader slow;
  auto started = slow.started.get_future();
  auto saw_cancel = slow.saw_cancel.get_future();
  WorkbenchConfig cfg = toy_config();
  cfg.loader = slow.loader();
  auto w = std::make_unique<WorkbenchWindow>(cfg);
  ModelRequest r;
  r.path = "large.pt";
  w->load_model(r);
  ASSERT_EQ(started.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  ASSERT_TRUE(w->loading());
  w.reset();  // joins the load thread: returns once the loader has seen the token
  ASSERT_EQ(saw_cancel.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_TRUE(saw_cancel.get()) << "the window waited for the whole load";
  QApplication::processEvents();  // nothing posted by the load reaches the window that went
}

TEST(WorkbenchLoad, AModelReadyAfterTheCancelStartsNoEngine) {
  std::atomic<int> runners{0};
  BlockingLoader late;
  late.model = toy_loaded("toy8", 8);
  late.model->factory = [&runners, inner = late.model->factory](int lane) {
    ++runners;
    return inner(lane);
  };
  auto started = late.started.get_future();
  auto saw_cancel = late.saw_cancel.get_future();
  WorkbenchConfig cfg;  // the first model: the window has no engine yet
  cfg.loader = late.loader();
  cfg.model.path = "large.pt";
  cfg.start_traffic = true;
  auto w = std::make_unique<WorkbenchWindow>(cfg);
  ASSERT_EQ(started.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  w.reset();
  EXPECT_TRUE(saw_cancel.get());
  EXPECT_EQ(runners.load(), 0);  // the engine that would have served it never started
}

TEST(WorkbenchLoad, ClosingTheWindowCancelsTheLoadAndTheOldEngineKeepsServing) {
  BlockingLoader slow;
  auto started = slow.started.get_future();
  auto saw_cancel = slow.saw_cancel.get_future();
  WorkbenchConfig cfg = toy_config();
  cfg.loader = slow.loader();
  WorkbenchWindow w(cfg);
  w.show();
  Engine* before = w.engine();
  ModelRequest r;
  r.path = "large.pt";
  w.load_model(r);
  ASSERT_EQ(started.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  w.close();
  EXPECT_TRUE(w.wait_loaded(20'000));  // the old engine is still there
  EXPECT_TRUE(saw_cancel.get());
  EXPECT_EQ(w.engine(), before);
  EXPECT_EQ(w.model().metadata.name, "toy");
  EXPECT_TRUE(w.model_panel()->error_text().contains("cancelled"))
      << w.model_panel()->error_text().toStdString();
  EXPECT_TRUE(w.model_panel()->load_button()->isEnabled());
}

TEST(WorkbenchServer, ARequestStillRunningWhenTheListenerStopsIsAnsweredSafely) {
  WorkbenchConfig cfg = toy_config();
  // A batch takes 0.8 s (sleeping): the listener stops while it runs.
  cfg.loaded->factory =
      SyntheticRunner::factory({.fixed_us = 800'000, .per_item_us = 0, .busy_spin = false});
  cfg.options.max_wait_us = 0;
  WorkbenchWindow w(cfg);
  auto port = w.start_server("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error().message;
  {
    test::TestClient c(*port);
    ASSERT_TRUE(c.connected());
    c.send(test::http_request(
        "POST", "/v2/models/toy/infer",
        R"({"inputs":[{"name":"data","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]})"));
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (w.engine()->status().busy_lanes == 0) {
      ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "the batch never ran";
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }  // the client leaves; a running batch cannot be cancelled
  w.stop_server();
  // The batch returns after the listener and its service are gone from the
  // window; its completion still builds the KServe answer through the service.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (EngineStatus st = w.engine()->status(); st.counters.ok == 0 || st.busy_lanes > 0;
       st = w.engine()->status()) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "the batch never returned";
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(WorkbenchSettings, TrafficServerAndViewSettingsPersist) {
  QSettings().clear();
  {
    WorkbenchConfig cfg = toy_config();
    cfg.restore_settings = true;
    WorkbenchWindow w(cfg);
    w.traffic()->set_rate(777);  // the window's own choice: not kept
    w.save_settings();
    EXPECT_FALSE(QSettings().contains("traffic/rate"));
    w.traffic()->findChild<QDoubleSpinBox*>("rate")->setValue(1234);  // the user's
    w.traffic()->set_pattern("burst");
    w.save_settings();
  }
  {
    // --rate wins over the saved one.
    WorkbenchConfig given = toy_config();
    given.restore_settings = true;
    given.traffic_rate = 99;
    given.traffic_rate_given = true;
    WorkbenchWindow w(given);
    EXPECT_DOUBLE_EQ(w.traffic()->rate(), 99);
  }
  WorkbenchConfig cfg = toy_config();
  cfg.restore_settings = true;
  WorkbenchWindow w(cfg);
  EXPECT_DOUBLE_EQ(w.traffic()->rate(), 1234);
  EXPECT_EQ(w.traffic()->pattern(), "burst");
  EXPECT_EQ(QSettings().value("options/json").toString().contains("\"max_batch_size\":16"), true)
      << QSettings().value("options/json").toString().toStdString();
  QSettings().clear();
}

}  // namespace
}  // namespace batchscope

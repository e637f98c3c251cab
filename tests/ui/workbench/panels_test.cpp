// SPDX-License-Identifier: GPL-3.0-or-later
// The batching and traffic panels on their own, over a real engine with the
// synthetic model: an edited control stays marked until the engine confirms
// its value (or a later change replaces it); a refused value is explained
// and the controls return to what is in force; an apply changes only the
// edited fields; traffic reaches the engine in-process, through this
// process's HTTP listener, and through a URL; without a model it is refused;
// its pattern and target are locked while it runs.

#include <gtest/gtest.h>

#include <QApplication>
#include <QComboBox>
#include <QLineEdit>
#include <QSlider>
#include <thread>

#include <QSpinBox>
#include "api/inference_service.h"
#include "batching/synthetic_runner.h"

#include "http/http_server.h"
#include "tuning/adaptive_planner.h"
#include "ui/workbench/batching_panel.h"
#include "ui/workbench/traffic_panel.h"

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

std::unique_ptr<Engine> started_engine() {
  auto e = std::make_unique<Engine>(SyntheticRunner::factory({.fixed_us = 50, .per_item_us = 2}),
                                    Options{.max_batch_size = 16, .max_wait_us = 1000});
  e->set_adaptive_planner(make_adaptive_plan);
  EXPECT_TRUE(e->start().ok());
  return e;
}

TEST(BatchingPanel, AnEditStaysMarkedUntilTheEngineConfirmsIt) {
  auto engine = started_engine();
  BatchingPanel panel([&](const Options& o) { return engine->set_options(o); });
  panel.set_model_limit(64);
  panel.show_status(engine->status());
  EXPECT_TRUE(panel.pending().empty());

  panel.batch_slider()->setValue(40);
  EXPECT_EQ(panel.pending(), std::set<std::string>{"max_batch_size"});
  panel.show_status(engine->status());  // not applied yet: still marked, value kept
  EXPECT_EQ(panel.batch_slider()->value(), 40);
  EXPECT_EQ(panel.pending().size(), 1u);

  panel.apply_now();
  EXPECT_EQ(engine->status().options.max_batch_size, 40u);
  EXPECT_EQ(panel.pending().size(), 1u);  // marked until a status shows it in force
  panel.show_status(engine->status());
  EXPECT_TRUE(panel.pending().empty());
  EXPECT_TRUE(panel.in_force_text().contains("batch ≤ 40")) << panel.in_force_text().toStdString();
}

// A prepare stage that hands each request on and keeps the sizes it was given.
class CountingStage final : public Engine::PrepareStage {
 public:
  void prepare(Tensors&& input, Next next) override { next(std::move(input)); }
  Status configure(const Options& o) override {
    sizes.push_back(o.preprocess_workers);
    return Status::Ok();
  }
  std::vector<uint32_t> sizes;
};

TEST(BatchingPanel, PreprocessWorkersApplyLiveForAModelWithPreprocessAlone) {
  auto stage = std::make_shared<CountingStage>();
  Engine engine(SyntheticRunner::factory({.fixed_us = 50, .per_item_us = 2}),
                Options{.max_batch_size = 16, .max_wait_us = 1000});
  ASSERT_TRUE(engine.set_prepare_stage(stage).ok());
  ASSERT_TRUE(engine.start().ok());
  BatchingPanel panel([&](const Options& o) { return engine.set_options(o); });
  panel.set_model_limit(64);
  QSpinBox* workers = panel.preprocess_workers();
  ASSERT_NE(workers, nullptr);
  EXPECT_FALSE(workers->isEnabled());  // until the model says it has preprocess
  EXPECT_EQ(workers->toolTip(), "The model has no preprocess");
  panel.set_preprocess(true);
  EXPECT_TRUE(workers->isEnabled());
  panel.show_status(engine.status());
  EXPECT_EQ(workers->value(), 1);
  workers->setValue(3);
  EXPECT_EQ(panel.pending(), std::set<std::string>{"preprocess_workers"});
  panel.apply_now();
  EXPECT_EQ(engine.status().options.preprocess_workers, 3u);
  EXPECT_EQ(stage->sizes, (std::vector<uint32_t>{1, 3}));
  panel.show_status(engine.status());
  EXPECT_TRUE(panel.pending().empty());
  engine.stop();
}

TEST(BatchingPanel, ARefusedValueIsExplainedAndTheControlsReturnToWhatIsInForce) {
  auto engine = started_engine();
  BatchingPanel panel([&](const Options& o) { return engine->set_options(o); });
  panel.set_model_limit(64);
  panel.show_status(engine->status());
  panel.batch_slider()->setValue(100);
  panel.apply_now();
  EXPECT_TRUE(panel.problem().contains("limit of 64")) << panel.problem().toStdString();
  EXPECT_EQ(panel.batch_slider()->value(), 16);
  EXPECT_TRUE(panel.pending().empty());
  EXPECT_EQ(engine->status().options.max_batch_size, 16u);

  panel.strategy()->setCurrentIndex(1);  // adaptive: accepted
  panel.apply_now();
  EXPECT_TRUE(panel.problem().isEmpty());
  EXPECT_EQ(engine->status().options.strategy, StrategyKind::kAdaptive);
}

TEST(BatchingPanel, ThePaddingPolicyAndItsBucketsApplyLiveAndBadBucketsAreNamed) {
  auto engine = started_engine();
  BatchingPanel panel([&](const Options& o) { return engine->set_options(o); });
  panel.set_model_limit(64);
  panel.show_status(engine->status());
  EXPECT_EQ(panel.length_buckets()->text(), "32,64,128,256");
  panel.padding()->setCurrentIndex(1);  // buckets
  panel.length_buckets()->setText("16, 48");
  emit panel.length_buckets()->editingFinished();
  EXPECT_EQ(panel.pending(), (std::set<std::string>{"length_buckets", "padding"}));
  panel.apply_now();
  EXPECT_TRUE(panel.problem().isEmpty()) << panel.problem().toStdString();
  EXPECT_EQ(engine->status().options.padding, Padding::kBuckets);
  EXPECT_EQ(length_buckets_text(engine->status().options), "16,48");
  panel.show_status(engine->status());
  EXPECT_TRUE(panel.pending().empty());
  EXPECT_TRUE(panel.in_force_text().contains("padding buckets (16,48)"))
      << panel.in_force_text().toStdString();

  panel.length_buckets()->setText("48,16");
  emit panel.length_buckets()->editingFinished();
  panel.apply_now();
  EXPECT_TRUE(panel.problem().contains("'48,16': the lengths must rise"))
      << panel.problem().toStdString();
  EXPECT_EQ(panel.length_buckets()->text(), "16,48");  // back to what is in force
  EXPECT_EQ(length_buckets_text(engine->status().options), "16,48");
}

TEST(BatchingPanel, AnApplyChangesOnlyTheEditedFields) {
  // Values the controls cannot show exactly: 2505 µs (two decimals of a ms)
  // and a queue capacity the panel never touched.
  auto engine = std::make_unique<Engine>(
      SyntheticRunner::factory({.fixed_us = 50, .per_item_us = 2}),
      Options{.max_batch_size = 16, .max_wait_us = 2505, .queue_capacity = 777});
  engine->set_adaptive_planner(make_adaptive_plan);
  ASSERT_TRUE(engine->start().ok());
  BatchingPanel panel([&](const Options& o) { return engine->set_options(o); });
  panel.set_model_limit(64);
  panel.show_status(engine->status());
  panel.batch_slider()->setValue(40);
  panel.apply_now();
  EXPECT_TRUE(panel.problem().isEmpty()) << panel.problem().toStdString();
  const Options o = engine->status().options;
  EXPECT_EQ(o.max_batch_size, 40u);
  EXPECT_EQ(o.max_wait_us, 2505);
  EXPECT_EQ(o.queue_capacity, 777u);

  // A max_wait above the slider's 1 s stays what it is too.
  ASSERT_TRUE(engine->set_options(Options{.max_batch_size = 40, .max_wait_us = 5'000'000}).ok());
  panel.show_status(engine->status());
  panel.strategy()->setCurrentIndex(1);
  panel.apply_now();
  EXPECT_EQ(engine->status().options.max_wait_us, 5'000'000);
  EXPECT_EQ(engine->status().options.strategy, StrategyKind::kAdaptive);
}

TEST(BatchingPanel, AnEditReplacedByAnotherChangeIsNotLeftMarked) {
  auto engine = started_engine();
  BatchingPanel panel([&](const Options& o) { return engine->set_options(o); });
  panel.set_model_limit(64);
  panel.show_status(engine->status());
  panel.batch_slider()->setValue(40);
  panel.apply_now();
  // Someone else (an HTTP client, a configuration file) sets 24 before the tick.
  ASSERT_TRUE(engine->set_options(Options{.max_batch_size = 24, .max_wait_us = 1000}).ok());
  panel.show_status(engine->status());
  EXPECT_TRUE(panel.pending().empty());
  EXPECT_EQ(panel.batch_slider()->value(), 24);  // the control shows what is in force
  EXPECT_FALSE(panel.in_force_text().contains("applying")) << panel.in_force_text().toStdString();
}

// Runs traffic until `n` requests came back ok, then stops it.
void run_until_ok(TrafficPanel& t, uint64_t n) {
  ASSERT_TRUE(t.start().ok()) << t.error().toStdString();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (t.counters().ok.load() < n) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "no traffic completed";
    QApplication::processEvents();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  t.stop();
  EXPECT_EQ(t.counters().ok + t.counters().rejected + t.counters().failed, t.counters().sent);
}

class TrafficPanelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = started_engine();
    service_ = std::make_unique<InferenceService>(*engine_, ServiceInfo{toy_model(), "cpu", "t"});
    server_ = std::make_unique<HttpServer>(
        [this](HttpRequest&& req, Responder r) { service_->handle(std::move(req), r); });
    service_->set_server(server_.get());
  }
  void TearDown() override {
    server_->stop(1000);
    engine_->stop();
  }
  TrafficHooks hooks() {
    return TrafficHooks{.engine = [this] { return engine_.get(); },
                        .model = [] { return toy_model(); },
                        .listen = [this]() -> Expected<Url> {
                          ++listen_calls_;
                          auto port = server_->start("127.0.0.1", 0);
                          if (!port) return port.error();
                          return Url{"127.0.0.1", *port, "/infer", ""};
                        }};
  }
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<HttpServer> server_;
  int listen_calls_ = 0;
};

TEST_F(TrafficPanelTest, InProcessTrafficReachesTheEngine) {
  TrafficPanel t(hooks(), 2000);
  run_until_ok(t, 200);
  EXPECT_GE(engine_->status().counters.ok, 200u);
  EXPECT_EQ(t.target_name(), "inproc");
  EXPECT_EQ(server_->requests(), 0u);
}

TEST_F(TrafficPanelTest, LengthsAreRefusedForAModelWhoseInputsDoNotVary) {
  TrafficPanel t(hooks(), 2000);
  t.set_lengths("lognormal:32,1,256");
  const Status s = t.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has no input that varies in length"), std::string::npos)
      << s.message();
  EXPECT_FALSE(t.running());
  EXPECT_EQ(t.error().toStdString(), s.message());
  t.set_lengths("");
  run_until_ok(t, 50);
}

TEST_F(TrafficPanelTest, ABadLengthsFieldIsNamedAndQuoted) {
  TrafficHooks h = hooks();
  h.model = [] {
    ModelMetadata m = toy_model();
    m.inputs[0].shape = {-1, -1};
    m.inputs[0].max_shape = {-1, 64};
    return m;
  };
  TrafficPanel t(h, 2000);
  t.set_lengths("lognormal:x");
  const Status s = t.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Lengths"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("lognormal:x"), std::string::npos) << s.message();
  EXPECT_FALSE(t.running());
}

TEST_F(TrafficPanelTest, SelfHttpStartsTheListenerAndGoesThroughIt) {
  TrafficPanel t(hooks(), 2000);
  t.set_target(TrafficPanel::kSelfHttp);
  run_until_ok(t, 200);
  EXPECT_EQ(listen_calls_, 1);
  EXPECT_GE(server_->requests(), 200u);
}

TEST_F(TrafficPanelTest, AUrlTargetSpeaksHttpToThatServer) {
  auto port = server_->start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  TrafficPanel t(hooks(), 2000);
  t.set_target(TrafficPanel::kUrl, QString("http://127.0.0.1:%1/infer").arg(*port));
  run_until_ok(t, 200);
  EXPECT_GE(server_->requests(), 200u);
  EXPECT_EQ(listen_calls_, 0);
}

TEST_F(TrafficPanelTest, AUrlTargetGetsTheTokenGivenForIt) {
  service_->set_access(ServiceAccess{.token = "remote-secret"});
  auto port = server_->start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  TrafficPanel t(hooks(), 2000);
  t.set_target(TrafficPanel::kUrl, QString("http://127.0.0.1:%1/infer").arg(*port));
  ASSERT_TRUE(t.start().ok()) << t.error().toStdString();  // without the token: every one 401
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (t.counters().sent.load() < 50) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "no traffic was sent";
    QApplication::processEvents();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  t.stop();
  EXPECT_EQ(t.counters().ok.load(), 0u);
  t.set_token("remote-secret");
  run_until_ok(t, 200);
  EXPECT_GE(server_->requests(), 250u);
}

TEST_F(TrafficPanelTest, ABadUrlOrPatternIsRefusedWithAReason) {
  TrafficPanel t(hooks(), 2000);
  t.set_target(TrafficPanel::kUrl, "ftp://nowhere");
  const Status s = t.start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("URL"), std::string::npos) << s.message();
  EXPECT_FALSE(t.running());
}

TEST_F(TrafficPanelTest, ARefusalIsShownInThePanel) {
  TrafficPanel t(hooks(), 2000);
  t.set_target(TrafficPanel::kUrl, "ftp://nowhere");
  EXPECT_FALSE(t.start().ok());
  EXPECT_TRUE(t.error().contains("URL")) << t.error().toStdString();
}

TEST(TrafficPanel, WithoutAModelEveryTargetIsRefused) {
  // No engine and no model yet (the first load still under way, or failed).
  TrafficPanel t(
      TrafficHooks{.engine = [] { return static_cast<Engine*>(nullptr); },
                   .model = [] { return ModelMetadata{}; },
                   .listen = []() -> Expected<Url> { return invalid_argument("no engine"); }},
      100);
  for (TrafficPanel::Target target :
       {TrafficPanel::kInProcess, TrafficPanel::kSelfHttp, TrafficPanel::kUrl}) {
    t.set_target(target, "http://127.0.0.1:9/infer");
    const Status s = t.start();
    EXPECT_FALSE(s.ok()) << target;
    EXPECT_FALSE(t.running()) << target;
    EXPECT_FALSE(t.error().isEmpty()) << target;
  }
}

TEST_F(TrafficPanelTest, ThePatternAndTargetAreLockedWhileTrafficRuns) {
  TrafficPanel t(hooks(), 2000);
  QComboBox *pattern = nullptr, *target = nullptr;
  for (QComboBox* c : t.findChildren<QComboBox*>())
    (c->findText("poisson") >= 0 ? pattern : target) = c;
  ASSERT_TRUE(pattern && target);
  ASSERT_TRUE(target->isEnabled());
  ASSERT_TRUE(t.start().ok());
  EXPECT_FALSE(target->isEnabled());  // what target() reports is what runs
  EXPECT_FALSE(pattern->isEnabled());
  t.stop();
  EXPECT_TRUE(target->isEnabled());
  EXPECT_TRUE(pattern->isEnabled());
}

TEST_F(TrafficPanelTest, ClosedLoopKeepsRequestsInFlight) {
  TrafficPanel t(hooks(), 2000);
  t.set_pattern("closed");
  t.set_concurrency(8);
  run_until_ok(t, 300);
  EXPECT_NE(t.pattern_text().find("closed"), std::string::npos) << t.pattern_text();
}

}  // namespace
}  // namespace batchscope

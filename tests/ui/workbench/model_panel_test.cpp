// SPDX-License-Identifier: GPL-3.0-or-later
// The model panel, offscreen, with real widgets: the list of models found in
// a folder (checked by QAbstractItemModelTester), the request the Load button
// hands over, progress from any thread, errors, and a profile shown as a plot
// and a speedup sentence.

#include "ui/workbench/model_panel.h"

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QProgressBar>
#include <QPushButton>
#include <QSet>
#include <QTemporaryDir>
#include <thread>

namespace batchscope {
namespace {

const QString kModels = QString(BATCHSCOPE_SOURCE_DIR) + "/models";

// Collects Qt warnings (the model tester reports through them) while alive.
class QtWarnings {
 public:
  QtWarnings() { previous_ = qInstallMessageHandler(&QtWarnings::handle); }
  ~QtWarnings() {
    qInstallMessageHandler(previous_);
    messages().clear();
  }
  static QStringList& messages() {
    static QStringList m;
    return m;
  }

 private:
  static void handle(QtMsgType type, const QMessageLogContext&, const QString& text) {
    if (type != QtDebugMsg && type != QtInfoMsg) messages() << text;
  }
  QtMessageHandler previous_ = nullptr;
};

void touch(const QString& path, const QByteArray& text = "x") {
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly)) << path.toStdString();
  f.write(text);
}

QStringList names(const QAbstractItemModel& m) {
  QStringList out;
  for (int i = 0; i < m.rowCount(); ++i) out << m.index(i, 0).data().toString();
  return out;
}

// t(b) = 480 + 20·b µs exactly, for b = 1 .. 64.
LoadedModel linear_cost_model(const QString& path) {
  LoadedModel m;
  m.metadata.name = "mlp";
  m.metadata.max_batch_size = 128;
  m.metadata.inputs = {TensorSpec{"features", DType::kFloat32, {-1, 512}, true}};
  m.metadata.outputs = {TensorSpec{"logits", DType::kFloat32, {-1, 16}, false}};
  m.path = path.toStdString();
  m.device = "cpu";
  m.blas = "OpenBLAS (pthread), libopenblas.so.0";
  m.threads = "intra-op 1 · inter-op 1 · BLAS 1 per lane · 1 lane";
  for (uint32_t b = 1; b <= 64; b *= 2) m.profile.push_back({b, 480.0 + 20.0 * b, 0});
  m.a_us = 480;
  m.c_us = 20;
  m.asymptotic_speedup = 1 + 480.0 / 20.0;
  return m;
}

TEST(ModelListModel, FindsTheShippedModelsAndPassesTheModelTester) {
  QtWarnings warnings;
  ModelListModel list(kModels);
  QAbstractItemModelTester tester(&list, QAbstractItemModelTester::FailureReportingMode::Warning);
  // The TorchScript files, then the Python models of models/python.
  EXPECT_EQ(names(list),
            (QStringList{"cnn_mnist", "linear_128x64", "mlp", "text_classifier", "tiny_lm",
                         "digits.py", "iris_sklearn.py", "mlp.py", "sentiment.py"}));
  const int mlp = list.row_of(kModels + "/mlp.pt");
  ASSERT_EQ(mlp, 2);
  EXPECT_TRUE(list.path(mlp).endsWith("/models/mlp.pt"));
  const QString tip = list.index(mlp).data(Qt::ToolTipRole).toString();
  EXPECT_TRUE(tip.contains("mlp.pt")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("multilayer perceptron")) << tip.toStdString();
  const QString lm_tip =
      list.index(list.row_of(kModels + "/tiny_lm.pt")).data(Qt::ToolTipRole).toString();
  EXPECT_TRUE(lm_tip.contains("transformer")) << lm_tip.toStdString();
  const QString py_tip =
      list.index(list.row_of(kModels + "/python/mlp.py")).data(Qt::ToolTipRole).toString();
  EXPECT_TRUE(py_tip.contains("eager PyTorch")) << py_tip.toStdString();
  list.refresh();
  EXPECT_EQ(list.rowCount(), 9);
  EXPECT_TRUE(QtWarnings::messages().isEmpty()) << QtWarnings::messages().join("\n").toStdString();
}

TEST(ModelListModel, RefreshFollowsFilesAddedAndRemoved) {
  QtWarnings warnings;
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  ModelListModel list(dir.path());
  QAbstractItemModelTester tester(&list, QAbstractItemModelTester::FailureReportingMode::Warning);
  EXPECT_EQ(list.rowCount(), 0);

  touch(dir.filePath("b.pt"));
  touch(dir.filePath("b.json"), R"({"description": "model b"})");
  touch(dir.filePath("a.pt"));  // no sidecar yet: not a model
  list.refresh();
  EXPECT_EQ(names(list), QStringList{"b"});
  EXPECT_EQ(list.index(0).data(ModelListModel::kDescriptionRole).toString(), "model b");

  touch(dir.filePath("a.json"), "{ not json");
  list.refresh();
  EXPECT_EQ(names(list), (QStringList{"a", "b"}));
  EXPECT_TRUE(list.index(0).data(Qt::ToolTipRole).toString().contains("does not parse"));

  ASSERT_TRUE(QFile::remove(dir.filePath("b.pt")));
  list.refresh();
  EXPECT_EQ(names(list), QStringList{"a"});
  EXPECT_EQ(list.row_of(dir.filePath("b.pt")), -1);
  EXPECT_TRUE(QtWarnings::messages().isEmpty()) << QtWarnings::messages().join("\n").toStdString();
}

TEST(ModelPanel, OffersTheFoundModelsTheSyntheticOneAndOnlyTheGivenDevices) {
  ModelPanel cpu_only(kModels, {"cpu"});
  EXPECT_EQ(cpu_only.device_combo()->count(), 1);
  ModelPanel panel(kModels, {"cpu", "cuda:0"});
  QComboBox* devices = panel.device_combo();
  ASSERT_EQ(devices->count(), 2);
  EXPECT_EQ(devices->itemText(1), "cuda:0");
  QComboBox* models = panel.model_combo();
  EXPECT_EQ(models->itemText(0), "cnn_mnist");
  EXPECT_GE(models->findText("mlp"), 0);
  EXPECT_TRUE(models->itemText(models->count() - 1).startsWith("Synthetic"));
  EXPECT_GE(models->findText("tiny_lm"), 0);
  EXPECT_GE(models->findText("mlp.py"), 0);  // models/python/mlp.py, a Python model
  EXPECT_EQ(panel.models()->rowCount(), 9);
}

TEST(ModelPanel, LoadHandsOverTheChosenPathAndDevice) {
  ModelPanel panel(kModels, {"cpu", "cuda:0"});
  std::vector<ModelRequest> asked;
  panel.set_on_load([&asked](ModelRequest r) { asked.push_back(std::move(r)); });
  panel.model_combo()->setCurrentIndex(panel.model_combo()->findText("linear_128x64"));
  panel.device_combo()->setCurrentIndex(1);
  panel.load_button()->click();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(QString::fromStdString(asked[0].path),
            QFileInfo(kModels + "/linear_128x64.pt").absoluteFilePath());
  EXPECT_EQ(asked[0].device, "cuda:0");
  // The panel is busy until the window says otherwise.
  EXPECT_FALSE(panel.load_button()->isEnabled());
  EXPECT_TRUE(panel.progress_bar()->isVisibleTo(&panel));
  panel.set_loading(false);
  EXPECT_TRUE(panel.load_button()->isEnabled());
  EXPECT_FALSE(panel.progress_bar()->isVisibleTo(&panel));

  // The synthetic model runs on the CPU whatever the device box says.
  panel.model_combo()->setCurrentIndex(panel.model_combo()->count() - 1);
  EXPECT_FALSE(panel.device_combo()->isEnabled());
  panel.load_button()->click();
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[1].path, "synthetic:500,20");
  EXPECT_EQ(asked[1].device, "cpu");
}

TEST(ModelPanel, ProgressShowsInTheBarFromAnyThread) {
  ModelPanel panel(kModels, {"cpu"});
  panel.set_loading(true);
  panel.set_progress(42, "Warming up: batch 16 of 128");
  EXPECT_EQ(panel.progress_bar()->value(), 42);
  EXPECT_EQ(panel.status_text(), "Warming up: batch 16 of 128");

  LoadProgress progress = panel.progress_callback();
  std::thread worker([&progress] { progress(77, "Measuring t(b)"); });
  worker.join();
  QCoreApplication::sendPostedEvents();
  QCoreApplication::processEvents();
  EXPECT_EQ(panel.progress_bar()->value(), 77);
  EXPECT_EQ(panel.status_text(), "Measuring t(b)");
}

TEST(ModelPanel, AProgressCallbackOutlivingThePanelDoesNothing) {
  LoadProgress progress;
  {
    ModelPanel panel(kModels, {"cpu"});
    progress = panel.progress_callback();
  }
  progress(50, "late");  // queued for a panel that is gone
  QCoreApplication::sendPostedEvents();
  QCoreApplication::processEvents();
  SUCCEED();
}

TEST(ModelPanel, ShowErrorShowsTheMessage) {
  ModelPanel panel(kModels, {"cpu"});
  panel.show_error("device 'cuda:3' is not available; this LibTorch offers cpu");
  EXPECT_EQ(panel.error_text(), "device 'cuda:3' is not available; this LibTorch offers cpu");
  EXPECT_EQ(panel.status_text(), panel.error_text());
  panel.show_model(linear_cost_model(kModels + "/mlp.pt"));
  EXPECT_TRUE(panel.error_text().isEmpty());
}

TEST(ModelPanel, ShowModelPlotsTheProfileAndSaysWhatBatchingBuys) {
  ModelPanel panel(kModels, {"cpu"});
  panel.show_model(linear_cost_model(kModels + "/mlp.pt"));
  EXPECT_EQ(panel.model_combo()->currentText(), "mlp");
  // 1 + 480/20 = 25; at b = 32 the item costs 1120/32 = 35 µs against 500.
  EXPECT_EQ(panel.speedup_text(),
            "Batching can make each item up to 25.0× cheaper; at b = 32 it is 14.3×.");
  // A convex profile, whose straight-line fit has a small asymptote (1.1×),
  // still says at least what was measured: 4 µs a item at 64 against 40.
  LoadedModel convex = linear_cost_model(kModels + "/mlp.pt");
  convex.profile = {{1, 40, 0}, {8, 64, 0}, {32, 160, 0}, {64, 256, 0}};
  convex.asymptotic_speedup = 1.1;
  ModelPanel other(kModels, {"cpu"});
  other.show_model(convex);
  EXPECT_EQ(other.speedup_text(),
            "Batching can make each item up to 10.0× cheaper; at b = 32 it is 8.0×.");
  EXPECT_EQ(panel.blas_text(), "OpenBLAS (pthread), libopenblas.so.0");
  EXPECT_TRUE(panel.threads_text().startsWith("intra-op 1"));
  EXPECT_TRUE(panel.status_text().contains("mlp loaded on cpu"));

  QCustomPlot* plot = panel.profile_plot();
  int measured = 0, fitted = 0, speedups = 0;
  for (int i = 0; i < plot->graphCount(); ++i) {
    QCPGraph* g = plot->graph(i);
    if (g->valueAxis() == plot->yAxis2) {
      speedups = g->dataCount();
      EXPECT_NEAR((g->data()->constEnd() - 1)->value, 500.0 / (1760.0 / 64), 1e-9);
    } else if (g->lineStyle() == QCPGraph::lsNone) {
      measured = g->dataCount();
      EXPECT_DOUBLE_EQ(g->data()->constBegin()->value, 500.0);  // µs below 2 ms
    } else {
      fitted = g->dataCount();
    }
  }
  EXPECT_EQ(measured, 7);
  EXPECT_EQ(speedups, 7);
  EXPECT_GT(fitted, 7);
}

// The t(b) selector: the profile, then each lane count the kept cost was
// calibrated with; each plots its own curve and says what it is.
TEST(ModelPanel, TheCurveSelectorShowsTheProfileOrTheKeptCostPerLaneCount) {
  ModelPanel panel(kModels, {"cpu"});
  LoadedModel m = linear_cost_model(kModels + "/mlp.pt");
  panel.show_model(m);
  ASSERT_EQ(panel.curve_combo()->count(), 1);  // no kept cost: the profile alone
  EXPECT_TRUE(panel.curve_note().contains("No kept cost on this machine yet"))
      << panel.curve_note().toStdString();
  EXPECT_EQ(panel.shown_points().size(), m.profile.size());
  m.kept_note = "/c/mlp.json was made on another machine (machine.host \"b\", here \"a\")";
  panel.show_model(m);
  EXPECT_TRUE(panel.curve_note().contains("The kept cost was refused (/c/mlp.json was made on"))
      << panel.curve_note().toStdString();

  // Kept: one lane measured live at 1, 2 and 3; two lanes at 1 and 2.
  auto one = CostModel::from_points({{1, 700, 0, {}, true, 300, "2026-11-29T10:00:00.000Z"},
                                     {2, 900, 0, {}, true, 200, "2026-11-29T10:05:00.000Z"},
                                     {3, 1000, 0, {}, true, 100, "2026-11-29T10:01:00.000Z"}});
  ASSERT_TRUE(one.ok());
  auto kept = one->with_lanes(
      {LaneCostPoints{2, {{1, 1400, 0, {}, true, 50}, {2, 1600, 0, {}, true, 40}}}});
  ASSERT_TRUE(kept.ok());
  m.kept = *kept;
  m.kept_note.clear();
  panel.show_model(m);
  QComboBox* curve = panel.curve_combo();
  ASSERT_EQ(curve->count(), 3);
  EXPECT_EQ(curve->itemText(1), "1 lane under load (kept)");
  EXPECT_EQ(curve->itemText(2), "2 lanes under load (kept)");
  // A kept curve is shown first: it is what predictions use.
  EXPECT_EQ(curve->currentIndex(), 1);
  ASSERT_EQ(panel.shown_points().size(), 3u);
  EXPECT_DOUBLE_EQ(panel.shown_points()[1].median_us, 900);
  EXPECT_TRUE(
      panel.curve_note().contains("As 1 lane(s) ran it under load: 600 live batches, "
                                  "last measured 2026-11-29T10:05:00 UTC"))
      << panel.curve_note().toStdString();
  curve->setCurrentIndex(2);
  ASSERT_EQ(panel.shown_points().size(), 2u);
  EXPECT_DOUBLE_EQ(panel.shown_points()[0].median_us, 1400);
  EXPECT_TRUE(panel.curve_note().contains("As 2 lane(s) ran it under load: 90 live batches"))
      << panel.curve_note().toStdString();
  curve->setCurrentIndex(0);
  EXPECT_EQ(panel.shown_points().size(), m.profile.size());
  EXPECT_TRUE(panel.curve_note().contains("The profile"));
}

TEST(ModelPanel, AModelWithoutAFixedCostIsSaidToGainLittle) {
  ModelPanel panel(kModels, {"cpu"});
  LoadedModel m = linear_cost_model(kModels + "/mlp.pt");
  for (CostPoint& p : m.profile) p.median_us = 20.0 * p.batch;
  m.a_us = 0;
  m.asymptotic_speedup = 0;
  panel.show_model(m);
  EXPECT_TRUE(panel.speedup_text().startsWith("Batching buys little here"))
      << panel.speedup_text().toStdString();
  EXPECT_TRUE(panel.speedup_text().contains("at b = 32 it is 1.0×"));
}

TEST(ModelPanel, AnUnsettledProfileClaimsNoSpeedupAndSaysWhy) {
  ModelPanel panel(kModels, {"cpu"});
  LoadedModel m = linear_cost_model(kModels + "/mlp.pt");
  // As a profile beside a build measures: scheduler slices, no fixed cost.
  for (CostPoint& p : m.profile) p.settled = p.batch < 16;
  m.unsettled = "b = 16, 32, 64: the measuring thread had a core for only 13% of its wall time";
  m.a_us = -40;
  m.asymptotic_speedup = 0;
  panel.show_model(m);
  const QString said = panel.speedup_text();
  EXPECT_TRUE(
      said.startsWith("t(b) did not settle at b = 16, 32, 64: the measuring thread had "
                      "a core for only 13%"))
      << said.toStdString();
  EXPECT_FALSE(said.contains("buys little")) << said.toStdString();
  // A later quiet profile takes the warning away.
  panel.show_model(linear_cost_model(kModels + "/mlp.pt"));
  EXPECT_TRUE(panel.speedup_text().startsWith("Batching can make each item up to"));
}

TEST(ModelPanel, AModelFromElsewhereOrTheSyntheticOneIsSelected) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  ModelPanel panel(kModels, {"cpu"});
  const int before = panel.model_combo()->count();
  panel.show_model(linear_cost_model(dir.filePath("elsewhere.pt")));
  EXPECT_EQ(panel.model_combo()->count(), before + 1);
  EXPECT_EQ(panel.model_combo()->currentText(), "elsewhere (opened)");
  EXPECT_EQ(panel.model_combo()->currentData().toString(), dir.filePath("elsewhere.pt"));

  panel.show_model(linear_cost_model("synthetic:100,5"));
  EXPECT_EQ(panel.model_combo()->currentText(), "Synthetic 100+5·b µs");
  std::vector<ModelRequest> asked;
  panel.set_on_load([&asked](ModelRequest r) { asked.push_back(std::move(r)); });
  panel.load_button()->click();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].path, "synthetic:100,5");
}

TEST(ModelPanel, ARescanKeepsTheChoiceOrFallsBackWhenItIsGone) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  for (const char* name : {"a", "b"}) {
    touch(dir.filePath(QString(name) + ".pt"));
    touch(dir.filePath(QString(name) + ".json"), "{}");
  }
  ModelPanel panel(dir.path(), {"cpu"});
  QComboBox* models = panel.model_combo();
  models->setCurrentIndex(models->findText("b"));
  touch(dir.filePath("c.pt"));
  touch(dir.filePath("c.json"), "{}");
  static_cast<ModelListModel*>(panel.models())->refresh();
  EXPECT_EQ(models->findText("c"), 2);
  EXPECT_EQ(models->currentText(), "b");
  ASSERT_TRUE(QFile::remove(dir.filePath("b.pt")));
  static_cast<ModelListModel*>(panel.models())->refresh();
  EXPECT_EQ(models->findText("b"), -1);
  EXPECT_EQ(models->currentText(), "a");
}

TEST(ModelPanel, RendersReadablyAtSidePanelSize) {
  ModelPanel panel(kModels, {"cpu"});
  panel.show_model(linear_cost_model(kModels + "/mlp.pt"));
  panel.resize(320, panel.heightForWidth(320));
  panel.show();
  const QImage img = panel.grab().toImage();
  EXPECT_GE(panel.profile_plot()->height(), 150);
  QSet<QRgb> colours;
  for (int y = 0; y < img.height(); y += 2)
    for (int x = 0; x < img.width(); x += 2) colours.insert(img.pixel(x, y));
  EXPECT_GT(colours.size(), 30);
  img.save(QDir::temp().filePath("batchscope_model_panel_test.png"));
}

}  // namespace
}  // namespace batchscope

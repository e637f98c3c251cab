// SPDX-License-Identifier: GPL-3.0-or-later
// What resources/batchscope.qrc compiles in: the application icon at every
// rendered size, and the presets File > Presets offers, each loading into a
// window's engine (a batch above the model's limit cut to it, with a note,
// where a configuration file's would be refused).

#include "ui/common/app_resources.h"

#include <gtest/gtest.h>

#include <QAction>
#include <QFile>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>
#include <QTemporaryDir>

#include "api/options_json.h"
#include "tests/ui/workbench/toy_window.h"
#include "ui/common/config_io.h"

namespace batchscope {
namespace {

TEST(AppResources, TheIconHasEverySizeRenderedFromTheSvg) {
  const QIcon icon = app_icon();
  ASSERT_FALSE(icon.isNull());
  const QList<QSize> sizes = icon.availableSizes();
  for (int px : {16, 32, 48, 64, 128, 256}) EXPECT_TRUE(sizes.contains(QSize(px, px))) << px;
  // Drawn, not blank: the corner is transparent and the centre is not.
  const QImage image = icon.pixmap(64, 64).toImage();
  EXPECT_EQ(qAlpha(image.pixel(0, 0)), 0);
  EXPECT_EQ(qAlpha(image.pixel(32, 32)), 255);
}

TEST(AppResources, EveryPresetIsBatchscopeJson) {
  ASSERT_EQ(presets().size(), 4u);
  for (const Preset& p : presets()) {
    QFile f(p.path);
    ASSERT_TRUE(f.open(QIODevice::ReadOnly)) << p.path.toStdString();
    auto imported = import_config(f.readAll().toStdString(), Options{});
    ASSERT_TRUE(imported.ok()) << p.path.toStdString() << ": " << imported.error().message;
    EXPECT_FALSE(p.title.isEmpty());
    EXPECT_FALSE(p.tip.isEmpty());
  }
}

class PresetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WorkbenchConfig cfg = toy_config();
    cfg.loaded = toy_loaded("toy", 64);
    window_ = std::make_unique<WorkbenchWindow>(cfg);
    ASSERT_NE(window_->engine(), nullptr);
  }
  const Preset& preset(const QString& title) {
    for (const Preset& p : presets())
      if (p.title == title) return p;
    ADD_FAILURE() << "no preset " << title.toStdString();
    return presets().front();
  }
  Options in_force() { return window_->engine()->status().options; }
  std::unique_ptr<WorkbenchWindow> window_;
};

TEST_F(PresetTest, ThePresetsMenuOffersEachAndLoadsIt) {
  QMenu* presets_menu = nullptr;
  for (QAction* top : window_->menuBar()->actions()) {
    if (!top->menu()) continue;
    for (QAction* a : top->menu()->actions())
      if (a->menu() && a->text() == "&Presets") presets_menu = a->menu();
  }
  ASSERT_NE(presets_menu, nullptr);
  ASSERT_EQ(presets_menu->actions().size(), 4);
  QAction* latency = presets_menu->actions().front();
  EXPECT_EQ(latency->text(), "Lowest latency");
  latency->trigger();
  EXPECT_EQ(in_force().max_batch_size, 8u);
  EXPECT_EQ(in_force().max_wait_us, 0);
  EXPECT_EQ(in_force().strategy, StrategyKind::kFifo);
}

TEST_F(PresetTest, APresetAboveTheModelsLimitIsCutToItAndSaysSo) {
  ASSERT_TRUE(window_->load_preset(preset("Adaptive, p99 20 ms")).ok());
  EXPECT_EQ(in_force().strategy, StrategyKind::kAdaptive);
  EXPECT_EQ(in_force().max_batch_size, 64u);
  EXPECT_DOUBLE_EQ(in_force().target_p99_ms, 20);

  const Status s = window_->load_preset(preset("Highest throughput"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(in_force().max_batch_size, 64u);  // 128 asked, the toy's limit 64
  EXPECT_EQ(in_force().max_wait_us, 10000);
  EXPECT_TRUE(window_->statusBar()->currentMessage().contains("cut to the model's limit of 64"))
      << window_->statusBar()->currentMessage().toStdString();

  // The same options from a file are refused, naming the limit.
  QTemporaryDir dir;
  ASSERT_TRUE(QFile::copy(preset("Highest throughput").path, dir.filePath("t.json")));
  const Status refused = window_->load_config(dir.filePath("t.json"));
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("above the model's limit of 64"), std::string::npos)
      << refused.message();
}

}  // namespace
}  // namespace batchscope

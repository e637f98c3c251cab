// SPDX-License-Identifier: GPL-3.0-or-later
// Help ▸ About Batchscope: the window's menu offers it, and the box it opens
// names the version the application was started with (escaped) and the licence.

#include "ui/common/about_box.h"

#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QTimer>

#include "tests/ui/workbench/toy_window.h"

namespace batchscope {
namespace {

class AboutBox : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = QCoreApplication::applicationVersion(); }
  void TearDown() override { QCoreApplication::setApplicationVersion(saved_); }
  QString saved_;
};

TEST_F(AboutBox, NamesTheVersionAndTheLicence) {
  QCoreApplication::setApplicationVersion("9.8.7 (git <0123abcd>)");
  const QString text = about_text();
  EXPECT_TRUE(text.contains("Batchscope 9.8.7 (git &lt;0123abcd&gt;)")) << text.toStdString();
  EXPECT_TRUE(text.contains("GPL-3.0-or-later")) << text.toStdString();
  EXPECT_TRUE(text.contains("NO WARRANTY")) << text.toStdString();
}

TEST_F(AboutBox, TheWindowsHelpMenuOpensIt) {
  QCoreApplication::setApplicationVersion("9.8.7");
  WorkbenchConfig cfg = toy_config();
  cfg.loaded = toy_loaded("toy", 8);
  WorkbenchWindow window(cfg);
  QAction* about = nullptr;
  for (QAction* top : window.menuBar()->actions())
    if (top->menu() && top->text() == "&Help")
      for (QAction* a : top->menu()->actions())
        if (a->text() == "&About Batchscope") about = a;
  ASSERT_NE(about, nullptr) << "no Help > About Batchscope";

  // The box is modal: read it and close it from the event loop it runs.
  QString shown;
  QTimer::singleShot(0, [&shown] {
    if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
      shown = box->text();
      box->accept();
    }
  });
  about->trigger();
  EXPECT_TRUE(shown.contains("Batchscope 9.8.7")) << shown.toStdString();
  EXPECT_TRUE(shown.contains("GPL-3.0-or-later")) << shown.toStdString();
}

}  // namespace
}  // namespace batchscope

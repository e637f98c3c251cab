// SPDX-License-Identifier: GPL-3.0-or-later
// GoogleTest main for the UI suites: widgets (QCustomPlot included) need a
// QApplication. ctest sets QT_QPA_PLATFORM=offscreen; a bare run of the binary
// gets the same default so it needs no display either. Settings go to a test
// location (QStandardPaths' test mode), never the user's own.
#include <gtest/gtest.h>

#include <QApplication>
#include <QStandardPaths>

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QStandardPaths::setTestModeEnabled(true);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("BatchscopeTests");
  QApplication::setApplicationName("ui_tests");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

// GoogleTest main for the UI suites: widgets (QCustomPlot included) need a
// QApplication. ctest sets QT_QPA_PLATFORM=offscreen; a bare run of the binary
// gets the same default so it needs no display either.
#include <gtest/gtest.h>

#include <QApplication>

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

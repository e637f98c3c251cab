// SPDX-License-Identifier: GPL-3.0-or-later
// GoogleTest main for the network suites: a QCoreApplication must exist for
// Qt's networking, although the listener runs its own I/O thread.
#include <gtest/gtest.h>

#include <QCoreApplication>

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

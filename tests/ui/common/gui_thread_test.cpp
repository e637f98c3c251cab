// SPDX-License-Identifier: GPL-3.0-or-later
// The GUI-thread check: true on the application's thread, false on another,
// and assert_gui_thread stops the program there with the place named.

#include "ui/common/gui_thread.h"

#include <gtest/gtest.h>

#include <thread>

namespace batchscope {
namespace {

TEST(GuiThread, IsTheApplicationsThreadAndNoOther) {
  EXPECT_TRUE(on_gui_thread());
  bool elsewhere = true;
  std::thread([&] { elsewhere = on_gui_thread(); }).join();
  EXPECT_FALSE(elsewhere);
  assert_gui_thread("the test's own thread");  // returns
}

TEST(GuiThreadDeathTest, WorkLandingOnAnotherThreadStopsTheProgramNamingWhere) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(std::thread([] { assert_gui_thread("ModelPanel::set_progress"); }).join(),
               "ModelPanel::set_progress ran off the GUI thread");
}

}  // namespace
}  // namespace batchscope

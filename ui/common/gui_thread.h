// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The window's widgets belong to the GUI thread, and the work other threads
// post to it (a loaded model, progress, a search's or an export's result,
// the history's answers) must land there. assert_gui_thread(where), called
// where such work lands, stops the program with a message naming `where`
// when it runs on any other thread: that is a bug in the posting, never
// something a user's input can cause. It costs one comparison and stays on
// in release builds, where the tests run.
//
// Thread-safety: both functions may be called from any thread.

namespace batchscope {

// Whether the caller runs on the thread of the QCoreApplication (false when
// there is none).
bool on_gui_thread();

// qFatal naming `where` unless on_gui_thread().
void assert_gui_thread(const char* where);

}  // namespace batchscope

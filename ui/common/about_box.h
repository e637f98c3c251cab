// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Help ▸ About Batchscope: the version the application was started with
// (QCoreApplication::applicationVersion, set by `batchscope gui` from
// common/build_info.h), the licence and where its text lies. The GPL asks an
// interactive program to show these.
// Thread-safety: GUI thread only.

#include <QString>

class QMainWindow;

namespace batchscope {

// The About box's text (rich text).
QString about_text();

// Adds a Help menu with "About Batchscope" and "About Qt" to the window's menu bar.
void add_help_menu(QMainWindow* window);

}  // namespace batchscope

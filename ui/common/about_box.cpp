// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/about_box.h"

#include <QApplication>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>

namespace batchscope {

QString about_text() {
  QString version = QCoreApplication::applicationVersion();
  if (version.isEmpty()) version = "(version unknown)";
  return QString(
             "<p><b>Batchscope %1</b></p>"
             "<p>A workbench for dynamic batching of model inference.</p>"
             "<p>Licence: GPL-3.0-or-later. Batchscope is free software: you may "
             "redistribute it and/or modify it under the terms of the GNU General Public "
             "License as published by the Free Software Foundation, either version 3 of "
             "the License, or (at your option) any later version. It comes with "
             "ABSOLUTELY NO WARRANTY.</p>"
             "<p>The licence text: <a href=\"https://www.gnu.org/licenses/gpl-3.0.html\">"
             "gnu.org/licenses/gpl-3.0.html</a>; installed, "
             "/usr/share/doc/batchscope/copyright says what each part is under.</p>")
      .arg(version.toHtmlEscaped());
}

void add_help_menu(QMainWindow* window) {
  QMenu* help = window->menuBar()->addMenu("&Help");
  help->addAction("&About Batchscope", window,
                  [window] { QMessageBox::about(window, "About Batchscope", about_text()); });
  help->addAction("About &Qt", window, [window] { QMessageBox::aboutQt(window); });
}

}  // namespace batchscope

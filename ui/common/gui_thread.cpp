// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/gui_thread.h"

#include <QCoreApplication>
#include <QThread>
#include <QtGlobal>

namespace batchscope {

bool on_gui_thread() {
  const QCoreApplication* app = QCoreApplication::instance();
  return app != nullptr && QThread::currentThread() == app->thread();
}

void assert_gui_thread(const char* where) {
  if (!on_gui_thread()) qFatal("%s ran off the GUI thread", where);
}

}  // namespace batchscope

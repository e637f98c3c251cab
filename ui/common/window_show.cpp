// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/window_show.h"

#include <QApplication>
#include <QGuiApplication>
#include <QScreen>
#include <QTimer>
#include <iostream>

namespace batchscope {

void fit_to_screen(QWidget& window, QSize size) {
  const QString platform = QGuiApplication::platformName();
  if (platform != "offscreen" && platform != "minimal")  // these report a small screen
    size = size.boundedTo(QGuiApplication::primaryScreen()->availableGeometry().size());
  window.resize(size);
  window.move(0, 0);
}

void screenshot_when_ready(QWidget& window, const std::string& path, int after_ms,
                           std::function<bool()> ready, std::function<void()> refresh, int& rc) {
  QTimer::singleShot(0, &window, [&window, path, after_ms, ready, refresh, &rc] {
    if (ready && !ready()) {
      std::cerr << "batchscope gui: the model did not load\n";
      rc = 1;
      QApplication::quit();
      return;
    }
    QTimer::singleShot(after_ms, &window, [&window, path, refresh, &rc] {
      if (refresh) refresh();
      if (!window.grab().save(QString::fromStdString(path))) {
        std::cerr << "batchscope gui: cannot write " << path << "\n";
        rc = 1;
      }
      QApplication::quit();
    });
  });
}

}  // namespace batchscope

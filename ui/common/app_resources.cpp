// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/app_resources.h"

#include <QApplication>
#include <QDir>

#include "common/build_info.h"

// Q_INIT_RESOURCE must be called outside any namespace; it links the
// resources' static library in and registers them once.
static void init_resources() {
  static const bool done = [] {
    Q_INIT_RESOURCE(batchscope);
    return true;
  }();
  (void)done;
}

namespace batchscope {

QIcon app_icon() {
  init_resources();
  QIcon icon;
  const QDir dir(":/icons");
  for (const QString& name : dir.entryList({"batchscope-*.png"}, QDir::Files))
    icon.addFile(dir.filePath(name));
  return icon;
}

const std::vector<Preset>& presets() {
  init_resources();
  static const std::vector<Preset> list = {
      {"Lowest latency", ":/presets/latency.json",
       "fifo, batches of up to 8, no waiting: each batch goes as soon as a lane is free"},
      {"Balanced", ":/presets/balanced.json",
       "fifo, batches of up to 32, the oldest request waits at most 2 ms (the defaults)"},
      {"Highest throughput", ":/presets/throughput.json",
       "fifo, batches of up to 128, the oldest request waits at most 10 ms"},
      {"Adaptive, p99 20 ms", ":/presets/adaptive.json",
       "adaptive, batches of up to 64: the wait is steered to keep p99 under 20 ms"},
  };
  return list;
}

void name_application() {
  QApplication::setOrganizationName("Batchscope");
  QApplication::setApplicationName("batchscope");
  QApplication::setApplicationVersion(QString::fromStdString(build_label()));
  QApplication::setWindowIcon(app_icon());
  QGuiApplication::setDesktopFileName("org.batchscope.batchscope");
}

}  // namespace batchscope

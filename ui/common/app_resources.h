// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What resources/batchscope.qrc compiles in, and the application's names: the application icon
// (every PNG size rendered from the SVG) and the configurations File > Presets offers.
// Thread-safety: GUI thread only.

#include <QIcon>
#include <QString>
#include <vector>

namespace batchscope {

QIcon app_icon();
// What the application calls itself (the QApplication made): QSettings'
// names, the version the About box shows, the window icon, and the desktop
// entry it belongs to.
void name_application();

struct Preset {
  QString title;  // the menu's text
  QString path;   // a ":/presets/NAME.json" resource, Batchscope JSON
  QString tip;    // what it is for
};
const std::vector<Preset>& presets();

}  // namespace batchscope

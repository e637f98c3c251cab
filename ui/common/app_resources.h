// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What resources/batchscope.qrc compiles in: the application icon (every PNG
// size rendered from the SVG) and the configurations File > Presets offers.
// Thread-safety: GUI thread only.

#include <QIcon>
#include <QString>
#include <vector>

namespace batchscope {

QIcon app_icon();

struct Preset {
  QString title;  // the menu's text
  QString path;   // a ":/presets/NAME.json" resource, Batchscope JSON
  QString tip;    // what it is for
};
const std::vector<Preset>& presets();

}  // namespace batchscope

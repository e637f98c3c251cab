// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/number_text.h"

#include <QLocale>
#include <cmath>

namespace batchscope {

QString number_text(double v, int decimals) {
  if (!std::isfinite(v)) return QStringLiteral("-");
  return QLocale(QLocale::English).toString(v, 'f', decimals);
}

QString ms_text(double ms) { return number_text(ms, ms < 1 ? 3 : ms < 100 ? 2 : 1); }

}  // namespace batchscope

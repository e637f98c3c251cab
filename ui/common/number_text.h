// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Figures as the window's tables and tips write them.
// Thread-safety: pure functions.

#include <QString>

namespace batchscope {

// English digit grouping, `decimals` places; "-" for NaN or infinity.
QString number_text(double v, int decimals);
// Milliseconds with as many decimals as their size deserves: 0.123, 12.34, 123.4.
QString ms_text(double ms);

}  // namespace batchscope

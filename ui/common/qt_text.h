// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A std::string (UTF-8, as the core keeps text) as a QString.

#include <QString>

#include <string>

namespace batchscope {

inline QString text_of(const std::string& s) { return QString::fromStdString(s); }

}  // namespace batchscope

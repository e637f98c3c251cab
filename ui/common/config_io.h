// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The window's "Export config for a server" dialog: a format, a preview of
// every file it writes, and saving them into a folder (write_export).
// Thread-safety: GUI thread only.

#include "export/export_config.h"

class QWidget;

namespace batchscope {

// Shows the export dialog for `input`; returns when it is closed.
void export_config_dialog(QWidget* parent, const ExportInput& input);

}  // namespace batchscope
